"""The quiz as data: what a lecture pack and a room hold, with no view, no model and no web.

Predict, then reveal. In quiz mode a round's drafts show with their p and q bars while what verification decided is
hidden. The class answers "how many of the drafts will the target accept?", then each Reveal uncovers one step:

    step 1 … E   the draft positions the target examined, one at a time (its draw and verdict);
                 E = the accepted ones plus the first rejected one, or all K after a clean sweep
    step E + 1   the round's last token (replacement or bonus), the positions never examined, and the result

So a round with K = 4 whose third draft is rejected has 3 + 1 = 4 steps; a tree round is revealed in one step and
its answer is a path's length, 0 to the tree's depth (`most_accepted`, the one bound a pack and a room both hold).

- the reveal arithmetic: `most_accepted`, `examined`, `reveal_steps`, `step_of_draft` (the stage, cards, strip,
  tree and charts of view/ read it, and so does a room);
- the quiz's state across a trace (`QuizState`: each round's answer and steps revealed, the score), checked against
  the trace, to and from JSON, and read from a lecture pack (`load_lecture`, with lecture_pack.py);
- a room's facts (`RoundFacts`, `QuizFacts`: per round the largest answer, the right one, the reveal steps, and
  E(α, K) − 1, filled in by lecture/room_trace.quiz_facts) and the class's mean answer (`mean_guess`);
- what a follower's page may hold of each round (`follower_forms`): nothing, the quiz form, or the round in full,
  the one rule a room (lecture/room_rules.py) keeps and a follower's stage (view/follower.py) draws.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

from specviz.record.lecture_pack import read_pack
from specviz.record.trace import Round, Trace
from specviz.settings.bounds import short_repr, whole_number


# --- predict, then reveal: a round's steps --------------------------------------------------------------------------

def most_accepted(rnd: Round) -> int:
    """The most drafts a round could have accepted, the largest answer its quiz offers: its K, or for a tree round
    the tree's depth (the longest path)."""
    return rnd.tree.deepest if rnd.tree else rnd.k


def examined(rnd: Round) -> int:
    """How many draft positions verification examined: up to and including the first rejection. A tree round
    (view/tree.py) is revealed in one step: its verdicts are read along the drawn tree, not position by position."""
    return 0 if rnd.tree else min(rnd.n_accepted + 1, rnd.k)


def reveal_steps(rnd: Round) -> int:
    """The number of Reveal presses a round takes: one per examined position, then one for the last token.

    >>> from specviz.record.trace import Round, TokenProb
    >>> reveal_steps(Round(0, 0, [], 0, TokenProb(1, "a", 1.0), "bonus", None, None, [1], 0.0, 0.0))
    1
    """
    return examined(rnd) + 1


def step_of_draft(rnd: Round, position: int) -> int:
    """The step that reveals draft `position` (0-based): its own step if examined, else the last step."""
    return position + 1 if position < examined(rnd) else reveal_steps(rnd)


# --- the quiz's state across a trace, and a lecture pack's ---------------------------------------------------

@dataclass
class RoundQuiz:
    """What the class did in one round: its answer (None: not answered) and how many steps are revealed."""

    guess: int | None = None
    revealed: int = 0


@dataclass
class QuizState:
    """The quiz across a trace: on or off, the round on screen (1-based), and each round touched so far."""

    on: bool = False
    current: int = 1
    rounds: dict[int, RoundQuiz] = field(default_factory=dict)  # round number (1-based) -> its state

    def of(self, number: int) -> RoundQuiz:
        return self.rounds.get(number, RoundQuiz())

    def score(self, trace: Trace) -> tuple[int, int]:
        """(right, answered): rounds fully revealed whose answer was the number accepted."""
        done = [(n, q) for n, q in self.rounds.items()
                if q.guess is not None and q.revealed >= reveal_steps(trace.rounds[n - 1])]
        return sum(q.guess == trace.rounds[n - 1].n_accepted for n, q in done), len(done)


def check_quiz(state: QuizState, trace: Trace) -> None:
    """Refuse a state that no lecture on this trace could reach; ValueError names the first problem."""
    n = len(trace.rounds)
    if not 1 <= state.current <= max(n, 1):
        raise ValueError(f"the quiz is at round {state.current}, but the trace has {n} rounds")
    for number, q in state.rounds.items():
        if not 1 <= number <= n:
            raise ValueError(f"the quiz has an answer for round {number}, but the trace has {n} rounds")
        rnd = trace.rounds[number - 1]
        most = most_accepted(rnd)
        if q.guess is not None and not 0 <= q.guess <= most:
            drafted = f"a tree {most} deep" if rnd.tree else f"{rnd.k} tokens"
            raise ValueError(f"round {number}: the answer {q.guess} is out of range: round {number} drafted "
                             f"{drafted}, so the target accepts 0 to {most} of them")
        if not 0 <= q.revealed <= reveal_steps(rnd):
            raise ValueError(f"round {number}: {q.revealed} steps revealed, past the last: round {number} has "
                             f"{reveal_steps(rnd)} (one per examined position, then its last token)")


def quiz_from_dict(data) -> QuizState:
    """A QuizState from JSON (the page's or a pack's); ValueError for anything malformed."""
    if not isinstance(data, dict):
        raise ValueError("malformed quiz state: expected a JSON object")
    try:
        rounds = {_quiz_number(k, "round"): RoundQuiz(
            None if v.get("guess") is None else _quiz_number(v["guess"], "answer"),
            _quiz_number(v.get("revealed", 0), "revealed")) for k, v in dict(data.get("rounds") or {}).items()}
        return QuizState(bool(data.get("on", False)), _quiz_number(data.get("current", 1), "current"), rounds)
    except (AttributeError, TypeError) as e:
        raise ValueError(f"malformed quiz state: {e}") from None


def _quiz_number(value, name: str) -> int:
    """A quiz state's whole number (a round number arrives as a string key: '3' -> 3), or ValueError naming it."""
    number = whole_number(value)
    if number is None:
        raise ValueError(f"malformed quiz state: {name} {short_repr(value)} is not a whole number")
    return number


def quiz_to_dict(state: QuizState) -> dict:
    return {"on": state.on, "current": state.current,
            "rounds": {str(n): asdict(q) for n, q in sorted(state.rounds.items())}}


def load_lecture(raw: bytes | str) -> tuple[Trace, QuizState | None]:
    """A trace file or a lecture pack -> (trace, the pack's quiz state, or None for a plain trace). ValueError
    says what is wrong: not JSON, a pack from a newer specviz, a quiz state that does not fit the trace."""
    trace, data = read_pack(raw)
    if data is None:
        return trace, None
    state = quiz_from_dict(data)
    check_quiz(state, trace)
    return trace, state


# --- a room's facts, and the class's answers counted ---------------------------------------------------------

@dataclass(frozen=True)
class RoundFacts:
    """One round, as a room needs it."""

    most: int  # the largest answer its quiz offers: K, or a tree's depth
    accepted: int  # how many drafts the target accepted (the right answer)
    steps: int  # reveal steps (reveal_steps): the round is revealed once the lecturer reaches the last
    tree: bool = False
    expected: float | None = None  # E(α, K) − 1 at the trace's printed α: the accepted drafts i.i.d. acceptance
    #                                predicts (algorithm/theory.py); None for a tree round (the formula is a chain's)


@dataclass(frozen=True)
class QuizFacts:
    """Every round of a trace, and α printed to two decimals: the expected answers are computed from the printed
    α, so a student who redoes E(α, K) − 1 gets the figure shown."""

    alpha: float
    rounds: tuple[RoundFacts, ...]


def mean_guess(counts: dict[int, int]) -> float | None:
    """The class's mean answer: Σ answer·count / Σ count. mean_guess({1: 2, 4: 1}) -> 2.0"""
    n = sum(counts.values())
    return sum(g * c for g, c in counts.items()) / n if n else None


# --- what a follower may hold of each round ---------------------------------------------------------------------

UNSEEN = -1  # a follower's form of a round not yet visible: a placeholder, nothing of the round


def follower_forms(steps: Sequence[int], reached: dict[int, int], released: set[int],
                   shown: set[int]) -> dict[int, int]:
    """Each round's form on a follower's page, round (1-based) -> UNSEEN; s with 0 ≤ s < its steps, the quiz form
    with its first s reveal steps shown; or its steps, the round in full. `steps`: each round's reveal steps;
    `reached`: the reveal steps the lecturer has shown of each round; `released`: the rounds shown on the room's
    screen with quiz mode off; `shown`: every round shown on the room's screen.

    A round is released (in full) once revealed to its last step or shown with quiz mode off. It is visible (in
    quiz form) once shown on the room's screen, or once every round before it is released: its text continues what
    the rounds before it committed, so it would tell their outcomes.

    >>> follower_forms([1, 3, 2, 2], {2: 1}, {1}, {1, 2})
    {1: 1, 2: 1, 3: -1, 4: -1}
    """
    forms, before_released = {}, True
    for number, last in enumerate(steps, 1):
        if number in released or reached.get(number, 0) >= last:
            forms[number] = last
        elif number in shown or before_released:
            forms[number] = reached.get(number, 0)
        else:
            forms[number] = UNSEEN
        before_released = before_released and forms[number] == last
    return forms

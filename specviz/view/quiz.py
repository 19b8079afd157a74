"""Predict, then reveal: the quiz's steps for a round, its state, and the lecture pack that carries both.

In quiz mode the page shows a round's drafts with their p and q bars but hides what verification decided. The
class answers "how many of the K drafts will the target accept?", then each Reveal uncovers one step:

    step 1 … E   the draft positions the target examined, one at a time (its draw and verdict);
                 E = the accepted ones plus the first rejected one, or all K after a clean sweep
    step E + 1   the round's last token (replacement or bonus), the positions never examined, and the result

So a round with K = 4 whose third draft is rejected has 3 + 1 = 4 steps. The page keeps the state in the browser
(assets/keys.js); a lecture pack is the trace plus that state as one JSON file, so a lecture runs from one file
on a machine with no model. Pure functions: no gradio, no models.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from specviz.settings.bounds import short_repr, whole_number
from specviz.record.trace import Round, Trace
from specviz.record.load import load_trace, read_json

PACK_FORMAT = "specviz-lecture-pack"
PACK_VERSION = 1


def most_accepted(rnd: Round) -> int:
    """The most drafts a round could have accepted, the largest answer its quiz offers: its K, or for a tree round
    the tree's depth (the longest path)."""
    return len(rnd.tree.widths) if rnd.tree else rnd.k


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
        if q.guess is not None and not 0 <= q.guess <= rnd.k:
            raise ValueError(f"round {number}: the answer {q.guess} is out of range: round {number} drafted "
                             f"{rnd.k} tokens, so the target accepts 0 to {rnd.k} of them")
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


# --- the lecture pack: one file, the trace and the quiz ------------------------------------------------------

def pack_json(trace: Trace, state: QuizState) -> str:
    trace_data = json.loads(trace.to_json())
    return json.dumps({"format": PACK_FORMAT, "format_version": PACK_VERSION, "trace": trace_data,
                       "quiz": quiz_to_dict(state)}, ensure_ascii=False, indent=1)


def load_lecture(raw: bytes | str) -> tuple[Trace, QuizState | None]:
    """A trace file or a lecture pack -> (trace, the pack's quiz state, or None for a plain trace). ValueError
    says what is wrong: not JSON, a pack from a newer specviz, a quiz state that does not fit the trace."""
    data = read_json(raw, "trace or lecture pack")
    if not isinstance(data, dict) or data.get("format") != PACK_FORMAT:
        return load_trace(data), None
    version = data.get("format_version")
    if version != PACK_VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > PACK_VERSION
        raise ValueError(f"lecture pack version {short_repr(version)} " + (
            f"comes from a newer specviz; this one reads version {PACK_VERSION}: update specviz, or open the "
            f"pack's trace alone" if newer else f"is not one this specviz reads (version {PACK_VERSION})"))
    trace = load_trace(data.get("trace"))
    state = quiz_from_dict(data.get("quiz"))
    check_quiz(state, trace)
    return trace, state

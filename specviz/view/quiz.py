"""The quiz's state: each round's answer and reveal steps, checked against the trace, and read from a lecture pack.

The page keeps the state in the browser (assets/quiz.js); a lecture pack (record/lecture_pack.py) carries it
beside the trace in one file. How a round is revealed, step by step, is view/reveal.py. Pure functions: no gradio,
no models.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from specviz.record.lecture_pack import read_pack
from specviz.record.trace import Trace
from specviz.settings.bounds import short_repr, whole_number
from specviz.view.reveal import reveal_steps


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


def load_lecture(raw: bytes | str) -> tuple[Trace, QuizState | None]:
    """A trace file or a lecture pack -> (trace, the pack's quiz state, or None for a plain trace). ValueError
    says what is wrong: not JSON, a pack from a newer specviz, a quiz state that does not fit the trace."""
    trace, data = read_pack(raw)
    if data is None:
        return trace, None
    state = quiz_from_dict(data)
    check_quiz(state, trace)
    return trace, state

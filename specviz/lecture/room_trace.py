"""What a room holds of its trace (lecture/rooms.py): each round's facts for the quiz (its largest answer, the right
one, its reveal steps, E(α, K) − 1) and its name for people (`trace_title`, what a lecturer's page on another trace
is told); which trace it is, `trace_id`, is lecture/showings.py's (what a lecturer's drive must name).

    facts = quiz_facts(trace); rooms.open(trace.to_json(), facts, trace_title(trace))
"""

from __future__ import annotations

from specviz.algorithm.theory import expected_tokens_per_pass
from specviz.lecture.examples import EXAMPLES, example_named
from specviz.record.quiz_data import QuizFacts, RoundFacts, most_accepted, reveal_steps
from specviz.record.trace import Trace


def quiz_facts(trace: Trace) -> QuizFacts:
    """What a room holds of a trace's rounds: each one's largest answer, right answer and reveal steps, and E(α, K) − 1
    from α as printed (two decimals), so a student who redoes it gets the figure shown."""
    alpha = round(trace.summary.acceptance_rate, 2)
    return QuizFacts(alpha, tuple(round_facts(alpha, most_accepted(r), r.n_accepted, reveal_steps(r), r.tree is not None)
                                  for r in trace.rounds))


def round_facts(alpha: float, most: int, accepted: int, steps: int, tree: bool = False) -> RoundFacts:
    """One round's facts, its E(α, K) − 1 worked out from α (None for a tree round: the formula is a chain's)."""
    return RoundFacts(most, accepted, steps, tree, None if tree else expected_tokens_per_pass(alpha, most) - 1)


def trace_title(trace: Trace) -> str:
    """A trace's name for people: a shipped example's title, else its prompt's start and its rounds."""
    name = example_named(trace)
    if name is not None:
        return f"the example “{EXAMPLES[name].title}”"
    prompt = " ".join(trace.prompt.split())
    return f"“{prompt[:40]}{'…' * (len(prompt) > 40)}” ({len(trace.rounds)} rounds)"

"""What a room keeps of each trace it showed (issue 55, item 7): per trace, its rounds' answers, the reveal steps the
lecturer showed, and which rounds the room's screen showed and released (a Room, lecture/room_state.py, keeps one dict
of them, trace_id -> Showing, and its store's lock guards them). So a room moved to another trace starts that trace's
answers afresh, one moved back resumes the earlier trace as the class left it, and the results list every trace kept
under its title. At most MAX_TRACES a room: past that the least recently shown is dropped, and the results say how many.
No clock, no web, no follower's identity leaves this module but in counts.

    traces = {}
    show(traces, "a1…", facts_a, "the example “Paris, sampled”", part=1)  # -> 0 dropped; the room on it
    show(traces, "b2…", facts_b, "“Write the opening…” (13 rounds)", part=2)  # a new trace: no answers
    show(traces, "a1…", facts_a, "the example “Paris, sampled”", part=3)  # back: Paris's answers as they were
    results_of(traces)                                          # [TraceResults(Paris…), TraceResults(Write…)]
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

from specviz.lecture.results import TraceResults
from specviz.record.quiz_data import QuizFacts

MAX_TRACES = 8  # traces a room keeps the class's results of: the one on screen and the 7 shown last before it


def trace_id(trace_json: str) -> str:
    """Which trace a room is on, as its drives name it and `traces` keys it: its JSON's sha256, 16 hex digits."""
    return hashlib.sha256(trace_json.encode()).hexdigest()[:16]


@dataclass
class Showing:
    """One trace a room has shown and what its class did with it."""

    facts: QuizFacts  # per round: the largest answer, the right one, the reveal steps
    title: str  # the trace's name for people (trace_title)
    first: int = 1  # the room's part when it first showed this trace: the results list traces in this order
    answers: dict[int, dict[str, int]] = field(default_factory=dict)  # round -> follower -> latest guess
    forgotten: dict[int, Counter] = field(default_factory=dict)  # round -> answers of followers no longer known
    reached: dict[int, int] = field(default_factory=dict)  # round -> the most reveal steps the lecturer showed
    shown: set[int] = field(default_factory=set)  # rounds the room's screen has shown
    released: set[int] = field(default_factory=set)  # rounds it showed with quiz mode off: sent in full

    def counts(self, number: int) -> Counter:
        """Round `number`'s answers: answer -> how many gave it (the latest of each follower)."""
        return Counter(self.answers.get(number, {}).values()) + self.forgotten.get(number, Counter())


def show(traces: dict[str, Showing], trace: str, facts: QuizFacts, title: str, part: int,
         most: int = MAX_TRACES) -> int:
    """The room on `trace` now: its Showing kept (a trace shown before) or new, moved to the end (the most recently
    shown); past `most` traces the least recently shown are dropped. -> how many were dropped."""
    back = traces.pop(trace, None)
    traces[trace] = Showing(facts, title, part) if back is None else back
    traces[trace].title = title
    dropped = max(len(traces) - most, 0)
    for old in list(traces)[:dropped]:
        del traces[old]
    return dropped


def forget(traces: dict[str, Showing], follower: str) -> None:
    """A follower forgotten by id (seats.forget_gone): its answers stay in every trace's counts, without its id."""
    for t in traces.values():
        for number, given in t.answers.items():
            if follower in given:
                t.forgotten.setdefault(number, Counter())[given.pop(follower)] += 1


def results_of(traces: dict[str, Showing]) -> list[TraceResults]:
    """Every trace kept, in the order the room first showed them, with its rounds' answers counted (counts only)."""
    shown = []
    for trace, t in sorted(traces.items(), key=lambda item: item[1].first):
        counts = {n: dict(c) for n in range(1, len(t.facts.rounds) + 1) if (c := t.counts(n))}
        shown.append(TraceResults(t.title, trace, t.facts, counts, dict(t.reached)))
    return shown

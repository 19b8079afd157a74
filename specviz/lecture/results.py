"""A room's results after the bell: every trace the room showed (lecture/rooms.py keeps the last MAX_TRACES), each
under its title, and per round the class's answers counted, what the target accepted, how many answered that, the
class's mean answer and E(α, K) − 1, as the lecturer downloads them (JSON or CSV). Counts only: no follower id, no
address ever reaches this module.

    shown, dropped = store.results(room, key)   # [TraceResults, …] in the order first shown, and how many were dropped
    results_json(shown, dropped)   # {"traces": [{"title": …, "score": {"right": 3, …}, "rounds": [{"round": 3, …}]}]}
    results_csv(shown, dropped)    # one row a round, under its trace's title, a column per answer
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from specviz.record.quiz_data import QuizFacts, mean_guess

FORMULA = "E(alpha, K) - 1 = (1 - alpha^(K+1)) / (1 - alpha) - 1, with alpha as printed (two decimals)"


@dataclass(frozen=True)
class TraceResults:
    """One trace a room showed, as its results list it."""

    title: str  # the trace's name for people (room_trace.trace_title)
    trace: str  # its trace_id
    facts: QuizFacts
    counts: dict[int, dict[int, int]]  # round -> answer -> how many gave it
    reached: dict[int, int]  # round -> the most reveal steps the lecturer showed


def round_rows(facts: QuizFacts, counts: dict[int, dict[int, int]], reached: dict[int, int]) -> list[dict]:
    """Every round the class answered or the lecturer began revealing, in order. A round's `histogram` lists each
    answer its quiz offered (0 … K), given or not; `right`: how many answered what the target accepted;
    `class_mean` is Σ answer·count / Σ count (None: no answers); `expected` is E(α, K) − 1 from the printed α (None
    for a tree round, whose formula is not a chain's)."""
    rows = []
    for number in sorted(set(counts) | set(reached)):
        r, given = facts.rounds[number - 1], counts.get(number, {})
        expected, mean = r.expected, mean_guess(given)
        rows.append({"round": number, "k": r.most, "revealed": reached.get(number, 0) >= r.steps,
                     "answers": sum(given.values()), "histogram": {str(a): given.get(a, 0) for a in range(r.most + 1)},
                     "accepted": r.accepted, "right": given.get(r.accepted, 0),
                     "class_mean": None if mean is None else round(mean, 4),
                     "expected": None if expected is None else round(expected, 4)})
    return rows


def class_score(rows: list[dict]) -> dict[str, int]:
    """The class's score over the rounds revealed to their end that someone answered (a score is told only after
    the reveal, as each student's page counts theirs): right answers, answers, rounds.

    >>> class_score([{"revealed": True, "answers": 4, "right": 1}, {"revealed": False, "answers": 3, "right": 3}])
    {'right': 1, 'answers': 4, 'rounds': 1}
    """
    scored = [row for row in rows if row["revealed"] and row["answers"]]
    return {"right": sum(row["right"] for row in scored), "answers": sum(row["answers"] for row in scored),
            "rounds": len(scored)}


def dropped_note(dropped: int) -> str:
    """What the results say of the traces a room dropped to stay bounded ("" when none)."""
    if not dropped:
        return ""
    return (f"the room showed {dropped} trace{'s' * (dropped != 1)} before these whose results it no longer keeps "
            f"(a room keeps the results of the traces it showed last)")


def results_json(shown: list[TraceResults], dropped: int = 0) -> str:
    traces = []
    for t in shown:
        rows = round_rows(t.facts, t.counts, t.reached)
        traces.append({"title": t.title, "trace": t.trace, "alpha": t.facts.alpha, "score": class_score(rows),
                       "rounds": rows})
    return json.dumps({"formula": FORMULA, "traces": traces, "dropped": dropped, "note": dropped_note(dropped)},
                      indent=1)


def results_csv(shown: list[TraceResults], dropped: int = 0) -> str:
    """The same rows as CSV, each under its trace's title (a trace with no round answered or revealed: one row with
    its title alone): a column `answered a` for each answer a any round offered (blank where a round's quiz did
    not offer it); the trace's class score (right answers over answers, revealed rounds), alpha and the formula in
    the last columns. A first row says how many traces the room dropped, if any."""
    tables = [(t, round_rows(t.facts, t.counts, t.reached)) for t in shown]
    widest = max((row["k"] for _, rows in tables for row in rows), default=0)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["trace", "round", "K", "revealed", "answers", *(f"answered {a}" for a in range(widest + 1)),
                     "accepted", "right", "class mean", "E(alpha K) - 1", "class score", "alpha", "formula"])
    if dropped:
        writer.writerow([f"({dropped_note(dropped)})"])
    for t, rows in tables:
        score = class_score(rows)
        share = _blank(score["right"] / score["answers"] if score["answers"] else None)
        if not rows:
            writer.writerow([t.title, *[""] * (widest + 9), share, t.facts.alpha, FORMULA])
        for row in rows:
            histogram = [row["histogram"].get(str(a), "") for a in range(widest + 1)]
            writer.writerow([t.title, row["round"], row["k"], str(row["revealed"]).lower(), row["answers"], *histogram,
                             row["accepted"], row["right"], _blank(row["class_mean"]), _blank(row["expected"]), share,
                             t.facts.alpha, FORMULA])
    return out.getvalue()


def _blank(value) -> str:
    return "" if value is None else f"{value:.4f}"

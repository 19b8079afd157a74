"""A room's results after the bell: per round the class's answers counted, what the target accepted, the class's
mean answer and E(α, K) − 1, as the lecturer downloads them (JSON or CSV). Counts only: no follower id, no address
ever reaches this module.

    facts, counts, reached = store.results(room, key)
    results_json(facts, counts, reached)   # {"alpha": 0.62, "rounds": [{"round": 3, "histogram": {"0": 1, …}, …}]}
    results_csv(facts, counts, reached)    # one row a round, a column per answer
"""

from __future__ import annotations

import csv
import io
import json

from specviz.record.quiz_data import QuizFacts, mean_guess

FORMULA = "E(alpha, K) - 1 = (1 - alpha^(K+1)) / (1 - alpha) - 1, with alpha as printed (two decimals)"


def round_rows(facts: QuizFacts, counts: dict[int, dict[int, int]], reached: dict[int, int]) -> list[dict]:
    """Every round the class answered or the lecturer began revealing, in order. A round's `histogram` lists each
    answer its quiz offered (0 … K), given or not; `class_mean` is Σ answer·count / Σ count (None: no answers);
    `expected` is E(α, K) − 1 from the printed α (None for a tree round, whose formula is not a chain's)."""
    rows = []
    for number in sorted(set(counts) | set(reached)):
        r, given = facts.rounds[number - 1], counts.get(number, {})
        expected, mean = r.expected, mean_guess(given)
        rows.append({"round": number, "k": r.most, "revealed": reached.get(number, 0) >= r.steps,
                     "answers": sum(given.values()), "histogram": {str(a): given.get(a, 0) for a in range(r.most + 1)},
                     "accepted": r.accepted, "class_mean": None if mean is None else round(mean, 4),
                     "expected": None if expected is None else round(expected, 4)})
    return rows


def results_json(facts: QuizFacts, counts: dict[int, dict[int, int]], reached: dict[int, int]) -> str:
    return json.dumps({"alpha": facts.alpha, "formula": FORMULA, "rounds": round_rows(facts, counts, reached)},
                      indent=1)


def results_csv(facts: QuizFacts, counts: dict[int, dict[int, int]], reached: dict[int, int]) -> str:
    """The same rows as CSV: a column `answered a` for each answer a any round offered (blank where a round's
    quiz did not offer it); alpha and the formula in the last two columns of every row."""
    rows = round_rows(facts, counts, reached)
    widest = max((row["k"] for row in rows), default=0)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["round", "K", "revealed", "answers", *(f"answered {a}" for a in range(widest + 1)),
                     "accepted", "class mean", "E(alpha K) - 1", "alpha", "formula"])
    for row in rows:
        histogram = [row["histogram"].get(str(a), "") for a in range(widest + 1)]
        writer.writerow([row["round"], row["k"], str(row["revealed"]).lower(), row["answers"], *histogram,
                         row["accepted"], _blank(row["class_mean"]), _blank(row["expected"]), facts.alpha, FORMULA])
    return out.getvalue()


def _blank(value) -> str:
    return "" if value is None else f"{value:.4f}"

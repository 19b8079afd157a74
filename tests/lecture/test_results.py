"""A room's results after the bell (specviz/lecture/results.py): a lecturer who redoes the file's arithmetic gets its
numbers: the class mean is Σ answer·count / Σ count, E(α, K) − 1 comes from the printed α, every answer the round
offered has its count, and nothing but counts is in it."""

import csv
import io
import json

from specviz.algorithm.theory import expected_tokens_per_pass
from specviz.lecture.results import results_csv, results_json
from specviz.lecture.room_trace import round_facts
from specviz.record.quiz_data import QuizFacts

FACTS = QuizFacts(0.62, (round_facts(0.62, 4, 3, 5), round_facts(0.62, 4, 0, 2), round_facts(0.62, 2, 2, 3),
                         round_facts(0.62, 3, 1, 2, tree=True)))
COUNTS = {1: {3: 2, 1: 1, 4: 1}, 3: {2: 5}, 4: {1: 2}}
REACHED = {1: 5, 2: 1, 4: 2}  # round 2 begun but never answered; round 3 answered, not revealed


def test_every_figure_can_be_redone_from_the_counts():
    data = json.loads(results_json(FACTS, COUNTS, REACHED))
    rows = {row["round"]: row for row in data["rounds"]}
    assert data["alpha"] == 0.62 and sorted(rows) == [1, 2, 3, 4]
    one = rows[1]
    assert one["histogram"] == {"0": 0, "1": 1, "2": 0, "3": 2, "4": 1} and one["answers"] == 4
    assert one["class_mean"] == round((1 + 3 * 2 + 4) / 4, 4) and one["accepted"] == 3 and one["revealed"]
    assert one["expected"] == round(expected_tokens_per_pass(0.62, 4) - 1, 4)
    assert rows[2]["answers"] == 0 and rows[2]["class_mean"] is None and not rows[2]["revealed"]
    assert not rows[3]["revealed"] and rows[3]["class_mean"] == 2.0
    assert rows[4]["expected"] is None  # a tree round: E(α, K) is a chain's formula


def test_the_csv_has_the_same_rows():
    table = list(csv.DictReader(io.StringIO(results_csv(FACTS, COUNTS, REACHED))))
    assert [row["round"] for row in table] == ["1", "2", "3", "4"]
    first = table[0]
    assert [first[f"answered {a}"] for a in range(5)] == ["0", "1", "0", "2", "1"]
    assert first["class mean"] == f"{11 / 4:.4f}" and first["revealed"] == "true" and first["alpha"] == "0.62"
    assert table[2]["answered 3"] == "" and table[2]["answered 4"] == ""  # round 3 offered 0 … 2 only
    assert table[3]["E(alpha K) - 1"] == ""


def test_no_answers_is_an_empty_table():
    assert json.loads(results_json(FACTS, {}, {}))["rounds"] == []
    assert results_csv(FACTS, {}, {}).splitlines()[0].startswith("round,K,revealed,answers,answered 0,")

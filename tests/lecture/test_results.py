"""A room's results after the bell (specviz/lecture/results.py): a lecturer who redoes the file's arithmetic gets its
numbers: the class mean is Σ answer·count / Σ count, E(α, K) − 1 comes from the printed α, every answer the round
offered has its count, the class's score counts the revealed rounds only, every trace the room showed stands under
its title, and nothing but counts is in it."""

import csv
import io
import json

from specviz.algorithm.theory import expected_tokens_per_pass
from specviz.lecture.results import TraceResults, results_csv, results_json
from specviz.lecture.room_trace import round_facts
from specviz.record.quiz_data import QuizFacts

FACTS = QuizFacts(0.62, (round_facts(0.62, 4, 3, 5), round_facts(0.62, 4, 0, 2), round_facts(0.62, 2, 2, 3),
                         round_facts(0.62, 3, 1, 2, tree=True)))
COUNTS = {1: {3: 2, 1: 1, 4: 1}, 3: {2: 5}, 4: {1: 2}}
REACHED = {1: 5, 2: 1, 4: 2}  # round 2 begun but never answered; round 3 answered, not revealed
SHOWN = [TraceResults("the example “Paris, sampled”", "0123456789abcdef", FACTS, COUNTS, REACHED)]


def test_every_figure_can_be_redone_from_the_counts():
    (data,) = json.loads(results_json(SHOWN))["traces"]
    rows = {row["round"]: row for row in data["rounds"]}
    assert data["alpha"] == 0.62 and sorted(rows) == [1, 2, 3, 4] and data["title"] == SHOWN[0].title
    one = rows[1]
    assert one["histogram"] == {"0": 0, "1": 1, "2": 0, "3": 2, "4": 1} and one["answers"] == 4
    assert one["class_mean"] == round((1 + 3 * 2 + 4) / 4, 4) and one["accepted"] == 3 and one["revealed"]
    assert one["expected"] == round(expected_tokens_per_pass(0.62, 4) - 1, 4)
    assert rows[2]["answers"] == 0 and rows[2]["class_mean"] is None and not rows[2]["revealed"]
    assert not rows[3]["revealed"] and rows[3]["class_mean"] == 2.0
    assert rows[4]["expected"] is None  # a tree round: E(α, K) is a chain's formula
    assert [rows[n]["right"] for n in (1, 2, 3, 4)] == [2, 0, 5, 2]  # round 1 accepted 3: two answered it
    assert data["score"] == {"right": 2 + 2, "answers": 4 + 2, "rounds": 2}  # rounds 1 and 4; 3 is not revealed


def test_the_csv_has_the_same_rows():
    table = list(csv.DictReader(io.StringIO(results_csv(SHOWN))))
    assert [row["round"] for row in table] == ["1", "2", "3", "4"]
    assert {row["trace"] for row in table} == {SHOWN[0].title} and table[0]["class score"] == f"{4 / 6:.4f}"
    first = table[0]
    assert [first[f"answered {a}"] for a in range(5)] == ["0", "1", "0", "2", "1"]
    assert first["class mean"] == f"{11 / 4:.4f}" and first["revealed"] == "true" and first["alpha"] == "0.62"
    assert table[2]["answered 3"] == "" and table[2]["answered 4"] == ""  # round 3 offered 0 … 2 only
    assert table[3]["E(alpha K) - 1"] == ""


def test_every_trace_stands_under_its_title_and_the_dropped_are_said():
    quiet = TraceResults("“Write the opening…” (13 rounds)", "fedcba9876543210", FACTS, {}, {})  # shown, no answers
    data = json.loads(results_json([*SHOWN, quiet], dropped=3))
    assert [(t["title"], len(t["rounds"])) for t in data["traces"]] == [(SHOWN[0].title, 4), (quiet.title, 0)]
    assert data["dropped"] == 3 and "3 traces before these" in data["note"]
    assert data["traces"][1]["score"] == {"right": 0, "answers": 0, "rounds": 0}
    lines = results_csv([*SHOWN, quiet], dropped=3).splitlines()
    table = list(csv.reader(lines))
    assert "3 traces before these" in table[1][0] and len({len(row) for row in [table[0], *table[2:]]}) == 1
    assert table[-1][0] == quiet.title and table[-1][1:3] == ["", ""] and table[-1][-2] == "0.62"
    assert json.loads(results_json(SHOWN))["note"] == ""


def test_no_traces_is_an_empty_table():
    assert json.loads(results_json([]))["traces"] == []
    assert results_csv([]).splitlines() == [results_csv([]).splitlines()[0]]
    assert results_csv([]).startswith("trace,round,K,revealed,answers,answered 0,")

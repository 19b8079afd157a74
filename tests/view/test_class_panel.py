"""The class's panel (specviz/view/class_panel.py): a student who redoes its arithmetic gets its numbers. The mean answer is
Σ answer·count / Σ count; E(α, K) − 1 is computed from the α printed beside it; the right answer is marked in words;
counts of rounds not yet revealed are never shown."""

import re

import pytest

from specviz.algorithm.theory import expected_tokens_per_pass
from specviz.lecture.examples import load_example
from specviz.lecture.room_trace import round_facts
from specviz.record.quiz_data import QuizFacts, mean_guess
from specviz.view.class_panel import class_panel
from specviz.lecture.room_trace import quiz_facts


def test_facts_come_from_the_trace():
    trace = load_example("paris")
    facts = quiz_facts(trace)
    assert len(facts.rounds) == len(trace.rounds)
    assert f"{facts.alpha:.2f}" == f"{trace.summary.acceptance_rate:.2f}"
    assert [r.accepted for r in facts.rounds] == [r.n_accepted for r in trace.rounds]
    assert all(r.most == rnd.k for r, rnd in zip(facts.rounds, trace.rounds) if not r.tree)


def test_every_printed_figure_can_be_redone():
    facts = QuizFacts(0.62, (round_facts(0.62, 4, 3, 5), round_facts(0.62, 4, 0, 2), round_facts(0.62, 2, 2, 3)))
    revealed = {1: {3: 2, 1: 1, 4: 1}, 3: {2: 5}}
    html = class_panel(facts, 1, True, 6, 4, revealed)
    assert "6 following · 4 answered round 1" in html
    assert "Round 1: 4 answers; the target accepted 3" in html
    rows = re.findall(r"<tr><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td><td>([\d.–]+)</td><td>(\d+)</td>"
                      r"<td>([\d.–]+)</td></tr>", html)
    assert [r[0] for r in rows] == ["1", "3"]  # round 2 is not revealed: not listed
    alpha = float(re.search(r"α = ([\d.]+)", html).group(1))
    for number, k, answers, mean, accepted, expected in rows:
        counts = revealed[int(number)]
        assert int(answers) == sum(counts.values())
        assert mean == f"{sum(g * c for g, c in counts.items()) / sum(counts.values()):.2f}"
        assert expected == f"{expected_tokens_per_pass(alpha, int(k)) - 1:.2f}"
    assert "its mean answers averaged 2.38; the target accepted 2.50 on average" in html  # (2.25 + 2) / 2; (3 + 2) / 2


def test_the_right_answer_is_marked_in_words_and_no_bar_before_the_reveal():
    facts = QuizFacts(0.5, (round_facts(0.5, 3, 1, 3),))
    html = class_panel(facts, 1, True, 3, 3, {1: {1: 2, 3: 1}})
    right = re.search(r'<div class="sv-hist-row sv-hist-hit"><span class="sv-hist-x">(\d)</span>', html)
    assert right.group(1) == "1" and "✓ what the target accepted" in html
    assert "sv-hist" not in class_panel(facts, 1, True, 3, 3, {})  # answered, not yet revealed: counts only
    assert "quiz off" in class_panel(facts, 1, False, 3, 0, {})
    assert mean_guess({}) is None and mean_guess({1: 2, 4: 1}) == 2.0


@pytest.mark.parametrize("accepted", [0, 2])
def test_the_histograms_bars_stay_together_whatever_the_right_answer(accepted):
    """The right answer's words once sat on a line of their own inside its row, splitting the bars (under 0's bar
    when the target accepted 0): the rows now hold only the answer, its bar and its count, ✓ beside the count."""
    facts = QuizFacts(0.5, (round_facts(0.5, 3, accepted, 3),))
    html = class_panel(facts, 1, True, 3, 3, {1: {0: 1, 1: 1, 2: 1}})
    rows = re.findall(r'<div class="sv-hist-row[^"]*">(.*?)</div>', html)
    assert len(rows) == 4
    for answer, row in enumerate(rows):
        assert re.fullmatch(rf'<span class="sv-hist-x">{answer}</span><span class="sv-hist-bar" style="width:\d+%">'
                            r'</span><span class="sv-hist-n">\d( <span class="sv-hist-right" title="what the target '
                            r'accepted">✓</span>)?</span>', row), row
        assert ("✓" in row) == (answer == accepted)
    assert f"the target accepted {accepted} (✓ what the target accepted)" in html


def test_at_alpha_one_the_expected_count_is_written_k_plus_one():
    facts = QuizFacts(1.0, (round_facts(1.0, 3, 3, 3),))
    html = class_panel(facts, 1, True, 3, 3, {1: {3: 3}})
    assert "E(α, K) − 1 = K + 1 − 1" in html and "1 − α" not in html  # not the 0/0 quotient



def test_a_round_released_before_the_quiz_says_its_answers_are_not_taken():
    """Issue 64, item 2: quiz mode turned on over a round the room had shown with quiz mode off: the panel (the
    lecturer's and every phone's) says the quiz takes no answers to it (tests/app/test_room_secrets.py: through the
    hub, as the streams send it)."""
    facts = QuizFacts(0.5, (round_facts(0.5, 3, 1, 3),))
    said = "round 1 was shown with quiz mode off, so the class has seen how it ends: the quiz takes no answers to it"
    assert said in class_panel(facts, 1, True, 3, 0, {}, released=True)
    assert said not in class_panel(facts, 1, True, 3, 0, {})

"""cards.py and stage.py, with record/quiz_data.py: a round as HTML cards, every round on one stage, the quiz's steps
and state, and the lecture pack that carries them (record/lecture_pack.py).

Checked against the records they show: the recorded real-pair trace (tests/fixtures/qwen_coder_fib.json, every
fate), live tiny-model traces, and a prompt-lookup trace.
"""

import copy
import json
import re

import pytest

from specviz.view import cards
from specviz.record import lecture_pack
from specviz.record import quiz_data as quiz
from specviz.view import stage
from specviz.view import style
from specviz.record.quiz_data import QuizState, RoundQuiz
from specviz.record.trace import BONUS, DISCARDED, REJECTED, REPLACEMENT

SCRIPT = "<script>alert(1)</script>"


def bar_values(html: str, kind: str) -> list[float]:
    """The widths of one kind of bar (q, p, res: the residual p′) in a card, as probabilities, rows in order."""
    return [float(w) / 100 for w in re.findall(rf'sv-bar-{kind}"[^>]*><span class="sv-track"><i style="width:([\d.]+)%"',
                                               html)]


def chosen_row(html: str) -> str:
    return re.search(r'<div class="sv-bar-row sv-chosen">(.*?)</div>', html).group(1)


def test_a_card_per_position_shows_q_and_p_of_the_drafted_token_and_its_verdict(recorded):
    for rnd in recorded.rounds:
        for i, d in enumerate(rnd.drafts):
            html = cards.position_card(rnd, i, greedy=False)
            assert f'sv-dec-{d.fate}' in html and style.FATES[d.fate].label in html
            row = chosen_row(html)
            assert bar_values(row, "q") == [pytest.approx(min(d.q, 1), abs=1e-3)]
            assert bar_values(row, "p") == [pytest.approx(min(d.p, 1), abs=1e-3)]
            assert f">{style.num(d.p)}<" in row and f">{style.num(d.q)}<" in row and "▶" in row
            assert html.count("sv-chosen") == 1 and html.count('class="sv-bar-row') == cards.TOP_TOKENS + 1
            why = style.verdict_text(d) if d.fate != DISCARDED else "not examined"
            assert why.replace("<", "&lt;") in re.sub(r"<[^>]+>", "", html)  # its text (a narrow card's spans)


def test_the_rivals_carry_both_distributions(recorded):
    d = recorded.rounds[0].drafts[0]
    html = cards.position_card(recorded.rounds[0], 0, greedy=False)
    top = cards.top_with(d.candidates, d)
    assert bar_values(html, "p") == [pytest.approx(t.p, abs=1e-3) for t in top]
    assert bar_values(html, "q") == [pytest.approx(t.q, abs=1e-3) for t in top]


def test_the_last_card_after_a_rejection_draws_the_residual(trace):
    rnd = next(r for r in trace.rounds if r.next_kind == REPLACEMENT)
    html = cards.last_token_card(rnd)
    row = chosen_row(html)
    assert bar_values(row, "res") == [pytest.approx(rnd.next_token.residual, abs=1e-3)]
    assert bar_values(row, "p") == [pytest.approx(rnd.next_token.p, abs=1e-3)]
    assert "◆" in row and f"Position {rnd.n_accepted + 1} was rejected" in html and "norm(max(0, p − q))" in html


def test_the_last_card_after_a_clean_sweep_draws_p_for_the_bonus(trace):
    rnd = next(r for r in trace.rounds if r.next_kind == BONUS and r.k)
    html = cards.last_token_card(rnd)
    assert bar_values(html, "q") == [] and bar_values(chosen_row(html), "p") == [pytest.approx(rnd.next_token.p, abs=1e-3)]
    assert "★" in chosen_row(html) and f"drawn from p at position {rnd.k + 1}" in html


def test_greedy_cards_speak_of_top_tokens(engine):
    from specviz.engine import RunSettings

    trace = engine.run("def fib(n):", RunSettings(k=4, temperature=0, max_new_tokens=24))
    rnd = next(r for r in trace.rounds if r.next_kind == REPLACEMENT and r.n_accepted >= 1)
    html = "".join(cards.position_card(rnd, j, greedy=True) for j in range(rnd.k))
    said = re.sub(r"<[^>]+>", "", html)  # the cards' text (a narrow card's spans split the sentence)
    assert "same top token as the target → accept" in said and "top token differs → reject" in said
    assert "r = " not in said


def test_prompt_lookup_cards_show_q_as_a_point_mass(lookup_trace):
    rnd = next(r for r in lookup_trace.rounds if r.drafts)
    for i, d in enumerate(rnd.drafts):
        html = cards.position_card(rnd, i, greedy=False)
        assert bar_values(chosen_row(html), "q") == [1.0] and sum(bar_values(html, "q")) == 1.0


def test_markup_in_tokens_stays_text(trace):
    evil = copy.deepcopy(trace)
    for r in evil.rounds:
        for d in r.drafts:
            d.text = SCRIPT
            for c in d.candidates:
                c.text = SCRIPT
        r.next_token.text = SCRIPT
    html = stage.stage_html(evil, 1)
    assert "<script" not in html and "&lt;script&gt;" in html


# --- the stage ------------------------------------------------------------------------------------------------

def sections(html: str) -> list[str]:
    return re.findall(r'<section class="sv-round"[^>]*>', html)


def test_the_stage_holds_every_round_and_shows_one(trace):
    n = len(trace.rounds)
    html = stage.stage_html(trace, 3)
    heads = sections(html)
    assert len(heads) == n and f'data-rounds="{n}" data-current="3"' in html
    assert [('hidden' not in h) for h in heads] == [i == 2 for i in range(n)]
    for i, (h, rnd) in enumerate(zip(heads, trace.rounds)):
        assert (f'data-round="{i + 1}" data-k="{rnd.k}" data-accepted="{rnd.n_accepted}" '
                f'data-steps="{quiz.reveal_steps(rnd)}"') in h
    assert html.count('class="sv-pos sv-dec-') == sum(r.k for r in trace.rounds)
    assert html.count('class="sv-pos sv-last ') == n and html.count('class="sv-explain"') == n


def test_the_stage_clamps_and_streams_only_the_latest_round(trace):
    n = len(trace.rounds)
    assert 'data-current="1"' in stage.stage_html(trace, -4) and f'data-current="{n}"' in stage.stage_html(trace, 10**9)
    latest = stage.stage_html(trace, n, latest_only=True)
    assert len(sections(latest)) == 1 and f'data-round="{n}"' in latest
    assert "sv-placeholder" in stage.stage_html(None, 1, hint="Press Generate")


# --- the quiz -------------------------------------------------------------------------------------------------

def test_reveal_steps_follow_what_verification_examined(trace, recorded):
    for rnd in trace.rounds + recorded.rounds:
        rejected = [i for i, d in enumerate(rnd.drafts) if d.fate == REJECTED]
        examined = rejected[0] + 1 if rejected else rnd.k
        assert quiz.reveal_steps(rnd) == examined + 1
        steps = [quiz.step_of_draft(rnd, i) for i in range(rnd.k)]
        assert steps[:examined] == list(range(1, examined + 1))
        assert all(s == examined + 1 for s in steps[examined:])  # never examined: shown with the last token


def test_every_verdict_is_marked_with_the_step_that_reveals_it(recorded):
    for number, rnd in enumerate(recorded.rounds, 1):
        html = stage.round_section(recorded, number, shown=True)
        last = quiz.reveal_steps(rnd)
        for i in range(rnd.k):  # the card, its verdict and its strip chip carry the draft's step
            step = quiz.step_of_draft(rnd, i)
            card = re.findall(r'<div class="sv-pos sv-dec-\w+" data-step="(\d+)"', html)[i]
            assert int(card) == step
        assert f'class="sv-answer" data-step="{last}"' in html  # the round's result, in its header
        assert re.search(rf'sv-last sv-dec-\w+" data-step="{last}"', html)
        assert re.search(rf'sv-tok sv-{rnd.next_kind}[^"]*sv-next" data-step="{last}"', html)
        assert f'How many of the {rnd.k} drafts' in html and html.count('class="sv-guess"') == rnd.k + 1


def test_the_score_counts_rounds_answered_and_fully_revealed(trace):
    r1, r2 = trace.rounds[0], trace.rounds[1]
    state = QuizState(True, 2, {1: RoundQuiz(r1.n_accepted, quiz.reveal_steps(r1)),
                                2: RoundQuiz((r2.n_accepted + 1) % (r2.k + 1), quiz.reveal_steps(r2)),
                                3: RoundQuiz(0, 0)})  # answered, not revealed: not scored yet
    assert state.score(trace) == (1, 2)


def test_a_lecture_pack_round_trips_and_restores_the_stage(trace):
    state = QuizState(True, 2, {2: RoundQuiz(1, 2)})
    opened, restored = quiz.load_lecture(lecture_pack.pack_json(trace, quiz.quiz_to_dict(state)))
    assert restored == state and opened.to_json() == trace.to_json()
    html = stage.stage_html(opened, restored.current, restored)
    assert re.search(r'data-round="2"[^>]*data-revealed="2" data-guess="1">', html)
    assert quiz.load_lecture(trace.to_json())[1] is None  # a plain trace opens with no quiz


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format_version=2), "comes from a newer specviz"),
    (lambda d: d.update(format_version="x"), "is not one this specviz reads"),
    (lambda d: d["quiz"]["rounds"].update({"1": {"guess": 99, "revealed": 0}}), "out of range"),
    (lambda d: d["quiz"]["rounds"].update({"1": {"guess": None, "revealed": 99}}), "past the last"),
    (lambda d: d["quiz"]["rounds"].update({"999": {"guess": 0}}), "the trace has"),
    (lambda d: d["quiz"].update(current=0), "the quiz is at round 0"),
    (lambda d: d["quiz"]["rounds"].update({"1": {"guess": True}}), "not a whole number"),
    (lambda d: d["quiz"].update(rounds=[1, 2]), "malformed quiz state"),
    (lambda d: d.update(quiz="yes"), "malformed quiz state"),
    (lambda d: d.update(trace={"format": "nope"}), "not a specviz trace"),
])
def test_a_bad_lecture_pack_says_what_is_wrong(trace, change, message):
    data = json.loads(lecture_pack.pack_json(trace, quiz.quiz_to_dict(QuizState(True, 1))))
    change(data)
    with pytest.raises(ValueError, match=message):
        quiz.load_lecture(json.dumps(data))

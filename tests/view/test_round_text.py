"""The token strip (strip.py), the explanation (explanation.py), token text (token_text.py) and the notices
(notices.py): round records -> HTML, on a live tiny-model trace and on a recorded real-pair trace.

tests/fixtures/qwen_coder_fib.json was recorded with the packaged Qwen2.5-Coder 0.5B -> 1.5B pair:
    Engine.from_pair(load_pair()).run("Write a Python function that returns the n-th Fibonacci number.",
                                      RunSettings(k=4, temperature=0.7, seed=1, max_new_tokens=24), baseline=True)
Its 7 rounds hold every fate, tokens with leading spaces, and newline tokens.
"""

import copy
import re

import pytest

from specviz.view import cards
from specviz.view import strip
from specviz.view import token_text
from specviz.view import notices
from specviz.view.explanation import explanation
from specviz.view import summary
from specviz.view import style
from specviz.record.trace import ACCEPTED, BONUS, DISCARDED, PLAIN, REJECTED, REPLACEMENT, DraftPosition

XSS = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert(1)</script>"


def first_round(trace, predicate) -> int:
    return next(i for i, r in enumerate(trace.rounds) if predicate(r))


@pytest.mark.parametrize("fate", [ACCEPTED, REJECTED, DISCARDED, REPLACEMENT, BONUS, PLAIN])
def test_strip_marks_each_fate_with_class_and_icon(trace, fate):
    i = first_round(trace, lambda r: fate in [d.fate for d in r.drafts] + [r.last_kind])
    html = strip.token_strip(trace, i)
    chips = re.findall(rf'<span class="sv-tok sv-{fate}[^"]*"[^>]*>.*?<sup class="sv-icon"[^>]*>(.)</sup>',
                       html.split('<div class="sv-legend">')[0])
    assert chips and set(chips) == {style.FATES[fate].icon}


def test_strip_shows_the_committed_text_before_the_round(trace):
    last = len(trace.rounds) - 1
    html = strip.token_strip(trace, last)
    past = "".join(t for r in trace.rounds[:last] for t in strip.committed_texts(r))
    assert len(re.findall(r'class="sv-past( sv-old)?"', html)) == len(past)  # a span per token (a character each)
    # the lecture screen folds all but the last RECENT rounds' text: those are marked, the rest not
    old = "".join(t for r in trace.rounds[:last - strip.RECENT] for t in strip.committed_texts(r))
    assert html.count('class="sv-past sv-old"') == len(old) > 0 and 'class="sv-fold"' in html
    assert 'class="sv-fold"' not in strip.token_strip(trace, strip.RECENT)
    assert f"Round {last + 1} of {len(trace.rounds)}" in html


def test_committed_texts_rebuild_the_output(trace):
    assert "".join(t for r in trace.rounds for t in strip.committed_texts(r)) == trace.output_text


def test_hover_title_shows_p_q_ratio_and_draw(trace):
    i = first_round(trace, lambda r: r.n_accepted > 0)
    d = trace.rounds[i].drafts[0]
    title = re.search(r'class="sv-tok sv-accepted"[^>]* title="([^"]*)"', strip.token_strip(trace, i)).group(1)
    assert f"p (target) = {style.num(d.p)}" in title and f"q (draft) = {style.num(d.q)}" in title
    p, q, ratio, r = style.verdict_numbers(d.p, d.q, d.uniform, accepted=True)
    assert f"min(1, {p}/{q}) = {ratio}" in title and f"r = {r}" in title


def test_verdict_text_writes_out_the_test():
    accepted = DraftPosition(1, "x", q=0.9, p=0.6, fate=ACCEPTED, accept_prob=0.6 / 0.9, uniform=0.41)
    rejected = DraftPosition(1, "x", q=0.6, p=0.1, fate=REJECTED, accept_prob=0.1 / 0.6, uniform=0.4)
    assert style.verdict_text(accepted) == "r = 0.41 < min(1, 0.60/0.90) = 0.67 → accept"
    assert style.verdict_text(rejected) == "r = 0.40 ≥ min(1, 0.10/0.60) = 0.17 → reject"
    assert "not examined" in style.verdict_text(DraftPosition(1, "x", q=0.5, p=0.5, fate=DISCARDED))


def test_whitespace_is_shown_as_the_tokenizer_produced_it(recorded):
    assert style.show(" fib") == "·fib" and style.show("):\n") == "):⏎" and style.show("") == "∅"
    assert token_text.token_html(" <b>") == '<span class="sv-ws">·</span>&lt;b&gt;'
    html = strip.token_strip(recorded, len(recorded.rounds) - 1)
    assert '<span class="sv-ws">·</span>fibonacci' in html  # " fibonacci", a token with a leading space
    assert '<span class="sv-ws">⏎</span><br>' in html  # a newline in the committed text also breaks the line


def test_prompt_and_token_text_are_escaped_everywhere(trace):
    evil = copy.deepcopy(trace)
    evil.prompt = XSS
    evil.output_text = SCRIPT
    evil.baseline.output_text = SCRIPT
    evil.dtype = "<b>bf16</b>"
    for r in evil.rounds:
        for d in r.drafts:
            d.text = SCRIPT
        r.next_token.text = SCRIPT
    html = "".join(strip.token_strip(evil, i) + cards.last_token_card(r) + explanation(evil, i)
                   + "".join(cards.position_card(r, j, False) for j in range(len(r.drafts)))
                   for i, r in enumerate(evil.rounds))
    html += summary.summary_html(evil) + notices.run_info(evil.device, evil.dtype, "<i>d</i>", "<i>t</i>")
    assert "<script" not in html and "<img" not in html and "<i>" not in html and "<b>bf16" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_a_tabs_own_status_line_is_escaped_and_its_class_is_in_the_pages_css():
    from tests.helpers import ROOT

    assert notices.tab_status("Measured <b>x</b> in 3 s.", done=True) == (
        '<div class="sv-tab-status">✓ Measured &lt;b&gt;x&lt;/b&gt; in 3 s.</div>')
    assert notices.tab_waiting("Press “Measure”.") == '<div class="sv-tab-waiting">Press “Measure”.</div>'
    css = (ROOT / "assets" / "style.css").read_text(encoding="utf-8")
    assert ".sv-tab-status { font-size: 18px; }" in css and ".sv-tab-waiting { font-size: 20px; }" in css


def test_explanation_tells_what_happened(trace):
    for i, r in enumerate(trace.rounds):
        text = explanation(trace, i)
        assert f"Round {i + 1}." in text and f"{r.tokens_this_pass} token" in text
        if r.next_kind == REPLACEMENT:
            d = r.drafts[r.n_accepted]
            assert "rejected" in text and "norm(max(0, p − q))" in text
            _, _, ratio, r = style.verdict_numbers(d.p, d.q, d.uniform, accepted=False)
            assert f"r = {r}" in text and f"min(1, p/q) = {ratio}" in text
        elif r.k:
            assert "bonus" in text and f"all {r.k} were accepted" in text
        else:  # one token was left: the round drafted nothing
            assert "nothing was drafted" in text


def test_summary_quotes_the_record(trace):
    s = trace.summary
    html = summary.summary_html(trace)
    assert f"{s.acceptance_rate:.2f}" in html and f"{s.tokens_per_pass:.2f}" in html
    assert f"{s.n_rounds} for {s.n_new_tokens} tokens" in html
    assert f"{s.n_new_tokens - s.n_rounds} target passes saved" in html
    assert f"{s.tokens_per_s / trace.baseline.tokens_per_s:.2f}×" in html
    no_baseline = copy.deepcopy(trace)
    no_baseline.baseline = None
    assert "×" not in summary.summary_html(no_baseline) and "Baseline" in summary.summary_html(no_baseline)


def test_summary_separates_latency_from_throughput(trace):
    from specviz.record.stats import baseline_decode_speed, decode_speed

    s, b = trace.summary, trace.baseline
    html = summary.summary_html(trace)
    assert "time to first token" in html and "decode speed" in html
    assert f"{s.first_token_time_s * 1000:.0f} ms vs {b.first_token_time_s * 1000:.0f} ms" in html  # tiny: < 1 s
    assert f"{style.speed(decode_speed(trace))} tok/s vs {style.speed(baseline_decode_speed(b))}" in html  # 3 figures
    later = sum(r.tokens_this_pass for r in trace.rounds[1:]) / (s.total_time_s - s.first_token_time_s)
    assert decode_speed(trace) == pytest.approx(later)


def test_baseline_report_in_greedy_mode(trace):
    greedy = copy.deepcopy(trace)
    greedy.settings["temperature"] = 0
    greedy.baseline.output_token_ids = list(greedy.output_token_ids)
    assert "identical" in summary.baseline_report(greedy)
    greedy.baseline.output_token_ids[3] += 1
    greedy.dtype = "bfloat16"
    report = summary.baseline_report(greedy)
    assert "differ from token 4" in report and "bfloat16" in report and "rounds differently" in report
    greedy.dtype = "float32"  # the report never claims float32 always matches, least of all when it did not
    report = summary.baseline_report(greedy)
    assert "Even float32 rounds" in report and "In float32 the texts match" not in report


def test_recorded_trace_renders_every_round(recorded):
    for i, r in enumerate(recorded.rounds):
        assert f"Round {i + 1} of {len(recorded.rounds)}" in strip.token_strip(recorded, i)
        assert explanation(recorded, i)
    assert "Qwen2.5-Coder-1.5B-Instruct" in notices.run_info(recorded.device, recorded.dtype, recorded.draft_model,
                                                            recorded.target_model)


def test_palette_css_defines_every_colour_once():
    css = style.palette_css()
    for fate, look in style.FATES.items():
        assert f"--sv-{fate}: {look.color};" in css
    assert f"--sv-p: {style.P_COLOR};" in css and f"--sv-q: {style.Q_COLOR};" in css


def test_a_prompt_lookup_run_is_explained_as_copying(lookup_trace):
    assert lookup_trace.draft_model == "prompt lookup"
    i = first_round(lookup_trace, lambda r: r.k > 0 and r.next_kind == REPLACEMENT)
    text = explanation(lookup_trace, i)
    assert "Prompt lookup copied" in text and "point mass" in text and "draft model" not in text
    assert "q = 1.00" in text  # the rejected copy: its q is 1, so it was kept only with probability p
    unmatched = first_round(lookup_trace, lambda r: r.index > 0 and r.k == 0 and not r.stop)
    assert "Prompt lookup found no earlier occurrence" in explanation(lookup_trace, unmatched)
    assert "Round 1 is the target's own prefill" in explanation(lookup_trace, 0)
    for i in range(len(lookup_trace.rounds)):
        assert strip.token_strip(lookup_trace, i)


def test_nothing_drafted_because_one_token_was_left(lookup_trace):
    last = copy.deepcopy(lookup_trace)
    made = sum(r.tokens_this_pass for r in last.rounds[:-1])
    last.settings["max_new_tokens"] = made + 1  # the last round then had one token left to make
    last.rounds[-1].k, last.rounds[-1].drafts = 0, []
    assert "Only one token was left" in explanation(last, len(last.rounds) - 1)


def test_explanation_says_why_an_adaptive_round_drafted_fewer_than_k(engine):
    from specviz.engine import RunSettings

    trace = engine.run("def fib(n):", RunSettings(k=8, temperature=1.0, seed=3, max_new_tokens=40, adaptive=True,
                                                  confidence=0.3, stop_rule="threshold"))
    short = [r.index for r in trace.rounds if 0 < r.k < 8 and not r.stop
             and r.drafts[-1].token_id not in trace.eos_token_ids]
    assert short
    said = explanation(trace, short[0])
    assert "With adaptive K it stopped at" in said and "not the chance that the target accepts them" in said
    full = [r.index for r in trace.rounds if r.k == 8]
    assert all("adaptive" not in explanation(trace, i) for i in full)


def test_greedy_rounds_speak_of_top_tokens_not_draws(engine):
    from specviz.engine import RunSettings

    trace = engine.run("def fib(n):", RunSettings(k=4, temperature=0, max_new_tokens=24))
    i = first_round(trace, lambda r: r.next_kind == REPLACEMENT and r.n_accepted >= 1)
    rnd = trace.rounds[i]
    decisions = "".join(cards.position_card(rnd, j, greedy=True) for j in range(len(rnd.drafts)))
    said = re.sub(r"<[^>]+>", "", decisions)  # the cards' text (a narrow card's spans split the sentence)
    assert "same top token as the target → accept" in said and "top token differs → reject" in said
    assert "r = " not in said and "r &lt;" not in said
    explained = explanation(trace, i)
    assert "not the target's top token" in explained and "draw r" not in explained
    assert "r = " not in strip.token_strip(trace, i)


def test_sampled_rejections_say_where_the_residual_mass_comes_from(trace):
    i = first_round(trace, lambda r: r.next_kind == REPLACEMENT)
    said = explanation(trace, i)
    assert "spent more probability than the target (q &gt; p)" in said and "under-proposed" not in said


def test_round_one_is_the_targets_prefill_and_round_two_brings_the_draft_in(trace, lookup_trace):
    n = len(trace.prompt_token_ids)
    first = explanation(trace, 0)
    assert "Round 1 is the target's own prefill, so nothing was drafted" in first
    assert f"That pass read the whole prompt ({n} tokens)" in first and "The draft reads the prompt in round 2" in first
    assert f"The draft's first step this round also read the prompt ({n} tokens)" in explanation(trace, 1)
    assert "read the prompt" not in explanation(trace, 2)
    assert "The draft reads" not in explanation(lookup_trace, 0)  # prompt lookup has no draft model
    assert "also read the prompt" not in explanation(lookup_trace, 1)


def test_an_older_trace_says_round_one_encoded_the_prompt_in_both_models(trace, lookup_trace):
    """Before format version 3 round 1 drafted too: both models read the prompt in it."""
    old, old_lookup = copy.deepcopy(trace), copy.deepcopy(lookup_trace)
    old.format_version = old_lookup.format_version = 2
    n = len(trace.prompt_token_ids)
    assert f"Round 1 also encoded the prompt ({n} tokens): both models read all of it" in explanation(old, 0)
    assert "read the prompt" not in explanation(old, 1)
    assert "the target's pass read all of it" in explanation(old_lookup, 0)


def eos_sweep(trace):
    """A clean sweep whose accepted drafts end with the end-of-sequence token: the bonus is not committed."""
    done = copy.deepcopy(trace)
    rnd = next(r for r in done.rounds if r.next_kind == BONUS and r.k >= 2)
    done.rounds = done.rounds[:rnd.index + 1]
    rnd.drafts[-1].token_id, rnd.drafts[-1].text = done.eos_token_ids[0], "<eos>"
    rnd.committed_ids, rnd.stop = [d.token_id for d in rnd.drafts], "eos"
    return done, rnd


def test_nothing_after_the_end_of_the_text_is_kept(recorded):
    from specviz.view import charts
    from specviz.view.trace_text import round_line

    done, rnd = eos_sweep(recorded)
    assert not rnd.next_kept and all(r.next_kept for r in done.rounds[:-1])
    assert "Nothing after the end is kept" in explanation(done, rnd.index)
    assert "bonus not kept" in strip.token_strip(done, rnd.index)
    assert "not kept" in cards.last_token_card(rnd) and "not kept" in round_line(rnd)
    stacks = [t for t in charts.tokens_per_pass(done).data if t.type == "bar"]
    assert sum(t.y[-1] for t in stacks) == rnd.k  # the chart counts what was committed: no bonus


def test_the_info_line_says_why_this_dtype():
    html = notices.run_info("cpu", "float32", "d", "t", why="this CPU has no <native> bfloat16")
    assert ("weights and activations float32 <span class=\"sv-muted\">(this CPU has no &lt;native&gt; bfloat16)"
            "</span>") in html
    assert "sv-muted" not in notices.run_info("cpu", "float32", "d", "t")

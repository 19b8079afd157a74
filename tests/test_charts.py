"""charts.py: round records -> plotly figures, checked against the records they draw."""

import copy
from html import escape

import pytest

from specviz import charts, render, style
from specviz.theory import expected_tokens_per_pass
from specviz.trace import BONUS, DISCARDED, REPLACEMENT







def bars(fig, name: str, yaxis: str = "y") -> dict:
    """The bar trace called `name` on one y axis."""
    return next(t for t in fig.data if t.type == "bar" and t.name == name and (t.yaxis or "y") == yaxis)


def outlined(trace) -> list[bool]:
    return [w > 0 for w in trace.marker.line.width]


def test_pq_bars_highlight_the_drafted_token_and_write_out_the_test(recorded):
    for rnd in recorded.rounds:
        fig = charts.pq_bars(rnd)
        titles = [a.text for a in fig.layout.annotations]
        for i, d in enumerate(rnd.drafts):
            axis = "y" if i == 0 else f"y{i + 1}"
            p, q = bars(fig, "p (target)", axis), bars(fig, "q (draft)", axis)
            hit = outlined(p).index(True)
            assert outlined(p) == outlined(q) and outlined(p).count(True) == 1
            assert p.x[hit] == pytest.approx(d.p) and q.x[hit] == pytest.approx(d.q)
            assert p.y[hit] == charts.label(d.text)
            ticks = fig.layout["yaxis" + axis[1:]].ticktext
            assert ticks[hit].startswith("<b>▶ ") and sum(t.startswith("<b>▶") for t in ticks) == 1
            assert escape(style.verdict_text(d), quote=False) in titles[i]  # plotly reads tags: "<" is escaped
            assert style.FATES[d.fate].label in titles[i]


def test_pq_bars_show_both_distributions_for_each_candidate(recorded):
    d = recorded.rounds[0].drafts[0]
    fig = charts.pq_bars(recorded.rounds[0])
    p, q = bars(fig, "p (target)"), bars(fig, "q (draft)")
    by_label = {charts.label(c.text): c for c in d.candidates}
    for name, p_value, q_value in zip(p.y, p.x, q.x):
        assert p_value == pytest.approx(by_label[name].p) and q_value == pytest.approx(by_label[name].q)
    assert len(p.y) == charts.TOP_BARS and list(p.y) == list(q.y)


def test_discarded_positions_are_faded(trace):
    rnd = next(r for r in trace.rounds if any(d.fate == DISCARDED for d in r.drafts))
    fig = charts.pq_bars(rnd)
    for i, d in enumerate(rnd.drafts):
        axis = "y" if i == 0 else f"y{i + 1}"
        assert (bars(fig, "p (target)", axis).opacity < 1) == (d.fate == DISCARDED)


def test_residual_chart_after_a_rejection(trace):
    rnd = next(r for r in trace.rounds if r.next_kind == REPLACEMENT)
    fig = charts.residual_chart(rnd)
    residual = bars(fig, "norm(max(0, p − q))")
    hit = outlined(residual).index(True)
    assert residual.x[hit] == pytest.approx(rnd.next_token.residual)
    assert bars(fig, "p (target)").x[hit] == pytest.approx(rnd.next_token.p)
    assert fig.layout.yaxis.ticktext[hit].startswith("<b>◆")
    assert f"Position {rnd.n_accepted + 1} rejected" in fig.layout.title.text


def test_residual_chart_after_a_clean_sweep_shows_the_bonus(trace):
    rnd = next(r for r in trace.rounds if r.next_kind == BONUS and r.k)
    fig = charts.residual_chart(rnd)
    assert [t.name for t in fig.data] == ["p (target)"]
    hit = outlined(fig.data[0]).index(True)
    assert fig.data[0].x[hit] == pytest.approx(rnd.next_token.p)
    assert fig.layout.yaxis.ticktext[hit].startswith("<b>★") and "bonus" in fig.layout.title.text


def test_tokens_per_pass_expected_line_and_running_mean(trace):
    fig = charts.tokens_per_pass(trace, selected=2)
    s, rounds = trace.summary, trace.rounds
    expected = next(t for t in fig.data if t.name.startswith("expected"))
    # from the K each round drafted, not the setting: the last rounds (and adaptive K) draft fewer
    assert any(r.k < trace.settings["k"] for r in rounds)
    mean_e = sum(expected_tokens_per_pass(s.acceptance_rate, r.k) for r in rounds) / len(rounds)
    assert list(expected.y) == [pytest.approx(mean_e)] * 2
    ceiling = next(t for t in fig.data if t.name.startswith("ceiling"))
    assert list(ceiling.y) == [pytest.approx(sum(r.k + 1 for r in rounds) / len(rounds))] * 2
    mean = next(t for t in fig.data if t.name == "running mean")
    assert mean.y[-1] == pytest.approx(s.tokens_per_pass)
    stacked = [sum(t.y[i] for t in fig.data if t.type == "bar") for i in range(len(trace.rounds))]
    assert stacked == [r.tokens_this_pass for r in trace.rounds]
    assert fig.layout.shapes[0].x0 == 2.5  # the selected round (0-based 2) is shaded


def test_token_text_is_escaped_and_kept_categorical(trace):
    evil = copy.deepcopy(next(r for r in trace.rounds if r.next_kind == REPLACEMENT))
    evil.drafts[0].text = "<script>"
    evil.drafts[0].candidates[0].text = "1"
    for c in evil.drafts[0].candidates:
        if c.token_id == evil.drafts[0].token_id:
            c.text = "<script>"
    fig = charts.pq_bars(evil)
    text = fig.to_json()
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert fig.layout.yaxis.type == "category"  # a token "1" is a category, not the number 1


def test_a_round_with_nothing_drafted_and_an_empty_trace(trace):
    rnd = copy.deepcopy(next(r for r in trace.rounds if r.next_kind == BONUS))
    rnd.k, rnd.drafts, rnd.n_accepted = 0, [], 0  # the round a run ends with when one token is left
    assert "Nothing was drafted" in charts.pq_bars(rnd).layout.annotations[0].text
    empty = copy.deepcopy(trace)
    empty.rounds = []
    assert charts.tokens_per_pass(empty).layout.annotations


def test_prompt_lookup_rounds_draw_q_as_a_point_mass(lookup_trace):
    rounds = [r for r in lookup_trace.rounds if r.drafts]
    assert rounds and any(r.next_kind == REPLACEMENT for r in rounds)
    for rnd in rounds:
        fig = charts.pq_bars(rnd)
        for i, d in enumerate(rnd.drafts):
            axis = "y" if i == 0 else f"y{i + 1}"
            q = bars(fig, "q (draft)", axis)
            hit = outlined(q).index(True)
            assert q.x[hit] == 1.0 and sum(q.x) == 1.0  # q = 1 on the copied token, 0 on every other
            if d.accept_prob is not None:
                assert d.accept_prob == pytest.approx(d.p)  # min(1, p/1) = p
                assert "/1.00) = " in fig.layout.annotations[i].text
        if rnd.next_kind == REPLACEMENT:  # the residual max(0, p − q) leaves out just the rejected copy
            rejected = rnd.drafts[rnd.n_accepted].token_id
            assert all(t.residual == 0 for t in rnd.residual if t.token_id == rejected)
            assert charts.residual_chart(rnd).data


def test_the_timeline_puts_both_runs_on_one_clock(trace, recorded):
    fig = charts.timeline(trace)
    names = [t.name for t in fig.data]
    assert names[:2] == [f"draft steps ({trace.draft_model})", "verify pass (target)"] and "target step" in names
    draft, verify, marks, alone = fig.data
    assert len(draft.x) == len(verify.x) == len(trace.rounds)
    assert list(draft.x) == [r.draft_time_s for r in trace.rounds]
    assert verify.base[0] == pytest.approx(draft.x[0])  # each round: its draft steps, then its verify pass
    assert list(marks.text) == [f"+{r.tokens_this_pass}" for r in trace.rounds]
    assert list(alone.x) == trace.baseline.step_times_s
    assert "spread evenly: not recorded" in charts.timeline(recorded).layout.title.text  # format version 1
    no_baseline = copy.deepcopy(trace)
    no_baseline.baseline = None
    assert "press Baseline" in charts.timeline(no_baseline).layout.title.text

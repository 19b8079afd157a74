"""charts.py: round records -> plotly figures, checked against the records they draw."""

import copy

import pytest

from specviz.view import charts
from specviz.algorithm.theory import expected_tokens_per_pass


def test_an_empty_trace_gets_a_note_not_an_empty_chart(trace):
    empty = copy.deepcopy(trace)
    empty.rounds = []
    assert charts.tokens_per_pass(empty).layout.annotations


def test_tokens_per_pass_expected_line_and_running_mean(trace):
    fig = charts.tokens_per_pass(trace, selected=2)
    s, rounds = trace.summary, trace.rounds
    expected = next(t for t in fig.data if t.name.startswith("expected"))
    # from the K each round drafted, not the setting: the last rounds (and adaptive K) draft fewer
    assert any(r.k < trace.settings["k"] for r in rounds)
    shown = round(s.acceptance_rate, 2)  # E from α as printed, so a student redoing it gets the line drawn
    assert f"α = {shown:.2f}" in fig.layout.title.text
    mean_e = sum(expected_tokens_per_pass(shown, r.k) for r in rounds) / len(rounds)
    assert list(expected.y) == [pytest.approx(mean_e)] * 2
    ceiling = next(t for t in fig.data if t.name.startswith("ceiling"))
    assert list(ceiling.y) == [pytest.approx(sum(r.k + 1 for r in rounds) / len(rounds))] * 2
    mean = next(t for t in fig.data if t.name == "running mean")
    assert mean.y[-1] == pytest.approx(s.tokens_per_pass)
    stacked = [sum(t.y[i] for t in fig.data if t.type == "bar") for i in range(len(trace.rounds))]
    assert stacked == [r.tokens_this_pass for r in trace.rounds]
    assert fig.layout.shapes[0].x0 == 2.5  # the selected round (0-based 2) is shaded


def test_the_timeline_puts_both_runs_on_one_clock(trace, recorded):
    fig = charts.timeline(trace)
    names = [t.name for t in fig.data]
    assert names[:2] == [f"draft steps ({trace.draft_model})", "verify pass (target)"] and "target step" in names
    draft, verify, marks, alone = fig.data[:4]  # a fifth, the shorter lane drawn on, where the token counts differ
    assert len(draft.x) == len(verify.x) == len(trace.rounds)
    assert list(draft.x) == [r.draft_time_s for r in trace.rounds]
    assert verify.base[0] == pytest.approx(draft.x[0])  # each round: its draft steps, then its verify pass
    assert list(marks.text) == [f"+{r.tokens_this_pass}" for r in trace.rounds]
    assert list(alone.x) == trace.baseline.step_times_s
    assert "spread evenly: not recorded" in charts.timeline(recorded).layout.title.text  # format version 1
    no_baseline = copy.deepcopy(trace)
    no_baseline.baseline = None
    assert "press Baseline" in charts.timeline(no_baseline).layout.title.text


def test_the_timeline_draws_both_lanes_to_the_same_tokens_so_lengths_compare_as_speeds():
    """37 tokens in 5.53 s against 25 in 5.21 s drew as equal bars beside a 1.39x speedup: the shorter lane is drawn
    on at its own rate to the longer one's tokens, so the lanes' lengths compare as the speeds do."""
    from specviz.record.trace import Baseline
    from tests.helpers import make_trace

    trace = make_trace()  # 7 tokens in rounds of 0.30 + 0.22 s
    trace.baseline = Baseline([1] * 5, "", 0.1, 0.5, 10.0, [0.1] * 5)  # 5 tokens in 0.5 s
    fig = charts.timeline(trace)
    more = fig.data[-1]
    assert more.y[0] == "target alone" and more.base[0] == pytest.approx(0.5) and more.x[0] == pytest.approx(0.2)
    run_s = sum(r.draft_time_s + r.verify_time_s for r in trace.rounds)
    alone_end = more.base[0] + more.x[0]  # 7 tokens at the target alone's 0.1 s a token
    assert run_s / alone_end == pytest.approx((5 / 0.5) / (7 / run_s))  # the lengths' ratio is the speeds'
    title = fig.layout.title.text
    assert "7 tokens in 0.52 s of rounds (13.5 tok/s)" in title and "5 tokens in 0.50 s (10.0 tok/s)" in title
    assert "target alone drawn on to 7 tokens at its own rate (2 × 0.100 s, dotted)" in title
    trace.baseline = Baseline([1] * 9, "", 0.1, 0.9, 10.0, [0.1] * 9)  # now the run is the shorter lane
    more = charts.timeline(trace).data[-1]
    assert more.y[0] == "speculative" and more.x[0] == pytest.approx(2 * run_s / 7)
    trace.baseline = Baseline([1] * 7, "", 0.1, 0.7, 10.0, [0.1] * 7)  # the same tokens: nothing drawn on
    assert "drawn on" not in charts.timeline(trace).layout.title.text

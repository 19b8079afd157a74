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
    mean_e = sum(expected_tokens_per_pass(s.acceptance_rate, r.k) for r in rounds) / len(rounds)
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

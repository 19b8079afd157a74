"""engine/repeats.py on tiny random-weight models: the run and the target alone take turns after a warm-up of
each, every turn is recorded, the trace kept is the median turn's with that turn's target-alone run, and the result
round-trips through the strict loader."""

import pytest

from specviz.engine import RunSettings
from specviz.engine.repeats import timed_baseline, timed_run
from specviz.record.load import load_trace
from specviz.record.stats import turn_speedups

SETTINGS = RunSettings(k=3, temperature=0.0, seed=0, max_new_tokens=8)


@pytest.fixture
def calls(engine, monkeypatch):
    """The order of the engine's runs: 'run' and 'alone', as they are called (the real methods still run)."""
    order = []
    run, baseline = engine.run, engine.baseline
    monkeypatch.setattr(engine, "run", lambda *a, **k: order.append("run") or run(*a, **k))
    monkeypatch.setattr(engine, "baseline", lambda *a, **k: order.append("alone") or baseline(*a, **k))
    return order


def test_the_turns_interleave_after_a_warm_up_and_the_median_turn_is_kept(engine, calls):
    trace = timed_run(engine, "def f(x):", SETTINGS, turns=5)
    assert calls == ["run", "alone"] * 6  # one untimed warm-up of each, then five turns
    r = trace.baseline.repeats
    assert len(r.speculative) == len(r.target) == 5 and r.warm_up == 1 and "cores" in r.machine
    ratios = turn_speedups(r)
    shown = trace.summary.tokens_per_s / trace.baseline.tokens_per_s
    assert shown == pytest.approx(sorted(ratios)[2])  # the median turn's run and target alone, shown together
    assert trace.summary.total_time_s in [t.total_s for t in r.speculative]
    assert trace.baseline.total_time_s in [t.total_s for t in r.target]
    assert trace.output_token_ids == trace.baseline.output_token_ids  # greedy float32: the same text either way
    assert load_trace(trace.to_json()) == trace


def test_the_load_average_is_read_just_before_the_first_turn_and_just_after_the_last(engine, calls, monkeypatch):
    """The machine's 1-minute load average around the timed turns (after the warm-up), where the system has one."""
    from specviz.engine import repeats

    readings = iter([0.75, 1.9])
    monkeypatch.setattr(repeats, "load_average", lambda: calls.append("load") or next(readings))
    r = timed_run(engine, "def f(x):", SETTINGS, turns=2).baseline.repeats
    assert calls == ["run", "alone", "load", "run", "alone", "run", "alone", "load"]
    assert (r.load_before, r.load_after) == (0.75, 1.9)


def test_the_load_average_is_the_systems_own():
    import os

    from specviz.models.machine import load_average

    assert load_average() is None if not hasattr(os, "getloadavg") else 0 <= load_average() < 10_000


def test_an_even_count_keeps_the_lower_middle_turn(engine):
    trace = timed_run(engine, "def f(x):", SETTINGS, turns=2, warm_up=0)
    ratios = turn_speedups(trace.baseline.repeats)
    assert trace.summary.tokens_per_s / trace.baseline.tokens_per_s == pytest.approx(min(ratios))


def test_a_baseline_for_a_run_already_made_takes_no_warm_up_by_default(engine, calls):
    b = timed_baseline(engine, "def f(x):", SETTINGS, turns=3)
    assert calls == ["run", "alone"] * 3 and len(b.repeats.target) == 3 and b.repeats.warm_up == 0
    assert b.total_time_s in [t.total_s for t in b.repeats.target]


@pytest.mark.parametrize("turns", [0, 101])
def test_a_turn_count_out_of_range_is_refused_before_any_run(engine, calls, turns):
    with pytest.raises(ValueError, match=f"the repeats should be 1 to 100 turns, got {turns}"):
        timed_run(engine, "def f(x):", SETTINGS, turns=turns)
    assert calls == []

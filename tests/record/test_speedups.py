"""record/stats.py's speedups as a paper publishes them: each turn's ratio, their median and range, and the ceiling a
speedup cannot pass (what the run's own target passes allow with drafting free), on hand-made traces whose numbers
are worked out in the comments."""

import pytest

import dataclasses

from specviz.record.stats import (QUIET, Ceiling, Spread, decode_speedup, quiet, speedup_over_baseline, speedups,
                                  spread, turn_decode_speedups, turn_rates, turn_speedups)
from specviz.record.trace import Repeats, TimedRun
from tests.helpers import make_trace


def timed(trace, run_seconds: list[float], alone_seconds: list[float]):
    """The hand-made trace (7 tokens in 2 passes: 3.5 a pass) with turns of these whole-run times, 7 tokens each, the
    first token after a tenth of each run."""
    trace.baseline.repeats = Repeats([TimedRun(7, s, s / 10) for s in run_seconds],
                                     [TimedRun(7, s, s / 10) for s in alone_seconds], 1, "a test CPU")
    return trace


def test_spread_is_the_median_and_the_ends():
    assert spread([1.2, 0.9, 1.1]) == Spread(1.1, 0.9, 1.2, 3)
    assert spread([2.0]) == Spread(2.0, 2.0, 2.0, 1)


def test_a_spread_is_written_one_way_its_median_then_its_range():
    s = spread([1.2, 0.9, 1.1])
    assert s.text() == "1.10 (0.90–1.20)" and s.text(1, unit="×") == "1.1× (0.9–1.2)"
    assert s.text(2, aside="<small>({})</small>") == "1.10 <small>(0.90–1.20)</small>"


def test_each_sides_turns_are_quiet_within_1_15x():
    """7 tokens a turn: the target alone in 1.0 and 1.2 s runs at 7.00 and 5.83 tok/s, 1.20x apart (not quiet); in
    1.0 and 1.1 s, 1.10x apart (quiet); the run's own turns are alike in both."""
    assert QUIET == 1.15 and spread([1.2, 0.9, 1.1]).ratio == pytest.approx(4 / 3)
    busy = timed(make_trace(), [0.5, 0.5, 0.5], [1.0, 1.2, 1.0]).baseline.repeats
    run, alone = turn_rates(busy)
    assert (run.low, run.high) == (14.0, 14.0) and (alone.low, alone.high) == pytest.approx((7 / 1.2, 7.0))
    assert alone.ratio == pytest.approx(1.2) and not quiet(busy)
    assert quiet(timed(make_trace(), [0.5, 0.5, 0.5], [1.0, 1.1, 1.0]).baseline.repeats)
    assert not quiet(timed(make_trace(), [0.5, 0.6, 0.5], [1.0, 1.0, 1.0]).baseline.repeats)  # the run's side 1.2x


def test_each_turn_is_its_own_ratio_and_the_speedup_their_median():
    trace = timed(make_trace(), [0.5, 0.4, 0.5, 0.5, 1.0], [1.0, 1.0, 1.2, 0.9, 1.5])
    # tokens are equal on both sides, so each ratio is alone's seconds over the run's: 2, 2.5, 2.4, 1.8, 1.5
    assert turn_speedups(trace.baseline.repeats) == pytest.approx([2.0, 2.5, 2.4, 1.8, 1.5])
    whole, decode = speedups(trace)
    assert whole.value == Spread(pytest.approx(2.0), pytest.approx(1.5), pytest.approx(2.5), 5)
    assert speedup_over_baseline(trace) == pytest.approx(2.0)
    # decode: 6 tokens in 0.9 of each run on both sides: the same ratios
    assert turn_decode_speedups(trace.baseline.repeats) == pytest.approx([2.0, 2.5, 2.4, 1.8, 1.5])
    assert decode_speedup(trace) == pytest.approx(2.0)


def test_without_repeats_it_is_the_one_runs_ratio():
    trace = make_trace()  # 14 tok/s against the baseline's 7: 2.00x, one run each
    whole, _ = speedups(trace)
    assert whole.value == Spread(2.0, 2.0, 2.0, 1) and not whole.beyond


def test_the_ceiling_is_the_runs_own_passes_against_the_target_alone():
    """Whole run: 7 tokens in 0.10 + 0.10 s of target passes = 35 tok/s, over the target alone's 7 tok/s: 5.0, above
    the 3.5 tokens per pass, since a pass took 0.10 s and the target alone 1/7 s a token. Decode speed: round 2's 2
    tokens in its 0.10 s pass = 20 tok/s, over the target alone's 6 tokens in 0.95 s after its first: 3.17."""
    whole, decode = speedups(make_trace())
    assert whole.ceiling == Ceiling(tokens=7, passes=2, pass_s=pytest.approx(0.2), alone=7.0)
    assert whole.ceiling.value == pytest.approx(5.0) and whole.ceiling.above_tokens_per_pass
    assert decode.ceiling.value == pytest.approx(20 / (6 / 0.95))


def test_passes_dearer_than_the_target_alones_step_put_the_ceiling_below_the_tokens_per_pass():
    trace = make_trace()
    trace.rounds = [dataclasses.replace(r, verify_time_s=0.25) for r in trace.rounds]  # 0.25 s a pass, 1/7 a token
    whole, _ = speedups(trace)
    assert whole.ceiling.value == pytest.approx(7 / 0.5 / 7) and not whole.ceiling.above_tokens_per_pass  # 2.0 < 3.5


def test_a_speedup_above_its_ceiling_is_beyond_it():
    """Ceiling 5.0: a median of 5.2 is beyond it; a range reaching above it with the median below is not."""
    assert speedups(timed(make_trace(), [0.5] * 3, [2.6] * 3))[0].beyond  # 5.2
    high_end = speedups(timed(make_trace(), [0.5] * 3, [1.0, 2.0, 2.7]))[0]  # 2, 4, 5.4
    assert high_end.value.high > high_end.ceiling.value and not high_end.beyond
    # decode's ceiling is the rounds after the first: 3.17 (above); the whole run's 3.3 is below its 5.0
    whole, decode = speedups(timed(make_trace(), [0.5] * 3, [1.65] * 3))
    assert decode.value.median == pytest.approx(3.3) and decode.beyond and not whole.beyond


def test_a_run_never_passes_its_own_ceiling():
    """Without turns, the ratio and the ceiling come from the same timings, and a run's passes are part of its wall
    clock; only a file whose passes add up to more than its wall clock is beyond (0.4 + 0.4 s in a 0.5 s run)."""
    assert not any(sp.beyond for sp in speedups(make_trace()) if sp)
    broken = make_trace()
    broken.rounds = [dataclasses.replace(r, verify_time_s=0.4) for r in broken.rounds]
    assert speedups(broken)[0].beyond


def test_rounds_with_no_pass_times_have_no_ceiling():
    trace = make_trace()
    trace.rounds = [dataclasses.replace(r, verify_time_s=0.0) for r in trace.rounds]
    whole, decode = speedups(trace)
    assert whole.ceiling is None and decode.ceiling is None and not whole.beyond


def test_no_baseline_no_speedup():
    assert speedups(make_trace(baseline=False)) is None and speedup_over_baseline(make_trace(baseline=False)) is None

"""record/stats.py's speedups as a paper publishes them: each turn's ratio, their median and range, and the ceiling a
speedup cannot pass (the tokens per target pass of the same rounds), on hand-made traces whose numbers are worked
out in the comments."""

import pytest

from specviz.record.stats import (Spread, decode_speedup, speedup_over_baseline, speedups, spread, turn_decode_speedups,
                                  turn_speedups)
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
    assert whole.value == Spread(2.0, 2.0, 2.0, 1) and not whole.beyond and whole.ceiling == 3.5


def test_a_speedup_above_the_tokens_per_pass_is_beyond_its_ceiling():
    """3.5 tokens a pass: a median of 3.6 is beyond it; a range reaching above it with the median below is not."""
    assert speedups(timed(make_trace(), [0.5] * 3, [1.8] * 3))[0].beyond  # 3.6
    high_end = speedups(timed(make_trace(), [0.5] * 3, [1.0, 1.5, 1.9]))[0]  # 2, 3, 3.8
    assert high_end.value.high > high_end.ceiling and not high_end.beyond
    # decode's ceiling is the rounds after the first: round 2 made 2 tokens in its one pass
    _, decode = speedups(timed(make_trace(), [0.5] * 3, [1.05] * 3))  # 2.1 > 2
    assert decode.ceiling == 2 and decode.beyond


def test_no_baseline_no_speedup():
    assert speedups(make_trace(baseline=False)) is None and speedup_over_baseline(make_trace(baseline=False)) is None

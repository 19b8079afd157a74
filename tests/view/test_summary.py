"""view/summary.py's speedups as a paper publishes them: the median with its range, the turns and the machine
named in the page's text, and no speedup above the tokens per target pass printed as a result (impossible for a
drafter that costs nothing, suspicious for any). Hand-made traces whose numbers are worked out beside them."""

import dataclasses
import re

from specviz.record.trace import Repeats, TimedRun
from specviz.view import summary
from tests.helpers import make_trace


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def with_turns(trace, run_seconds, alone_seconds, drafter="model"):
    trace.settings["drafter"] = drafter
    trace.baseline.repeats = Repeats([TimedRun(7, s, s / 10) for s in run_seconds],
                                     [TimedRun(7, s, s / 10) for s in alone_seconds], 1, "AMD EPYC, 2 cores, avx2")
    return trace


def test_the_speedup_is_printed_with_its_range_turns_and_machine():
    trace = with_turns(make_trace(), [0.5, 0.4, 0.5, 0.5, 1.0], [1.0, 1.0, 1.2, 0.9, 1.5])  # 2, 2.5, 2.4, 1.8, 1.5
    page = text(summary.summary_html(trace))
    assert "vs target alone 2.00× (1.50–2.50, 5 runs each, interleaved)" in page
    assert "Timed on AMD EPYC, 2 cores, avx2: 5 turns" in page and "after 1 untimed run of each" in page
    assert "each turn's ratio of tokens/s: 2.00, 2.50, 2.40, 1.80, 1.50" in page
    assert "on a shared machine the range is wide" in page


def test_the_run_shown_is_said_to_be_a_turn_or_timed_apart():
    turn = with_turns(make_trace(), [0.5, 0.6, 0.4], [1.0, 1.0, 1.0])  # the trace's own 0.5 s is a turn's
    assert "and so is the run shown" in text(summary.summary_html(turn))
    apart = with_turns(make_trace(), [0.45, 0.6, 0.4], [1.0, 1.0, 1.0])
    assert "the run shown was timed apart, before the turns (14.0 tok/s)" in text(summary.summary_html(apart))


def test_one_run_each_says_it_has_no_spread():
    page = text(summary.summary_html(make_trace()))  # 14 tok/s against 7
    assert "vs target alone 2.00× (one run each)" in page and "Timed once each, not in turns" in page


def test_a_speedup_above_the_tokens_per_pass_is_no_result():
    """3.5 tokens per target pass; the turns say 3.60×: not printed as a result, and said why in the page."""
    model = text(summary.summary_html(with_turns(make_trace(), [0.5] * 5, [1.8] * 5)))
    assert "vs target alone no result: above its ceiling, see below" in model
    assert "3.60× (3.60–3.60, 5 runs each, interleaved), is above the 3.50 tokens per target pass" in model
    assert "suspicious for any drafter" in model and "not shown as one" in model
    assert "vs target alone 3.60×" not in model
    lookup = text(summary.summary_html(with_turns(make_trace(), [0.5] * 5, [1.8] * 5, drafter="lookup")))
    assert "impossible for a drafter that costs nothing" in lookup


def test_the_decode_ratio_has_its_own_ceiling():
    """Round 2 made 2 tokens in its one pass: a decode ratio of 2.10 is above it while the whole run's is not."""
    page = text(summary.summary_html(with_turns(make_trace(), [0.5] * 5, [1.05] * 5)))
    assert "vs target alone 2.10× (2.10–2.10, 5 runs each, interleaved)" in page
    assert "The decode speed's measured ratio, 2.10× (2.10–2.10, 5 runs each, interleaved), is above the 2.00" in page
    assert "whole run's measured ratio" not in page


def test_a_file_naming_no_drafter_or_another_is_not_called_free():
    trace = with_turns(make_trace(), [0.5] * 5, [1.8] * 5)
    assert not summary.free_drafter(dataclasses.replace(trace, settings={"k": 4}))
    assert summary.free_drafter(dataclasses.replace(trace, settings={"drafter": "lookup"}))

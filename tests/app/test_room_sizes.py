"""What a phone downloads to follow a long lecture (issue 44): a real 64-round trace of the tiny pair, its page joined
at the start, half way and at the end, and its stream read through every reveal step of every round
(harness/room_pages.sizes; `python -m tools.room_bench --sizes` prints the same figures for docs/lecture.md). The
bounds would catch the page of before issue 44, which carried every round in full from the start."""

import pytest

from harness.room_pages import LONG_ROUNDS, long_trace, sizes


@pytest.mark.slow
def test_a_64_round_lecture_costs_a_phone_little():
    got = sizes(long_trace())
    start, middle, end = got["join_page_gzip_bytes_start_middle_end"]
    assert got["rounds"] == LONG_ROUNDS and got["steps"] > 3 * LONG_ROUNDS
    assert start <= 25_000 < got["old_page_gzip_bytes"] / 3, got  # the old page, every round from the start
    assert start < middle < end <= got["old_page_gzip_bytes"] + 100, got  # grows only with what was released
    assert got["stream_bytes_per_step_median"] <= 4_000 and got["stream_bytes_per_step_max"] <= 10_000, got

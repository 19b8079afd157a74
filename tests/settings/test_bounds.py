"""settings/bounds.py: a Bound allows numbers only (never a boolean, a string or NaN), says in words what it allows,
and checks a value into the number a run uses; whole_number reads a whole number from what a page or a file sends
and refuses the rest; short_repr keeps a message short whatever a client sent."""

import math

import pytest

from specviz.settings.bounds import (DEPTH_BOUND, MAX_K, RUN_BOUNDS, WIDTH_BOUND, Bound, short_repr, whole_number,
                                     widths_text)

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("value, number", [
    (3, 3), (0, 0), (-2, -2), (4.0, 4), ("3", 3), ("4.0", 4), ("1e3", 1000),  # a JSON object's keys arrive as text
])
def test_whole_number_reads_a_whole_number_from_a_number_or_its_text(value, number):
    assert whole_number(value) == number and type(whole_number(value)) is int


@pytest.mark.parametrize("value", [
    True, False, 2.5, "2.5", "x", "", None, NAN, INF, -INF, "nan", "inf", [3], {"k": 3},
])
def test_whole_number_refuses_booleans_fractions_words_and_nan(value):
    assert whole_number(value) is None


@pytest.mark.parametrize("value", [True, False, "4", None, NAN, [4], 1 + 0j])
def test_a_bound_allows_numbers_only(value):
    assert not RUN_BOUNDS["k"].allows(value) and not Bound(-INF, INF).allows(value)


def test_a_bound_holds_its_ends_open_or_closed_and_whole_or_not():
    top_p, confidence, k = RUN_BOUNDS["top_p"], RUN_BOUNDS["confidence"], RUN_BOUNDS["k"]
    assert not top_p.allows(0) and top_p.allows(1e-9) and top_p.allows(1) and not top_p.allows(1.0001)
    assert confidence.allows(0) and not confidence.allows(1)
    assert k.allows(1) and k.allows(MAX_K) and k.allows(4.0) and not k.allows(4.5) and not k.allows(MAX_K + 1)
    assert RUN_BOUNDS["max_new_tokens"].allows(10**9) and not RUN_BOUNDS["max_new_tokens"].allows(INF)


@pytest.mark.parametrize("bound, words", [
    (RUN_BOUNDS["k"], "a whole number from 1 to 16"),
    (RUN_BOUNDS["top_p"], "a number above 0 and at most 1"),
    (RUN_BOUNDS["confidence"], "a number at least 0 and below 1"),
    (RUN_BOUNDS["top_k"], "a whole number >= 0"),
    (RUN_BOUNDS["temperature"], "a number from 0 to 100"),
    (Bound(0, INF, open_low=True), "a number > 0"),
    (Bound(0.5, 2.5), "a number from 0.5 to 2.5"),
    (WIDTH_BOUND, "a whole number from 1 to 4"),
    (DEPTH_BOUND, "a whole number from 1 to 6"),
])
def test_a_bound_says_in_words_what_it_allows(bound, words):
    assert bound.describe() == words


def test_check_gives_the_number_a_run_uses_or_names_the_setting_and_what_it_allows():
    k = RUN_BOUNDS["k"]
    assert k.check(4.0, "K") == 4 and type(k.check(4.0, "K")) is int
    temperature = RUN_BOUNDS["temperature"].check(1, "temperature")
    assert temperature == 1.0 and type(temperature) is float
    for value, shown in [("4", "'4'"), (True, "True"), (NAN, "nan"), (17, "17")]:
        with pytest.raises(ValueError) as caught:
            k.check(value, "K")
        assert str(caught.value) == f"K must be a whole number from 1 to 16, got {shown}"


def test_within_says_whether_every_value_one_bound_allows_another_allows_too():
    k = RUN_BOUNDS["k"]
    assert Bound(1, 8, whole=True).within(k) and k.within(k)
    assert not Bound(0, 8, whole=True).within(k) and not Bound(1, 17, whole=True).within(k)
    assert not Bound(1, 8).within(k)  # fractions the whole bound refuses
    assert Bound(0, 1, open_low=True).within(RUN_BOUNDS["top_p"]) and not Bound(0, 1).within(RUN_BOUNDS["top_p"])


def test_short_repr_cuts_what_a_client_sent_to_40_characters():
    assert short_repr("hot") == "'hot'" and short_repr(True) == "True" and short_repr(math.nan) == "nan"
    cut = short_repr("9" * 5000)
    assert len(cut) == 40 and cut == "'" + "9" * 38 + "…"


def test_widths_are_written_with_dashes():
    assert widths_text((2, 2, 1, 1)) == "2-2-1-1" and widths_text([3]) == "3"

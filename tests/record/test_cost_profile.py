"""record/cost_profile.py: prices at a batch read from a made-up profile and worked by hand, and the one rule that no
longer pass is cheaper than a shorter one."""

import doctest

import pytest

from specviz.record import cost_profile
from specviz.record.cost_profile import CostProfile, Prices, never_cheaper


def profile() -> CostProfile:
    """A pass over n tokens costs 1 + 0.1·(n − 1) s; a step at batch b 1 + 0.05·(b − 1) s; a draft step 0.2 s at
    batch 1 and 0.4 s at 4."""
    tokens = [1, 2, 4, 8, 16, 32]
    return CostProfile("cpu", "float32", "d", "t", 16, tokens, [1 + 0.1 * (n - 1) for n in tokens], [1, 4],
                       [1.0, 1.15], [0.2, 0.4])


def test_its_examples_hold():
    assert doctest.testmod(cost_profile).failed == 0


def test_prices_at_a_batch_are_the_batchs_own_steps():
    """At B = 4: c = 0.4 / 1.15; v(K) = t(4·(K + 1)) / 1.15, t(8) = 1.7 and t(12) = 2.1 (between 8 and 16)."""
    at = profile().prices_at(4, 2)
    assert at.batch == 4 and at.step_s == pytest.approx(1.15) and at.draft_s == pytest.approx(0.4)
    assert at.c == pytest.approx(0.4 / 1.15)
    assert at.v == pytest.approx([1.0, 1.7 / 1.15, 2.1 / 1.15])


def test_at_batch_one_they_are_the_profiles_c_and_v():
    p = profile()
    assert p.c == pytest.approx(0.2) and p.prices_at(1, 4).c == p.c
    assert [p.v(k) for k in range(5)] == p.prices_at(1, 4).v == pytest.approx([1.0, 1.1, 1.2, 1.3, 1.4])


def test_a_batch_measured_only_at_one_grows_the_draft_as_the_target():
    one = CostProfile("cpu", "float32", "d", "t", 16, [1, 8], [1.0, 1.7], [1], [1.0], [0.2])
    assert one.prices_at(4, 1).step_s == pytest.approx(1.3) and one.prices_at(4, 1).c == pytest.approx(0.2)


def test_no_longer_pass_is_cheaper_and_none_cheaper_than_the_step():
    assert never_cheaper([2.0, 1.0, 3.0, 2.5]) == [1.0, 1.0, 2.5, 2.5]
    falls = Prices(1, step_s=1.0, draft_s=0.1, pass_s=(1.0, 0.9, 1.4, 1.2))
    assert falls.steady().v == [1.0, 1.0, 1.2, 1.2] and falls.v == [1.0, 0.9, 1.4, 1.2]  # as measured: it falls

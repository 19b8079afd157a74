"""engine/batch_prices.py: a batch's rounds priced by their own clock, the profile filling in the rest. Hand-made
profiles and clock readings: what was measured prices itself, what was not is the profile's figure scaled by the
nearest measurement, and the prices turn the rule (negative control: the profile alone drafts)."""

import pytest

from specviz.algorithm.batch_rule import Positions, choose_k
from specviz.engine.batch_prices import KEEP, BatchPrices
from specviz.record.cost_profile import CostProfile


def profile() -> CostProfile:
    """A pass over n tokens costs 1 + 0.05·(n − 1) s at batch 1; a step at batch b, 1 + 0.05·(b − 1); a draft step
    0.2 s at every batch: verify passes nearly free, so the profile alone says draft."""
    tokens = [1, 2, 5, 8, 16, 40, 64]
    batches = [1, 2, 4, 8]
    return CostProfile("cpu", "float32", "d", "t", 16, tokens, [1 + 0.05 * (n - 1) for n in tokens], batches,
                       [1 + 0.05 * (b - 1) for b in batches], [0.2] * len(batches))


def test_a_measured_round_prices_itself_by_its_median():
    prices = BatchPrices(profile())
    for rest in (3.0, 9.0, 4.0):
        prices.add(8, 4, draft_s=4 * 0.5, rest_s=rest)
    assert prices.rest(8, 4) == 4.0 and prices.draft(8) == 0.5
    for _ in range(KEEP):  # only the last KEEP count: the machine's present, not its past
        prices.add(8, 4, draft_s=2.0, rest_s=6.0)
    assert prices.rest(8, 4) == 6.0


def test_an_unmeasured_k_is_the_profile_scaled_by_the_nearest_measured_k_at_that_batch():
    prices = BatchPrices(profile())
    prices.add(8, 1, draft_s=0.2, rest_s=2 * (1 + 0.05 * 15))  # twice what one sequence's pass over 16 costs
    assert prices.rest(8, 4) == pytest.approx(2 * (1 + 0.05 * 39))
    assert prices.rest(4, 4) == pytest.approx(2 * (1 + 0.05 * 19))  # no round at 4 users: every batch's scale


def test_a_draft_that_caught_up_after_plain_rounds_does_not_price_a_draft_step():
    prices = BatchPrices(profile())
    prices.add(8, 1, draft_s=None, rest_s=2.0)  # its one step fed every token the plain rounds committed
    assert 8 not in prices.drafts and prices.rest(8, 1) == 2.0
    prices.add(8, 2, draft_s=0.6, rest_s=2.5)
    assert prices.draft(8) == 0.3


def test_nothing_measured_is_the_profile_itself():
    prices = BatchPrices(profile())
    assert prices.rest(8, 0) == pytest.approx(1.35) and prices.rest(8, 4) == pytest.approx(1 + 0.05 * 39)
    assert prices.c(8) == pytest.approx(0.2 / 1.35)


def test_measured_rounds_stop_a_batch_drafting_where_the_profile_alone_would_draft():
    """Eight sequences that keep most drafts: priced by the profile, it drafts; once the batch's rounds show a verify
    pass of 5 positions a row costing 5 steps, K = 0."""
    keen = [Positions([9, 9, 9, 9], [8, 7, 6, 5]) for _ in range(8)]
    prices = BatchPrices(profile())
    assert choose_k(keen, prices.c(8), lambda k: prices.v(8, k), 4).k > 0  # the negative control
    prices.add(8, 0, draft_s=0.0, rest_s=1.4)
    prices.add(8, 4, draft_s=4 * 0.3, rest_s=7.0)
    prices.add(8, 1, draft_s=0.3, rest_s=2.8)
    assert choose_k(keen, prices.c(8), lambda k: prices.v(8, k), 4).k == 0

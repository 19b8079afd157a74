"""algorithm/batch_rule.py: the cost-aware rule for a batch, by hand-worked prices. Cheap verify passes (small B, the
weights read once) make drafting pay; a pass that costs its positions in full (large B, compute-bound) makes K = 0
the answer; a batch that drafts poorly drafts less; after PROBE_EVERY_WHERE_IT_COULD_PAY plain rounds one round
probes with K = 1."""

import doctest

import pytest

from specviz.algorithm import batch_rule
from specviz.algorithm.acceptance import PRIOR, PROBE_EVERY_WHERE_IT_COULD_PAY, Positions
from specviz.algorithm.batch_rule import choose_k
from specviz.algorithm.theory import expected_tokens_per_pass


def steady(a: float, n: int = 10 ** 6) -> Positions:
    """A sequence that kept a share a of its drafts at every position, seen so often that the prior does not count."""
    return Positions([n] * 16, [round(a * n)] * 16)


def test_its_examples_hold():
    assert doctest.testmod(batch_rule).failed == 0


def test_a_round_s_rates_are_its_expected_tokens_over_its_cost():
    """B = 2 at a steady 0.8 and 0.5, c = 0.25, v(K) = 1 + 0.2·K: each rate is Σ E_b(K) / (K·c + v(K)), and with
    the same acceptance at every position E_b(K) is E(α, K) = (1 − α^(K+1)) / (1 − α)."""
    choice = choose_k([steady(0.8), steady(0.5)], 0.25, lambda k: 1 + 0.2 * k, 3)
    for k, rate in enumerate(choice.rates):
        expected = (expected_tokens_per_pass(0.8, k) + expected_tokens_per_pass(0.5, k)) / (k * 0.25 + 1 + 0.2 * k)
        assert rate == pytest.approx(expected, rel=1e-5)
    assert choice.rates[0] == pytest.approx(2.0)  # the target alone at B = 2: two tokens a step
    assert choice.k == max(range(4), key=lambda k: choice.rates[k]) and choice.batch == 2


def test_the_batch_drafts_less_as_the_verify_pass_turns_compute_bound():
    alphas = [steady(0.8)] * 4
    ks = [choose_k(alphas, 0.3, lambda k, slope=slope: 1 + slope * k, 8).k for slope in (0.05, 0.3, 0.6, 1.0)]
    assert ks == sorted(ks, reverse=True) and ks[0] > 1 and ks[-1] == 0, ks


def test_a_batch_that_drafts_poorly_drafts_less():
    cheap = lambda k: 1 + 0.1 * k  # noqa: E731
    assert choose_k([steady(0.9)] * 4, 0.3, cheap, 8).k > choose_k([steady(0.3)] * 4, 0.3, cheap, 8).k


def test_after_plain_rounds_one_round_probes_where_a_kept_draft_could_pay():
    """c + v(1) = 1.8: a draft every sequence kept would pay, so a probe can find one; at 2.3 none could (the
    negative control: many users, where the probe only costs)."""
    fair = lambda k: 1 + 0.5 * k  # noqa: E731
    assert choose_k([steady(0.5)], 0.3, fair, 4, plain_rounds=PROBE_EVERY_WHERE_IT_COULD_PAY - 1).k == 0
    probe = choose_k([steady(0.5)], 0.3, fair, 4, plain_rounds=PROBE_EVERY_WHERE_IT_COULD_PAY)
    assert probe.k == 1 and probe.probe and probe.why().endswith("→ K = 1 to measure again")
    dear = lambda k: 1 + 1.0 * k  # noqa: E731
    assert choose_k([steady(0.5)], 0.3, dear, 4, plain_rounds=10 * PROBE_EVERY_WHERE_IT_COULD_PAY).k == 0


def test_the_why_prints_the_numbers_it_chose_by():
    choice = choose_k([Positions(), Positions()], 0.25, lambda k: 1 + 0.5 * k, 2)  # nothing seen: every a(n) = 1
    assert choice.why() == ("B = 2, c = 0.25, v(1…2) = 1.5 2.0: tokens a step 2.0 (K = 0), 2.3, 2.4 → K = 2")


def test_a_new_sequence_starts_from_what_earlier_sequences_kept():
    """Nothing seen of its own: the prior is the pooled rate (0.5 here), not 1; with no pool, 1 (the negative
    control). Its own verdicts then count beside PRIOR pseudo-drafts at that rate."""
    pooled = steady(0.5)
    fresh = Positions()
    assert fresh.acceptance(1, pooled) == pytest.approx(0.5) and fresh.acceptance(1) == 1.0
    assert fresh.expected(2, pooled) == pytest.approx(1.75) and fresh.expected(2) == 3.0
    fresh.add(1, 1)
    assert fresh.acceptance(1, pooled) == pytest.approx((1 + PRIOR * 0.5) / (1 + PRIOR))
    dear = lambda k: 1 + 0.6 * k  # noqa: E731
    assert choose_k([Positions()] * 4, 0.3, dear, 4).k > 0 and choose_k([Positions()] * 4, 0.3, dear, 4, pooled=pooled).k == 0


def test_a_draft_that_must_catch_up_pays_its_share_of_the_rounds_left():
    """Four sequences whose drafts would just pay (K = 1 gives 4.1 tokens a step against 4.0) but whose draft caches
    lag 2 steps each: with 40 tokens left, each round of K = 1 pays 8 / (40 / 1.9) = 0.38 more steps, and K = 0
    wins; with 400 left, 0.04 a round, and K = 1 still does (the negative control: no catch-up, K = 1)."""
    four = [steady(0.9)] * 4
    v = lambda k: 1 + 0.5 * k  # noqa: E731
    assert choose_k(four, 0.35, v, 1).k == 1
    lagging = choose_k(four, 0.35, v, 1, catch_up=[2.0] * 4, left=[40] * 4)
    assert lagging.k == 0 and lagging.rates[1] == pytest.approx(4 * 1.9 / (0.35 + 1.5 + 8 / (40 / 1.9)))
    assert "catch-up 8.0" in lagging.why()
    assert choose_k(four, 0.35, v, 1, catch_up=[2.0] * 4, left=[400] * 4).k == 1

"""algorithm/batch_rule.py: the cost-aware rule for a batch, by hand-worked prices. Cheap verify passes (small B, the
weights read once) make drafting pay; a pass that costs its positions in full (large B, compute-bound) makes K = 0
the answer; a batch that drafts poorly drafts less; after PROBE_EVERY plain rounds one round probes with K = 1."""

import doctest

import pytest

from specviz.algorithm import batch_rule
from specviz.algorithm.batch_rule import PROBE_EVERY, acceptance, choose_k
from specviz.algorithm.theory import expected_tokens_per_pass


def test_its_examples_hold():
    assert doctest.testmod(batch_rule).failed == 0


def test_a_round_s_rates_are_its_expected_tokens_over_its_cost():
    """B = 2 at α 0.8 and 0.5, c = 0.25, v(K) = 1 + 0.2·K: each rate is Σ E(α_b, K) / (K·c + v(K))."""
    choice = choose_k([0.8, 0.5], 0.25, lambda k: 1 + 0.2 * k, 3)
    for k, rate in enumerate(choice.rates):
        expected = (expected_tokens_per_pass(0.8, k) + expected_tokens_per_pass(0.5, k)) / (k * 0.25 + 1 + 0.2 * k)
        assert rate == pytest.approx(expected)
    assert choice.rates[0] == pytest.approx(2.0)  # the target alone at B = 2: two tokens a step
    assert choice.k == max(range(4), key=lambda k: choice.rates[k]) and choice.batch == 2


def test_the_batch_drafts_less_as_the_verify_pass_turns_compute_bound():
    alphas = [0.8] * 4
    ks = [choose_k(alphas, 0.3, lambda k, slope=slope: 1 + slope * k, 8).k for slope in (0.05, 0.3, 0.6, 1.0)]
    assert ks == sorted(ks, reverse=True) and ks[0] > 1 and ks[-1] == 0, ks


def test_a_batch_that_drafts_poorly_drafts_less():
    cheap = lambda k: 1 + 0.1 * k  # noqa: E731
    assert choose_k([0.9] * 4, 0.3, cheap, 8).k > choose_k([0.3] * 4, 0.3, cheap, 8).k


def test_after_plain_rounds_one_round_probes():
    dear = lambda k: 1 + 1.0 * k  # noqa: E731
    assert choose_k([0.5], 0.3, dear, 4, plain_rounds=PROBE_EVERY - 1).k == 0
    probe = choose_k([0.5], 0.3, dear, 4, plain_rounds=PROBE_EVERY)
    assert probe.k == 1 and probe.probe and probe.why().endswith("→ K = 1 to measure again")


def test_the_why_prints_the_numbers_it_chose_by():
    choice = choose_k([1.0, 1.0], 0.25, lambda k: 1 + 0.5 * k, 2)
    assert choice.why() == ("B = 2, c = 0.25, v(1…2) = 1.5 2.0: tokens a step 2.0 (K = 0), 2.3, 2.4 → K = 2")


def test_a_new_sequence_starts_at_full_acceptance_and_learns():
    assert acceptance(0, 0) == 1.0 and acceptance(1, 3) == pytest.approx(0.5)

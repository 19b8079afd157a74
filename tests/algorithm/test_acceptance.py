"""algorithm/acceptance.py: acceptance by draft position, worked by hand. Verdicts counted per position beside the
prior; S(n) the running product; E(K) = 1 + S(1) + … + S(K), which with one α at every position is theory's closed
form (1 − α^(K+1)) / (1 − α)."""

import doctest

import pytest

from specviz.algorithm import acceptance
from specviz.algorithm.acceptance import PRIOR, Positions, expected_tokens, survival
from specviz.algorithm.theory import expected_tokens_per_pass


def test_its_examples_hold():
    assert doctest.testmod(acceptance).failed == 0


def test_acceptance_is_kept_by_position_and_falls_along_a_round():
    """Rounds of 4 drafts: kept 4; kept 1 (position 2 rejected); kept 0 (position 1 rejected)."""
    seq = Positions()
    for examined, kept in ((4, 4), (2, 1), (1, 0)):
        seq.add(examined, kept)
    assert seq.examined == [3, 2, 1, 1] and seq.kept == [2, 1, 1, 1]
    a1, a2 = (2 + PRIOR) / (3 + PRIOR), (1 + PRIOR) / (2 + PRIOR)
    assert seq.acceptance(1) == pytest.approx(a1) and seq.acceptance(2) == pytest.approx(a2)
    assert seq.acceptance(9) == 1.0  # never examined: the prior alone
    assert seq.expected(2) == pytest.approx(1 + a1 + a1 * a2) and Positions().expected(3) == 4.0


def test_survival_carries_on_from_the_drafts_before():
    """From a start of 0.5 (the drafts so far), each a(n) multiplies in: 0.5·0.8, then ·0.5."""
    assert list(survival([0.8, 0.5], start=0.5)) == pytest.approx([0.4, 0.2])
    assert list(survival([])) == [] and expected_tokens([]) == 1.0  # K = 0: the target's own token


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.83, 0.99])
@pytest.mark.parametrize("k", [0, 1, 4, 12])
def test_one_alpha_at_every_position_is_theorys_closed_form(alpha, k):
    assert expected_tokens([alpha] * k) == pytest.approx(expected_tokens_per_pass(alpha, k))
    assert expected_tokens([alpha, alpha / 2] + [alpha] * k) < expected_tokens([alpha] * (k + 2)) or alpha == 0

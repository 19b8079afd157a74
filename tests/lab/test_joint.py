"""joint.py: the first two tokens together. The exact sum over paths equals the target's joint (a proof by
computation, on many pairs); the Monte Carlo follows it; one draw reused for both positions is caught."""

import random

import pytest
import torch

from specviz.lab import joint
from specviz.lab import playground as lab


def random_pair(seed: int) -> lab.ToyPair:
    rng = random.Random(seed)
    weights = lambda: [rng.random() ** 2 + (0 if rng.random() < 0.3 else 0.01) for _ in range(5)]  # noqa: E731
    return lab.pair_from_weights([f"t{i}" for i in range(5)], weights(), weights())


@pytest.mark.parametrize("pair", [*lab.TOY_PAIRS.values(), *(random_pair(s) for s in range(30))])
def test_the_exact_joint_of_the_correct_sampler_is_the_targets(pair):
    assert torch.allclose(joint.exact_joint(pair, "correct"), joint.target_joint(pair), atol=1e-12)
    assert joint.exact_joint(pair, "one_draw").sum().item() == pytest.approx(1.0)


def test_position_two_depends_on_the_first_token():
    target = joint.target_joint(lab.SEED_EXAMPLE)
    conditional = target / target.sum(1, keepdim=True)
    assert not torch.allclose(conditional[0], conditional[1])  # a conditional draw, not one position twice


@pytest.mark.parametrize("sampler", ["correct", "one_draw"])
def test_the_monte_carlo_follows_its_exact_joint(sampler):
    mc = joint.two_positions(lab.SEED_EXAMPLE, 100_000, sampler, seed=3)
    exact = joint.exact_joint(lab.SEED_EXAMPLE, sampler).flatten().tolist()
    frequencies = [c / mc.n for row in mc.counts for c in row]
    assert lab.total_variation(frequencies, exact) < 3 * mc.noise


def test_one_draw_for_both_positions_is_caught_and_the_correct_sampler_is_not():
    good = joint.two_positions(lab.SEED_EXAMPLE, 100_000, "correct", seed=1)
    bad = joint.two_positions(lab.SEED_EXAMPLE, 100_000, "one_draw", seed=1)
    assert good.faithful and good.tv < 3 * good.noise
    assert not bad.faithful and bad.exact_tv == pytest.approx(0.18) and bad.tv > 10 * bad.noise


@pytest.mark.parametrize("kwargs, word", [(dict(n=0), "N must"), (dict(n=10**6), "N must"), (dict(n=2.5), "N must"),
                                          (dict(sampler="x"), "sampler"), (dict(seed=-1), "seed")])
def test_bad_settings_are_named(kwargs, word):
    with pytest.raises(ValueError, match=word):
        joint.two_positions(lab.SEED_EXAMPLE, **{"n": 100, **kwargs})

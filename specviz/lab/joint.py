"""Two positions at once: the first two output tokens of speculative decoding follow the target's joint
distribution, not only each position on its own.

The toy pair gives position 1 (p₁ = p, q₁ = q). Position 2 depends on the first token: its p₂(·|a) and q₂(·|a)
are p and q rotated by a's index, so the second token is a conditional draw, as in a real text. One round drafts
x₁ ~ q₁ and x₂ ~ q₂(·|x₁) and tests them in order; after a rejection at position 1 the replacement is the first
token and the next round, drafting afresh, gives the second. The wrong sampler reuses one draw r for both
positions, a bug public implementations shipped: the two decisions become correlated.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from specviz.lab.playground import ToyPair, check_monte_carlo, noise_limit, noise_tv, total_variation
from specviz.algorithm.sampling import residual_distribution

JOINT_SAMPLER_LABELS = {  # the two-position samplers, as offered: key -> what the page calls it
    "correct": "correct: a fresh draw r at each position",
    "one_draw": "wrong: one draw r for both positions",
}


def conditionals(dist: tuple[float, ...]) -> torch.Tensor:
    """(V, V): row a is `dist` rotated by a places, the position-2 distribution after first token a."""
    base = torch.tensor(dist, dtype=torch.float64)
    return torch.stack([torch.roll(base, a) for a in range(len(dist))])


def target_joint(pair: ToyPair) -> torch.Tensor:
    """(V, V) p(a, b) = p₁(a) · p₂(b | a): what the target alone gives for its first two tokens."""
    return torch.tensor(pair.p, dtype=torch.float64)[:, None] * conditionals(pair.p)


def _tables(pair: ToyPair):
    """Position 1 and 2: p, q, acceptance min(1, p/q) and residual, each (V,) for position 1, (V, V) for 2."""
    p1, q1 = torch.tensor(pair.p, dtype=torch.float64), torch.tensor(pair.q, dtype=torch.float64)
    p2, q2 = conditionals(pair.p), conditionals(pair.q)
    accept1 = torch.where(q1 > 0, (p1 / q1.clamp(min=1e-300)).clamp(max=1), torch.ones_like(q1))
    accept2 = torch.where(q2 > 0, (p2 / q2.clamp(min=1e-300)).clamp(max=1), torch.ones_like(q2))
    residual2 = torch.stack([residual_distribution(p2[a], q2[a]) for a in range(len(pair.p))])
    return p1, q1, accept1, residual_distribution(p1, q1), p2, q2, accept2, residual2


def exact_joint(pair: ToyPair, sampler: str) -> torch.Tensor:
    """(V, V) the distribution a sampler's first two tokens follow, by summing over its paths:

    both drafts kept · x₁ kept, x₂ rejected (x₂'s replacement) · x₁ rejected (its replacement, then a fresh
    round, exact for one position, gives p₂(·|a)). With a fresh draw per position both are kept with
    probability A₁·A₂; with one draw, with min(A₁, A₂)."""
    p1, q1, a1, r1, p2, q2, a2, r2 = _tables(pair)
    both = a1[:, None] * a2 if sampler == "correct" else torch.minimum(a1[:, None], a2)  # (x₁, x₂)
    kept_then_rejected = (q2 * (a1[:, None] - both)).sum(1)  # (a,) x₁ = a kept, x₂ rejected
    joint = q1[:, None] * (q2 * both + kept_then_rejected[:, None] * r2)
    rejected_first = (q1 * (1 - a1)).sum()
    return joint + rejected_first * r1[:, None] * p2


def sample_joint(pair: ToyPair, n: int, sampler: str, generator: torch.Generator) -> torch.Tensor:
    """(n, 2) first two tokens of n independent runs, drawn as the engine would with K = 2."""
    p1, q1, a1, r1, p2, q2, a2, r2 = _tables(pair)
    x1 = torch.multinomial(q1, n, replacement=True, generator=generator)
    x2 = torch.multinomial(q2[x1], 1, generator=generator)[:, 0]
    u1 = torch.rand(n, generator=generator, dtype=torch.float64)
    u2 = u1 if sampler == "one_draw" else torch.rand(n, generator=generator, dtype=torch.float64)
    kept1, kept2 = u1 < a1[x1], u2 < a2[x1, x2]
    first = torch.where(kept1, x1, torch.multinomial(r1, n, replacement=True, generator=generator))
    second_if_kept = torch.where(kept2, x2, torch.multinomial(r2[x1], 1, generator=generator)[:, 0])
    # after a rejection at position 1, a fresh round at position 2, given the replacement
    y = torch.multinomial(q2[first], 1, generator=generator)[:, 0]
    fresh = torch.rand(n, generator=generator, dtype=torch.float64) < a2[first, y]
    second_fresh = torch.where(fresh, y, torch.multinomial(r2[first], 1, generator=generator)[:, 0])
    return torch.stack([first, torch.where(kept1, second_if_kept, second_fresh)], 1)


@dataclass(frozen=True)
class JointMonteCarlo:
    sampler: str  # key of JOINT_SAMPLER_LABELS
    n: int
    seed: int
    tokens: tuple[str, ...]
    target: list[list[float]]  # p(a, b)
    counts: list[list[int]]  # runs whose first two tokens were (a, b)
    exact_tv: float  # TV(the sampler's exact joint, the target's): 0 for the correct sampler
    seconds: float

    @property
    def tv(self) -> float:
        """TV(histogram of pairs, the target's joint)."""
        return total_variation([c / self.n for row in self.counts for c in row], [x for row in self.target for x in row])

    @property
    def noise(self) -> float:
        return noise_tv([x for row in self.target for x in row], self.n)

    @property
    def noise_99(self) -> float:
        """The TV an exact sampler's pairs stay below in 99 of 100 runs of this N (noise_limit)."""
        return noise_limit(tuple(x for row in self.target for x in row), self.n)

    @property
    def faithful(self) -> bool:
        return self.exact_tv < 1e-9


def two_positions(pair: ToyPair, n: int, sampler: str = "correct", seed: int = 0) -> JointMonteCarlo:
    """n runs' first two tokens against the target's joint distribution."""
    check_monte_carlo(n, sampler, JOINT_SAMPLER_LABELS, seed)
    t0 = time.perf_counter()
    pairs = sample_joint(pair, n, sampler, torch.Generator().manual_seed(seed))
    v = len(pair.tokens)
    counts = torch.bincount(pairs[:, 0] * v + pairs[:, 1], minlength=v * v).reshape(v, v).tolist()
    target = target_joint(pair)
    exact = total_variation(exact_joint(pair, sampler).flatten().tolist(), target.flatten().tolist())
    return JointMonteCarlo(sampler, n, seed, pair.tokens, target.tolist(), counts, exact, time.perf_counter() - t0)

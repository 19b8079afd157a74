"""The cost model of speculative decoding, as formulas (Leviathan et al. 2023; p = target, q = draft).

With i.i.d. acceptance α, a round of K drafts yields E(α, K) = (1 − α^(K+1)) / (1 − α) tokens for one target
pass. A round costs K draft steps and one verify pass over K + 1 tokens; measured in one-token target steps t(1):

    c = t_draft / t(1)            the cost of one draft step
    v = t(K+1) / t(1)             the cost of the verify pass (1 when reading the weights dominates: memory-bound)
    speedup = E / (K·c + v)

The Lab's explorer, the benchmark's prediction and the cost panel all use these, so they agree by construction.
"""

from __future__ import annotations


def expected_tokens_per_pass(alpha: float, k: float) -> float:
    """E = (1 - α^(K+1)) / (1 - α): expected tokens per target pass for i.i.d. acceptance α, the closed form of
    E(K) = 1 + S(1) + … + S(K) with S(n) = α^n (acceptance.expected_tokens, for an acceptance per draft position).

    >>> round(expected_tokens_per_pass(0.7, 4), 2)
    2.77
    """
    if alpha >= 1.0:
        return float(k + 1)
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def round_cost(k: float, c: float, v: float = 1.0) -> float:
    """K·c + v: what a round costs in one-token target steps (K draft steps, then the verify pass).

    >>> round_cost(4, 0.05)
    1.2
    """
    return k * c + v


def speedup(alpha: float, k: float, c: float, v: float = 1.0) -> float:
    """Wall-time speedup over target-only decoding: E / (K·c + v).

    >>> round(speedup(0.7, 4, 0.05), 2)
    2.31
    """
    return expected_tokens_per_pass(alpha, k) / round_cost(k, c, v)


def round_size_probs(alpha: float, k: int) -> list[float]:
    """P(a round yields j + 1 tokens), j = 0..K: (1 − α)α^j for j < K (j accepted, then a replacement),
    α^K for K + 1 (all accepted, plus the bonus).

    >>> round_size_probs(0.5, 2)
    [0.5, 0.25, 0.25]
    """
    return [(1 - alpha) * alpha**j for j in range(k)] + [alpha**k]

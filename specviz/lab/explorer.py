"""The α / K / c / v explorer and its "test yourself" question.

The explorer draws the cost model of algorithm/theory.py against K for one α, c and v; `Question` is the Lab's card
that asks for one point of it. What a recorded trace measured in the same terms is measure/measured.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.settings.bounds import MAX_K
from specviz.algorithm.theory import expected_tokens_per_pass, round_size_probs, speedup


@dataclass(frozen=True)
class Explorer:
    alpha: float
    k: int
    c: float  # a draft step, in one-token target steps
    v: float  # the verify pass over K + 1 tokens, in one-token target steps (1: memory-bound ideal)
    ks: list[int]  # 1..MAX_K, the x axis
    expected: list[float]  # E per K
    speedups: list[float]  # E / (K·c + v) per K
    best_k: int  # argmax of speedups (the smallest K on a tie)
    round_probs: list[float]  # round_size_probs(alpha, k)

    @property
    def expected_at_k(self) -> float:
        return self.expected[self.k - 1]

    @property
    def speedup_at_k(self) -> float:
        return self.speedups[self.k - 1]

    @property
    def best_speedup(self) -> float:
        return self.speedups[self.best_k - 1]


def explore(alpha: float, k: int, c: float, v: float = 1.0, k_max: int = MAX_K) -> Explorer:
    """The curves for one α, c and v; v is taken as the same for every K on the axis (a simplification the page
    states: a measured v grows slowly with K)."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"α must be in [0, 1], got {alpha!r}")
    if not 1 <= k <= k_max:
        raise ValueError(f"K must be from 1 to {k_max}, got {k!r}")
    if not c >= 0:
        raise ValueError(f"c must be >= 0, got {c!r}")
    if not v > 0:
        raise ValueError(f"v must be > 0, got {v!r}")
    ks = list(range(1, k_max + 1))
    speedups = [speedup(alpha, j, c, v) for j in ks]
    best = ks[max(range(len(ks)), key=lambda i: (speedups[i], -i))]
    return Explorer(alpha, k, c, v, ks, [expected_tokens_per_pass(alpha, j) for j in ks], speedups, best,
                    round_size_probs(alpha, k))


@dataclass(frozen=True)
class Question:
    """The Lab's "test yourself" card: a pair's α, K and c, verified at v = 1 (the memory-bound ideal), and the
    target's speed alone, a figure the question assumes (nothing on the page measures it)."""

    alpha: float
    k: int
    c: float
    target_tokens_per_s: float

    def __post_init__(self):
        if not (0 <= self.alpha < 1 and 1 <= self.k <= MAX_K and self.c >= 0 and self.target_tokens_per_s > 0):
            raise ValueError(f"not a question the card can work: {self!r}")

    def asks(self, ex: Explorer) -> bool:
        """Whether the explorer sits at this question's α, K, c and v = 1, where it would show the answer."""
        return (ex.k == self.k and abs(ex.alpha - self.alpha) < 1e-9 and abs(ex.c - self.c) < 1e-9
                and abs(ex.v - 1) < 1e-9)


QUESTION = Question(alpha=0.7, k=4, c=0.05, target_tokens_per_s=30)  # the project brief's closing question (issue 13)

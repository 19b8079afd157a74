"""Acceptance by draft position: what drafts did at each position of a round (1, 2, …), and what a round is expected
to yield from it. Both cost-aware rules read it: the single run's stop rule (cost_rule.py), for the run's drafts,
and the batch's rule (batch_rule.py), for each sequence's and for every sequence's pooled.

    a(n)   the chance the n-th draft survives, given every draft before it did: of the drafts examined at n, the
           share kept, beside PRIOR pseudo-drafts kept at a prior rate (1 where nothing is known)
    S(n) = a(1) · … · a(n)                 the chance the n-th draft survives (`survival`)
    E(K) = 1 + S(1) + … + S(K)              the tokens a round of K drafts yields on average (`expected_tokens`)

The 1 in E(K) is the token verification adds (a replacement, or the bonus after K kept). Acceptance falls along a
round (the draft drifts from the target), so a(n) is kept per position; with one α at every position E(K) is
theory.expected_tokens_per_pass, (1 − α^(K+1)) / (1 − α), its closed form.

    >>> seen = Positions()
    >>> seen.add(2, 1)                      # a round of 2 drafts: the first kept, the second rejected
    >>> seen.acceptance(1), seen.acceptance(2), seen.acceptance(3)   # (1 + 1) / (1 + 1), (0 + 1) / (1 + 1), prior
    (1.0, 0.5, 1.0)
    >>> seen.expected(2)                    # 1 + 1.0 + 1.0 · 0.5
    2.5

A rule that has stopped drafting no longer measures acceptance, so after plain rounds (K = 0) in a row it drafts once
anyway, to notice text turning predictable: a probe. The two rules probe at different intervals because their probes
risk different things (below).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

PRIOR = 1.0  # pseudo-drafts behind every position's acceptance, kept at the prior rate: a run (or a new sequence)
#              with nothing measured drafts and measures, rather than trusting nothing or one lucky draft
PROBE_EVERY_AT_ANY_PRICE = 16  # plain rounds after which the single run's rule drafts one anyway, whatever it costs
#       there: rarely, since each probe that cannot pay is paid for (its price on a short run: docs/benchmarks.md)
PROBE_EVERY_WHERE_IT_COULD_PAY = 8  # plain rounds after which the batch's rule drafts K = 1 anyway: it probes only
#       where a draft every sequence kept would pay (c + v_B(1) < 2), so a probe risks little and can come more often


@dataclass
class Positions:
    """Drafts by draft position (1, 2, …): how many verification examined there, how many it kept."""

    examined: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)

    def add(self, n_examined: int, n_kept: int) -> None:
        """A round's verdict: positions 1 … n_examined examined, 1 … n_kept kept."""
        while len(self.examined) < n_examined:
            self.examined.append(0)
            self.kept.append(0)
        for n in range(n_examined):
            self.examined[n] += 1
            self.kept[n] += n < n_kept

    def acceptance(self, n: int, pooled: "Positions | None" = None) -> float:
        """a(n): the share kept at position n (1-based) of those examined there, with PRIOR pseudo-drafts kept at
        `pooled`'s a(n) (None: all kept)."""
        seen = self.examined[n - 1] if n <= len(self.examined) else 0
        kept = self.kept[n - 1] if n <= len(self.kept) else 0
        prior = pooled.acceptance(n) if pooled is not None else 1.0
        return (kept + PRIOR * prior) / (seen + PRIOR)

    def expected(self, k: int, pooled: "Positions | None" = None) -> float:
        """E(K) = 1 + S(1) + … + S(K): the tokens a round of K drafts is expected to give."""
        return expected_tokens(self.acceptance(n, pooled) for n in range(1, k + 1))


def survival(acceptances: Iterable[float], start: float = 1.0) -> Iterator[float]:
    """S(n) for each a(n) in turn, the running product from `start` (the chance the drafts before the first of them
    survive: 1 at the start of a round).

    >>> list(survival([0.9, 0.5, 0.5]))
    [0.9, 0.45, 0.225]
    """
    survive = start
    for a in acceptances:
        survive *= a
        yield survive


def expected_tokens(acceptances: Iterable[float]) -> float:
    """E(K) = 1 + S(1) + … + S(K) for a(1) … a(K).

    >>> expected_tokens([0.9, 0.5, 0.5])
    2.575
    """
    total = 1.0
    for survive in survival(acceptances):
        total += survive
    return total

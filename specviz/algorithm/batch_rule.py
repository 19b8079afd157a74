"""The cost-aware rule for a batch: how many drafts a round of B sequences makes, priced by what the whole batch
pays. Every sequence in a round gets the same K (the batch drafts in lockstep, engine/batched.py), and one target
pass verifies all of them: B·(K + 1) positions. At small B that pass costs little more than a one-token step,
since reading the weights dominates; as B grows it turns into compute, and each extra draft position costs in
full. So the rule weighs, for each K from 0 to the most asked, the tokens the batch expects,

    Σ_b E(α_b, K),   E(α, K) = (1 − α^(K+1)) / (1 − α)   (theory.expected_tokens_per_pass),

against what the round costs, in the batch's one-token target steps t(B) (the target alone's round at B):

    K·c_B + v_B(K),   c_B = t_draft(B) / t(B),   v_B(K) = t(B·(K + 1)) / t(B)

and takes the K with the most tokens per step (K = 0, the target alone at B, gives B per step). α_b is each
sequence's own acceptance so far (accepted ÷ examined drafts, with PRIOR pseudo-drafts accepted, so a new sequence
drafts and measures rather than trusting nothing). After PROBE_EVERY rounds at K = 0 one round drafts K = 1 anyway,
so that text turning predictable is noticed.

Exact: K is chosen from earlier rounds and the measured prices only, never from this round's passes or draws, so
each sequence's output follows its target alone whatever K a round gets (tests/engine/test_batched.py).

    >>> choose_k([0.9, 0.9], c=0.2, v=lambda k: 1 + 0.1 * k, most=4).k
    4
    >>> choose_k([0.9, 0.9], c=0.2, v=lambda k: 1 + 1.0 * k, most=4).k   # a pass as dear as its positions
    0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from specviz.algorithm.theory import expected_tokens_per_pass

PRIOR = 1.0  # pseudo-drafts accepted behind each sequence's α: a new sequence starts at α = 1 and measures
PROBE_EVERY = 8  # rounds at K = 0 after which one round drafts K = 1, to measure α again


def acceptance(accepted: int, examined: int) -> float:
    """A sequence's α so far, with PRIOR pseudo-drafts accepted: 1 before it drafted."""
    return (accepted + PRIOR) / (examined + PRIOR)


@dataclass(frozen=True)
class BatchChoice:
    """A round's K for the batch, and why: the tokens per step each K was expected to give."""

    k: int
    batch: int
    rates: tuple[float, ...]  # expected tokens per one-token step of the batch, for K = 0, 1, …, most
    c: float  # a draft step at this batch, in the batch's one-token target steps
    v: tuple[float, ...]  # the verify pass over K drafts a sequence, for K = 0, 1, …, most
    probe: bool = False  # K = 1 to measure again after PROBE_EVERY rounds at K = 0

    def why(self) -> str:
        """'B = 4, c = 0.31, v(1…4) = 1.3 1.7 2.2 2.6: tokens a step 4.0 (K = 0), 5.1, 5.0, 4.6, 4.2 → K = 1'."""
        rates = ", ".join(f"{r:.1f}" + (" (K = 0)" if k == 0 else "") for k, r in enumerate(self.rates))
        chosen = "K = 1 to measure again" if self.probe else f"K = {self.k}"
        return (f"B = {self.batch}, c = {self.c:.2f}, v(1…{len(self.v) - 1}) = "
                f"{' '.join(f'{x:.1f}' for x in self.v[1:])}: tokens a step {rates} → {chosen}")


def choose_k(alphas: list[float], c: float, v: Callable[[int], float], most: int, plain_rounds: int = 0
             ) -> BatchChoice:
    """The K (0 … most) whose round gives the batch the most expected tokens per one-token step of the batch.
    `alphas`: each sequence's α; `c`, `v(K)`: the prices at this batch (above); `plain_rounds`: rounds at K = 0 in a
    row just before."""
    vs = tuple(v(k) for k in range(most + 1))
    rates = tuple(sum(expected_tokens_per_pass(a, k) for a in alphas) / (k * c + vs[k]) for k in range(most + 1))
    best = max(range(most + 1), key=lambda k: (rates[k], -k))  # ties: fewer drafts
    probe = best == 0 and most > 0 and plain_rounds >= PROBE_EVERY
    return BatchChoice(1 if probe else best, len(alphas), rates, c, vs, probe)

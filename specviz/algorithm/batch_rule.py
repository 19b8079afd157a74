"""The cost-aware rule for a batch: how many drafts a round of B sequences makes, priced by what the whole batch
pays. Every sequence in a round gets the same K (the batch drafts in lockstep, engine/batched.py), and one target
pass verifies all of them: B·(K + 1) positions. At small B that pass costs little more than a one-token step,
since reading the weights dominates; as B grows it turns into compute, and each extra draft position costs in
full. So the rule weighs, for each K from 0 to the most asked, the tokens the batch expects,

    Σ_b E_b(K),   E_b(K) = 1 + S_b(1) + … + S_b(K),   S_b(n) = a_b(1) · … · a_b(n)

against what the round costs, in the batch's one-token target steps t(B) (the target alone's round at B):

    K·c_B + v_B(K),   c_B = t_draft(B) / t(B),   v_B(K) = t(B·(K + 1)) / t(B)

and takes the K with the most tokens per step (K = 0, the target alone at B, gives B per step). The prices come
from the batch's own rounds as it serves, the pair's measured profile filling in what has not run yet
(engine/batch_prices.py): there v_B(K) is the whole rest of the round after drafting, the pass and every row's
verdict, so what the batch pays is what it is priced at. a_b(n) is sequence
b's own acceptance at draft position n so far (algorithm/acceptance.py): of its drafts examined there (every draft
before them kept), the share kept, with PRIOR pseudo-drafts kept at the rate every sequence served before it kept
there (`pooled`: what the server has measured of this pair; with nothing measured, 1), so a new sequence starts from
what drafts usually do rather than from a promise that every draft survives.
S_b(n), the chance its n-th draft survives, is their product: acceptance falls along a round (the draft drifts from
the target), which one α for every position, E(α, K) = (1 − α^(K+1)) / (1 − α), would miss: on the packaged pair
at 8 users its α of 0.83 promised 3.6 tokens a sequence per K = 4 round, and the rounds gave 2.35 (2026-12-04).
A sequence whose draft cache lags (one that joined and was never drafted for, or one after plain rounds) must first
catch up: the draft reads the tokens it lacks once, `catch_up[b]` of the batch's steps, which pays for every round
the sequence has left, about left_b / E_b(K) of them, so each round of K > 0 is charged its share:
Σ_b catch_up_b / max(1, left_b / E_b(K)). A sequence near its end is not worth catching up; one with most of its
answer ahead is.

After PROBE_EVERY_WHERE_IT_COULD_PAY rounds at K = 0 one round drafts K = 1 anyway, so that text turning
predictable is noticed, but only where it could: where one draft that every sequence kept would pay at these prices
(c + v_B(1) < 2). Past that, at many users, better acceptance cannot make a draft pay, and a probe only costs (its
draft catches up on every token the plain rounds committed).

Exact: K is chosen from earlier rounds and the measured prices only, never from this round's passes or draws, so
each sequence's output follows its target alone whatever K a round gets (tests/engine/test_batched.py).

    >>> sure = Positions([9, 9, 9, 9], [9, 9, 9, 9])   # every draft kept so far, at every position
    >>> choose_k([sure, sure], c=0.2, v=lambda k: 1 + 0.1 * k, most=4).k
    4
    >>> choose_k([sure, sure], c=0.2, v=lambda k: 1 + 1.0 * k, most=4).k   # a pass as dear as its positions
    0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from specviz.algorithm.acceptance import PROBE_EVERY_WHERE_IT_COULD_PAY, Positions
from specviz.algorithm.cost_rule import catch_up_share


@dataclass(frozen=True)
class BatchChoice:
    """A round's K for the batch, and why: the tokens per step each K was expected to give."""

    k: int
    batch: int
    rates: tuple[float, ...]  # expected tokens per one-token step of the batch, for K = 0, 1, …, most
    c: float  # a draft step at this batch, in the batch's one-token target steps
    v: tuple[float, ...]  # the verify pass over K drafts a sequence, for K = 0, 1, …, most
    probe: bool = False  # K = 1 to measure again after plain rounds (acceptance.py)
    catch_up: float = 0.0  # the draft's catch-up the batch lacked, once, in the batch's steps

    def why(self) -> str:
        """'B = 4, c = 0.31, v(1…4) = 1.3 1.7 2.2 2.6: tokens a step 4.0 (K = 0), 5.1, 5.0, 4.6, 4.2 → K = 1'."""
        rates = ", ".join(f"{r:.1f}" + (" (K = 0)" if k == 0 else "") for k, r in enumerate(self.rates))
        chosen = "K = 1 to measure again" if self.probe else f"K = {self.k}"
        lag = f", catch-up {self.catch_up:.1f}" if self.catch_up else ""
        return (f"B = {self.batch}, c = {self.c:.2f}, v(1…{len(self.v) - 1}) = "
                f"{' '.join(f'{x:.1f}' for x in self.v[1:])}{lag}: tokens a step {rates} → {chosen}")


def choose_k(sequences: list[Positions], c: float, v: Callable[[int], float], most: int, plain_rounds: int = 0,
             pooled: Positions | None = None, catch_up: list[float] | None = None, left: list[int] | None = None
             ) -> BatchChoice:
    """The K (0 … most) whose round gives the batch the most expected tokens per one-token step of the batch.
    `sequences`: each sequence's drafts by position; `c`, `v(K)`: the prices at this batch (above); `plain_rounds`:
    rounds at K = 0 in a row just before; `pooled`: every earlier sequence's drafts by position (the prior);
    `catch_up`, `left`: each sequence's draft catch-up in the batch's steps and its tokens left (above)."""
    vs = tuple(v(k) for k in range(most + 1))
    catch_up = catch_up or [0.0] * len(sequences)
    left = left or [1 << 30] * len(sequences)

    def rate(k: int) -> float:
        expected = [seq.expected(k, pooled) for seq in sequences]
        share = sum(catch_up_share(lag, n, e) for lag, n, e in zip(catch_up, left, expected)) if k else 0.0
        return sum(expected) / (k * c + vs[k] + share)

    rates = tuple(rate(k) for k in range(most + 1))
    best = max(range(most + 1), key=lambda k: (rates[k], -k))  # ties: fewer drafts
    probe = best == 0 and most > 0 and plain_rounds >= PROBE_EVERY_WHERE_IT_COULD_PAY and c + vs[1] < 2
    return BatchChoice(1 if probe else best, len(sequences), rates, c, vs, probe, sum(catch_up))

"""What a batch's rounds cost, measured as they run: the prices the cost-aware rule for a batch
(algorithm/batch_rule.py) weighs, in seconds, with the pair's measured profile (record/cost_profile.py) filling in
what has not run yet.

Why not the profile alone: it times one sequence's pass over n tokens, and prices a batch's verify pass over
B·(K + 1) tokens by it. A batch's pass reads B caches and each row is verified, sampled and committed on its own, so
its rounds cost more than that: priced by the profile alone, the rule drafted at 8 users where the target alone was
faster (0.82× the better rule, 2026-12-04). So each round's time is kept in two parts, where it was spent:

    draft(B)     one draft step of B rows (a round's draft steps ÷ K, in a round after a drafting one: after plain
                 rounds the first step also catches up on the tokens they committed, which a drafting round does not)
    rest(B, K)   the rest of the round: the target's pass over B × (K + 1) positions, then each row's verdict

and a round of K drafts at B is priced K·draft(B) + rest(B, K), by the median of the last KEEP measured at that
(B, K). One not measured yet is the profile's figure scaled by how the measured ones compare with theirs: at the
nearest K measured at that B, else at every B (a machine slower or faster than when the profile was timed). The
rule probes K = 1 now and then (acceptance.PROBE_EVERY_WHERE_IT_COULD_PAY), so a batch that stopped drafting still
measures a draft.

A run alone keeps one too, at B = 1 (Engine.clock_for): the cost-aware rule of a single run (algorithm/cost_rule.py)
is repriced by it each round, so both rules weigh what their rounds paid on this machine, now.

Exact: the prices are clock readings of earlier rounds, never a draw or a pass's numbers, so whatever K they choose
each sequence's output follows its target alone (tests/engine/test_batched.py). One BatchPrices serves every batch
on the loaded pair (a server keeps what it measured across requests), and with the clock the verdicts of every
sequence it served by draft position, the prior a new sequence's acceptance starts from (algorithm/acceptance.py).
"""

from __future__ import annotations

import statistics
from collections import deque

from specviz.algorithm.acceptance import Positions
from specviz.record.cost_profile import CostProfile, Prices

KEEP = 8  # measured rounds per (B, K) whose median prices it: recent enough to follow the machine


class BatchPrices:
    """Seconds of a batch's draft steps and the rest of its rounds, measured per batch size and K."""

    def __init__(self, profile: CostProfile):
        self.profile = profile.steady()  # no longer pass priced cheaper than a shorter one
        self.drafts: dict[int, deque[float]] = {}  # B -> seconds of one draft step of B rows
        self.rests: dict[tuple[int, int], deque[float]] = {}  # (B, K) -> seconds of the rest of a round
        self.fills: deque[float] = deque(maxlen=KEEP)  # seconds a token of the draft's catch-up (Batch._fill_draft)
        self.pooled = Positions()  # every sequence's verdicts by draft position: a new sequence's prior

    def add(self, batch: int, k: int, draft_s: float | None, rest_s: float, steps: int | None = None) -> None:
        """One round's clock: its draft steps took draft_s in all (None: not a draft step's price, see above), `steps`
        of them (None: K), the rest of it rest_s."""
        steps = k if steps is None else steps
        if steps and draft_s is not None:
            self.drafts.setdefault(batch, deque(maxlen=KEEP)).append(draft_s / steps)
        self.rests.setdefault((batch, k), deque(maxlen=KEEP)).append(rest_s)

    def rest(self, batch: int, k: int) -> float:
        """Seconds of a round's target pass and verdicts at (B, K): measured, else the profile's, scaled."""
        if (batch, k) in self.rests:
            return statistics.median(self.rests[batch, k])
        near = sorted((abs(j - k), j) for b, j in self.rests if b == batch)
        if near:
            j = near[0][1]
            scale = statistics.median(self.rests[batch, j]) / self._profile_rest(batch, j)
        else:
            scale = self._scale([(statistics.median(times), self._profile_rest(b, j))
                                 for (b, j), times in self.rests.items()])
        return self._profile_rest(batch, k) * scale

    def draft(self, batch: int) -> float:
        """Seconds of one draft step of B rows: measured, else the profile's, scaled."""
        if batch in self.drafts:
            return statistics.median(self.drafts[batch])
        return self.profile.draft_step(batch) * self._scale(
            [(statistics.median(times), self.profile.draft_step(b)) for b, times in self.drafts.items()])

    def add_fill(self, tokens: int, seconds: float) -> None:
        """The draft read `tokens` of a sequence alone, its catch-up, in `seconds`."""
        if tokens > 0:
            self.fills.append(seconds / tokens)

    def fill_token(self) -> float:
        """Seconds the draft takes a token of catch-up: measured, else the draft's step over the profile's widest
        pass shape (a pass over n tokens costs the draft as it costs the target, in proportion)."""
        if self.fills:
            return statistics.median(self.fills)
        p, n = self.profile, self.profile.tokens[-1]
        return p.draft_step(1) * p.t(n) / p.t(1) / n

    def prices_at(self, batch: int, most: int) -> Prices:
        """This batch's prices at B for K = 0 … most: its round at K = 0 the step, a draft step of B rows, the rest
        of a round of K drafts, each measured or the profile's, scaled (above)."""
        rests = tuple(self.rest(batch, k) for k in range(most + 1))
        return Prices(batch, rests[0], self.draft(batch), rests)

    def c(self, batch: int) -> float:
        """A draft step of B rows, in the batch's one-token target steps (its round at K = 0)."""
        return self.prices_at(batch, 0).c

    def v(self, batch: int, k: int) -> float:
        """The rest of a round of K drafts at B, in the batch's one-token target steps (no less than the step)."""
        return self.prices_at(batch, k).steady().v[k]

    def measured(self, batch: int, k: int) -> bool:
        return (batch, k) in self.rests

    def _profile_rest(self, batch: int, k: int) -> float:
        """The profile's price of the pass: the step at B where K = 0, else one sequence's pass over B·(K + 1)."""
        return self.profile.prices_at(batch, k).pass_s[k]

    @staticmethod
    def _scale(pairs: list[tuple[float, float]]) -> float:
        """The median of measured ÷ profile over (measured, profile) pairs; 1 where none."""
        return statistics.median(m / p for m, p in pairs) if pairs else 1.0

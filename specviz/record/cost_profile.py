"""A measured cost profile of one pair on one device: the target's pass time against the tokens it reads at once and
the batch it decodes, the draft's step. measure/pass_timing.py measures the full profile (the Costs tab),
engine/pass_costs.py a short one at load; the speedup predictions (measure/pass_timing.py), the Costs tab and the
cost-aware drafting rule (algorithm/cost_rule.py) read it. Plain numbers: it crosses the GPU boundary and is kept per pair.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field


@dataclass
class CostProfile:
    """Measured pass times of one pair on one device (seconds, medians)."""

    device: str
    dtype: str
    draft: str
    target: str
    context: int  # cached tokens under every pass
    tokens: list[int]  # tokens fed in one target pass at batch 1: NEW_TOKENS (1 … 17), then WIDE (32, 64)
    target_s: list[float]  # the target's pass over that many tokens
    batches: list[int]
    target_batch_s: list[float]  # the target's step at each batch size (one new token per sequence)
    draft_batch_s: list[float]  # the draft's step at each batch size
    seconds: float = 0.0  # how long the measurement took
    notes: list[str] = field(default_factory=list)
    source: str = "the Costs tab's measurement"  # which measurement, in words (the page says what priced a run)
    repeats: int = 1  # timings of each point; the medians above, their least and most in `spread`
    spread: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # "target_s", "target_batch_s",
    #                                   "draft_batch_s" -> (least, most) per point; empty: each point timed once
    recorded: str = ""  # a shipped recording's date and machine, in words (measure/recorded_costs.py); empty: live

    def extreme(self, speculation_favoured: bool) -> "CostProfile":
        """This profile at the ends of its spread: every time at the end that favours speculation (the target's
        one-token steps at their most, its verify passes and the draft's steps at their least), or the other end.
        Where the crossover falls between the two is how sure the measurement is of it."""
        if not self.spread:
            return self
        pick = {"target_s": not speculation_favoured, "target_batch_s": speculation_favoured,
                "draft_batch_s": not speculation_favoured}  # True: the most
        ends = {name: [high if most else low for low, high in self.spread[name]] for name, most in pick.items()}
        ends["target_s"][0] = self.spread["target_s"][0][1 if speculation_favoured else 0]  # t(1) is a step too
        return dataclasses.replace(self, **ends, spread={})

    def t(self, n: float) -> float:
        """The target's pass over n tokens at batch 1, interpolated linearly between measured counts."""
        return _interpolate(self.tokens, self.target_s, n)

    def v(self, k: int) -> float:
        """v = t(K+1) / t(1): the verify pass of K drafts, in one-token target steps."""
        return self.t(k + 1) / self.t(1)

    def target_step(self, batch: float = 1) -> float:
        """The target's one-token step with `batch` sequences decoding at once; where only batch 1 was measured, its
        pass over `batch` tokens (the weights are read once either way: the approximation speedup_at_batch makes)."""
        if len(self.batches) > 1:
            return _interpolate(self.batches, self.target_batch_s, batch)
        return self.t(batch)

    def draft_step(self, batch: float = 1) -> float:
        """The draft's step at `batch`; where only batch 1 was measured, assumed to grow as the target's does."""
        if len(self.batches) > 1:
            return _interpolate(self.batches, self.draft_batch_s, batch)
        return self.draft_batch_s[0] * self.target_step(batch) / self.target_step(1)

    def problem(self, device: str, dtype: str, target: str) -> str | None:
        """Why this profile cannot price a run of `target` on `device` in `dtype` (another device or pair, a time
        that is missing, not a number, zero or negative); None when it can."""
        if (self.device, self.dtype, self.target) != (device, dtype, target):
            return (f"the cost measurement is of {self.target} on {self.device} in {self.dtype}, not of this run's "
                    f"{target} on {device} in {dtype}")
        times = [*self.target_s, *self.target_batch_s, *self.draft_batch_s]
        if not self.target_s or not self.draft_batch_s or not all(
                isinstance(t, (int, float)) and math.isfinite(t) and t > 0 for t in times):
            return "the cost measurement holds a time that is missing, not a number, zero or negative"
        if len(self.tokens) != len(self.target_s) or len(self.batches) != len(self.target_batch_s):
            return "the cost measurement's counts and times disagree"
        return None

    @property
    def c(self) -> float:
        """c = draft step / one-token target step, at batch 1."""
        return self.draft_batch_s[0] / self.target_batch_s[0]


def _interpolate(xs: list[float], ys: list[float], x: float) -> float:
    """Piecewise-linear y(x) through the points, extended linearly past the last two (one point: constant)."""
    if x <= xs[0] or len(xs) == 1:
        return ys[0]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    (x0, y0), (x1, y1) = (xs[-2], ys[-2]), (xs[-1], ys[-1])
    return y1 + (y1 - y0) * (x - x1) / (x1 - x0)

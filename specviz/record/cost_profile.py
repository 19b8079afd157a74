"""A measured cost profile of one pair on one device: the target's pass time against the tokens it reads at once and
the batch it decodes, the draft's step, and what a draft from the target's own state costs part by part (DraftParts:
a Medusa head's block, the shared output layer, an EAGLE-style layer). measure/pass_timing.py measures the full profile (the Costs tab),
engine/pass_costs.py a short one at load; the speedup predictions (measure/pass_timing.py), the Costs tab and the
cost-aware drafting rules (algorithm/cost_rule.py, batch_rule.py) read it. Plain numbers: it crosses the GPU boundary
and is kept per pair.

What a round costs at a batch of B sequences is read from it in one place, `CostProfile.prices_at` (`Prices`): the
single run's prices (engine/pass_costs.py), the batch's before its rounds have run (engine/batch_prices.py) and the
speedup predictions at B all take it. "A longer pass is never cheaper" is one rule too, `never_cheaper`: a profile's
points evened by it (`CostProfile.steady`) or a round's prices (`Prices.steady`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field


@dataclass
class DraftParts:
    """What a draft read from the target's own hidden state costs, part by part, beside a one-token target pass and a
    draft-model step timed in the same run (seconds, medians; measure/draft_parts.py). A part's time does not depend on
    its weights: untrained heads and a random layer of the target's shapes are timed."""

    hidden: int  # the target's hidden size
    vocab: int  # rows of its output layer (its LM head: vocab × hidden)
    head_block_s: float  # one Medusa head's block, x + SiLU(W x + b), on one position (hidden × hidden)
    output_layer_s: float  # the shared output layer on one position (vocab × hidden): what each head reads out through
    heads: int  # how many heads the whole draft below ran (MedusaHeads' default)
    heads_s: float  # all `heads` heads from one hidden state in one call: their blocks, the output layer over `heads` rows
    eagle_layer_s: float  # an EAGLE-style layer: the 2·hidden → hidden map, then one decoder layer of the target's
    #                       shape over one new position with `context` positions cached (its output layer not included)
    target_step_s: float  # the target's one-token pass in the same run, with `context` positions cached
    draft_step_s: float  # the draft model's one-token step in the same run
    context: int
    repeats: int = 1  # timings of each part; the medians above, their least and most in `spread`
    spread: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # a field's name -> [(least, most)]
    measured: str = ""  # when, on what machine, in what dtype, in words
    rows: list[int] = field(default_factory=list)  # FR-Spec (engine/readout.py): the heads' draft timed over the n
    #                                               most used tokens' output rows, for each n here; empty: not timed
    rows_heads_s: list[float] = field(default_factory=list)  # all `heads` heads over those rows, one per n
    rows_agreement: list[float] = field(default_factory=list)  # head 1's held-out agreement at each n, as the
    #                                  training of the heads on this machine measured it; empty: none trained here

    def problem(self) -> str | None:
        """Why these figures cannot be shown (a time missing, not a number, zero or negative); None when they can."""
        times = [self.head_block_s, self.output_layer_s, self.heads_s, self.eagle_layer_s, self.target_step_s,
                 self.draft_step_s]
        if not all(isinstance(t, (int, float)) and math.isfinite(t) and t > 0 for t in [*times, *self.rows_heads_s]):
            return "the draft parts' measurement holds a time that is missing, not a number, zero or negative"
        if len(self.rows_heads_s) != len(self.rows) or len(self.rows_agreement) not in (0, len(self.rows)):
            return "the draft parts' subset sizes, times and agreements do not line up"
        if not all(0 < n <= self.vocab for n in self.rows) or not all(0 <= a <= 1 for a in self.rows_agreement):
            return "the draft parts' subset sizes or agreements are out of range"
        return None


SLOWED = 0.9  # a pass timed below this share of a shorter one's: the shorter was slowed (CostProfile.slowed); quiet
#              passes of 1 to 17 tokens rise, or stay within a few per cent of each other where memory bounds them


def never_cheaper(times: list[float]) -> list[float]:
    """Each time the least of it and every later one's: a longer pass (more tokens, more sequences, more drafts) is
    never cheaper than a shorter one, so a point above a later one was slowed by other work, which only ever adds
    time. One slow point taken as measured once priced every draft past the third at 4.8 steps (2026-12-01).

    >>> never_cheaper([1.0, 1.3, 1.2, 1.5])
    [1.0, 1.2, 1.2, 1.5]
    """
    return [min(times[i:]) for i in range(len(times))]


@dataclass(frozen=True)
class Prices:
    """What a round costs at a batch of B sequences, in seconds and in the batch's one-token target steps:

        c = t_draft(B) / t_target(B)      a draft step of B rows
        v(K) = pass(K) / t_target(B)      the verify pass over K drafts a sequence; v(0) = 1, the step itself

    >>> at = Prices(batch=4, step_s=0.5, draft_s=0.125, pass_s=(0.5, 0.75, 0.625))
    >>> at.c, at.v, at.steady().v
    (0.25, [1.0, 1.5, 1.25], [1.0, 1.25, 1.25])
    """

    batch: int
    step_s: float  # t_target(B): the target alone's step at B, the unit c and v are in
    draft_s: float  # t_draft(B): the draft's step at B
    pass_s: tuple[float, ...]  # pass(K) for K = 0, 1, …, the most: the step at K = 0, else the pass over B·(K + 1)

    @property
    def c(self) -> float:
        return self.draft_s / self.step_s

    @property
    def v(self) -> list[float]:
        return [p / self.step_s for p in self.pass_s]

    def steady(self) -> "Prices":
        """These prices with no longer pass cheaper than a shorter one (never_cheaper), nor than the step itself."""
        return dataclasses.replace(self, pass_s=tuple(max(self.step_s, p) for p in never_cheaper(list(self.pass_s))))


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
    draft_batch_s: list[float]  # the draft's step at each batch size: at 1 with a run's own draft pass (lean where it
    #                             applies: what a round pays), at more with transformers' forward (a batched run's)
    seconds: float = 0.0  # how long the measurement took
    notes: list[str] = field(default_factory=list)
    source: str = "the Costs tab's measurement"  # which measurement, in words (the page says what priced a run)
    repeats: int = 1  # timings of each point; the medians above, their least and most in `spread`
    spread: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # "target_s", "target_batch_s",
    #                                   "draft_batch_s" -> (least, most) per point; empty: each point timed once
    recorded: str = ""  # a shipped recording's date and machine, in words (measure/recorded_costs.py); empty: live
    parts: DraftParts | None = None  # a draft from the target's own state, part by part; None: not measured
    kernels: str = ""  # the CPU path its linear layers ran on (models/kernels.py); "": the dtype's own kernels
    kernels_why: str = ""  # why the pair ran on those kernels, as its load said (the page and the CLI print it)

    @property
    def path(self) -> str:
        """The kernels it measured: its path's name, or its dtype's for the dtype's own kernels."""
        return self.kernels or self.dtype

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

    def drafting_with(self, name: str, c: float) -> "CostProfile":
        """This profile priced for another drafter, `name`, whose step costs `c` of a one-token target step (a run's
        own timings measure it at batch 1): held at that share of the target's step at every batch, as draft_step
        assumes where only batch 1 was measured. What this profile measured of the draft model goes."""
        draft = [c * self.target_step(b) for b in self.batches]
        spread = {**self.spread, "draft_batch_s": [(d, d) for d in draft]} if self.spread else {}
        return dataclasses.replace(self, draft=name, draft_batch_s=draft, spread=spread, parts=None)

    def steady(self) -> "CostProfile":
        """This profile with no pass cheaper than a shorter one: each time the least of it and every later one's
        (more tokens, or more sequences). A moment of other work on two cores stalls one timed point by a scheduler's
        slice; taken as measured, one slow t(8) once made a batch of 8's verify passes look free (2026-12-04)."""
        return dataclasses.replace(self, target_s=never_cheaper(self.target_s),
                                   target_batch_s=never_cheaper(self.target_batch_s),
                                   draft_batch_s=never_cheaper(self.draft_batch_s))

    def slowed(self) -> str | None:
        """Where a longer pass measured cheaper than a shorter one by more than noise (below SLOWED of it), which
        shorter pass other work on the machine slowed; None where the times rise with the pass. `steady` evens such a
        point down, so a slowed t(1) prices every pass up to the cheaper one as free: a profile remembered from a busy
        moment (t(1) 151 ms, t(3) 137, where a quiet t(1) is 70 and t(3) 111) priced a two-token verify at 1.0 step
        for every later load, and the cost-aware rule, priced so, drafted a token in nearly every round of a story
        (2026-12-06)."""
        for name, times in (("the target's pass", self.target_s), ("a batch's step", self.target_batch_s),
                            ("the draft's step", self.draft_batch_s)):
            for i in range(1, len(times)):
                if times[i] < SLOWED * max(times[:i]):
                    return (f"{name} measured {times[i] * 1e3:.1f} ms where a shorter one took "
                            f"{max(times[:i]) * 1e3:.1f}: the shorter was slowed by other work")
        return None

    def t(self, n: float) -> float:
        """The target's pass over n tokens at batch 1, interpolated linearly between measured counts."""
        return _interpolate(self.tokens, self.target_s, n)

    def v(self, k: int) -> float:
        """v = t(K+1) / t(1): the verify pass of K drafts, in one-token target steps (prices_at batch 1)."""
        return self.prices_at(1, k).v[k]

    @property
    def c(self) -> float:
        """c = draft step / one-token target step, at batch 1."""
        return self.prices_at(1, 0).c

    def prices_at(self, batch: int, most: int) -> Prices:
        """What a round costs with `batch` sequences decoding at once, for K = 0 … most drafts a sequence: the
        target's step at B, the draft's, and the verify pass over K drafts, the step at K = 0, else one sequence's pass
        over B·(K + 1) tokens (the weights are read once either way; the attention differs, and is small next to the
        matmuls at a short context). As measured: Prices.steady evens them."""
        step = self.target_step(batch)
        return Prices(batch, step, self.draft_step(batch),
                      (step, *(self.t(batch * (k + 1)) for k in range(1, most + 1))))

    def target_step(self, batch: float = 1) -> float:
        """The target's one-token step with `batch` sequences decoding at once; where only batch 1 was measured, its
        pass over `batch` tokens (the weights are read once either way: the approximation prices_at makes)."""
        if len(self.batches) > 1:
            return _interpolate(self.batches, self.target_batch_s, batch)
        return self.t(batch)

    def draft_step(self, batch: float = 1) -> float:
        """The draft's step at `batch`; where only batch 1 was measured, assumed to grow as the target's does."""
        if len(self.batches) > 1:
            return _interpolate(self.batches, self.draft_batch_s, batch)
        return self.draft_batch_s[0] * (self.target_step(batch) / self.target_step(1))

    def problem(self, device: str, dtype: str, target: str, kernels: str = "") -> str | None:
        """Why this profile cannot price a run of `target` on `device` in `dtype` on `kernels` (another device, pair
        or kernel path, a time that is missing, not a number, zero or negative); None when it can."""
        if (self.device, self.dtype, self.target, self.path) != (device, dtype, target, kernels or dtype):
            return (f"the cost measurement is of {self.target} on {self.device} in {self.dtype} ({self.path} kernels), "
                    f"not of this run's {target} on {device} in {dtype} ({kernels or dtype} kernels)")
        times = [*self.target_s, *self.target_batch_s, *self.draft_batch_s]
        if not self.target_s or not self.draft_batch_s or not all(
                isinstance(t, (int, float)) and math.isfinite(t) and t > 0 for t in times):
            return "the cost measurement holds a time that is missing, not a number, zero or negative"
        if len(self.tokens) != len(self.target_s) or len(self.batches) != len(self.target_batch_s):
            return "the cost measurement's counts and times disagree"
        return None


def _interpolate(xs: list[float], ys: list[float], x: float) -> float:
    """Piecewise-linear y(x) through the points, extended linearly past the last two (one point: constant)."""
    if x <= xs[0] or len(xs) == 1:
        return ys[0]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    (x0, y0), (x1, y1) = (xs[-2], ys[-2]), (xs[-1], ys[-1])
    return y1 + (y1 - y0) * (x - x1) / (x1 - x0)

"""The α / K / c / v explorer, its "test yourself" question, and what a recorded trace measured in its terms.

The explorer draws the cost model of theory.py against K for one α, c and v; `Question` is the Lab's card that asks
for one point of it; `measured_point` reads a trace's α, K, c and v (c and v against one target-only step of its
baseline), and `steady_state` is the one place that turns a run into the model's terms, for the Lab's readout and
for the benchmark's prediction alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import MAX_K
from .theory import expected_tokens_per_pass, round_size_probs, speedup
from .trace import Trace, acceptance_rate, baseline_decode_speed, decode_speed, step_times, summarize, \
    target_step_time


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


@dataclass(frozen=True)
class SteadyState:
    """A run after its first round (whose passes also encoded the prompt), in the cost model's terms."""

    alpha: float  # accepted / examined drafts of those rounds
    k: float  # mean drafts per round
    c: float  # a draft step over a one-token target step
    v: float  # a verify pass over a one-token target step

    @property
    def speedup(self) -> float:
        """The predicted decode speedup, E(α, K̄) / (K̄·c + v): what the benchmark compares its measurement with."""
        return speedup(self.alpha, self.k, self.c, self.v)


def steady_state(rounds: list, target_step_s: float) -> SteadyState | None:
    """The run's α, K̄, c and v, with c and v measured against one target-only step (from a baseline run);
    None when nothing was drafted."""
    later = rounds[1:] or rounds
    draft, verify = step_times(rounds)
    if draft is None or not target_step_s > 0:
        return None
    return SteadyState(acceptance_rate(later), sum(r.k for r in later) / len(later), draft / target_step_s,
                       verify / target_step_s)


@dataclass(frozen=True)
class MeasuredPoint:
    """What a recorded run measured, in the explorer's terms."""

    alpha: float  # accepted / examined drafts (summary.acceptance_rate)
    k: int  # settings["k"]
    draft_s_per_token: float | None  # mean draft time per drafted token; None when nothing was drafted
    verify_s_per_round: float  # mean target pass + verify time per round
    tokens_per_pass: float  # new tokens / target passes
    round_probs: list[float]  # fraction of rounds that committed j + 1 tokens, j = 0..K
    speedup: float | None  # tokens/s over the baseline's tokens/s; None without a baseline
    n_rounds: int
    steady: SteadyState | None = None  # c and v against the baseline's step; None without a baseline
    decode_speedup: float | None = None  # tokens/s after the first round over the baseline's after its first

    @property
    def c(self) -> float | None:
        """A draft step over a one-token target step; without a baseline, over a verify pass (v taken as 1)."""
        if self.steady is not None:
            return self.steady.c
        if self.draft_s_per_token is None or self.verify_s_per_round <= 0:
            return None
        return self.draft_s_per_token / self.verify_s_per_round

    @property
    def v(self) -> float | None:
        """The verify pass over a one-token target step; None without a baseline to measure that step."""
        return self.steady.v if self.steady is not None else None


def drafted_a_tree(trace: Trace) -> bool:
    return any(r.tree for r in trace.rounds)


def measured_point(trace: Trace | None) -> MeasuredPoint | None:
    """The trace's α, K, c, v and speedup, or None for no trace, one without rounds, or a tree's (the chain's E(α, K)
    does not describe a round whose K drafts are branches, not one row)."""
    if trace is None or not trace.rounds or drafted_a_tree(trace):
        return None
    rounds = trace.rounds
    summary = trace.summary or summarize(rounds, 0.0)
    k = trace.settings.get("k")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        k = max(1, max(r.k for r in rounds))
    draft_s_per_token, verify_s_per_round = step_times(rounds)
    sizes = [min(r.tokens_this_pass, k + 1) for r in rounds]  # adaptive or cut rounds never exceed K + 1
    b = trace.baseline
    base = b.tokens_per_s if b else 0.0
    step = target_step_time(b) if b else None
    decode, b_decode = (decode_speed(trace), baseline_decode_speed(b)) if b and trace.summary else (None, None)
    return MeasuredPoint(
        alpha=summary.acceptance_rate,
        k=k,
        draft_s_per_token=draft_s_per_token,
        verify_s_per_round=verify_s_per_round,
        tokens_per_pass=summary.tokens_per_pass,
        round_probs=[sizes.count(j + 1) / len(rounds) for j in range(k + 1)],
        speedup=summary.tokens_per_s / base if base > 0 and summary.tokens_per_s > 0 else None,
        n_rounds=len(rounds),
        steady=steady_state(rounds, step) if step else None,
        decode_speedup=decode / b_decode if decode and b_decode else None,
    )

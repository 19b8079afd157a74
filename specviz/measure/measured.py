"""What a recorded run measured, in the cost model's terms: `measured_point` reads a trace's α, K, c and v (c and v
against one target-only step of its baseline), and `steady_state` is the one place that turns a run into the
model's terms, for the Lab's readout and for the benchmark's prediction alike (with the model's predicted speedup,
from algorithm/theory.py). Every statistic of the trace they quote is record/stats.py's; here they are only put in
the model's terms.
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.algorithm.theory import speedup
from specviz.record.stats import (acceptance_rate, decode_speedup, drafted_a_tree, later_rounds, mean_drafts,
                                  round_shares, set_k, speedup_over_baseline, step_times, summarize, target_step_time)
from specviz.record.trace import Trace


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
    later = later_rounds(rounds)
    draft, verify = step_times(rounds)
    if draft is None or not target_step_s > 0:
        return None
    return SteadyState(acceptance_rate(later), mean_drafts(later), draft / target_step_s, verify / target_step_s)


@dataclass(frozen=True)
class MeasuredPoint:
    """What a recorded run measured, in the explorer's terms."""

    alpha: float  # accepted / examined drafts (summary.acceptance_rate)
    k: int  # settings["k"]
    draft_s_per_token: float | None  # mean draft time per drafted token; None when nothing was drafted
    verify_s_per_round: float  # mean target pass + verify time per round
    tokens_per_pass: float  # new tokens / target passes
    round_probs: list[float]  # fraction of rounds that committed j + 1 tokens, j = 0..K (stats.round_shares)
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


def measured_point(trace: Trace | None) -> MeasuredPoint | None:
    """The trace's α, K, c, v and speedup, or None for no trace, one without rounds, or a tree's (the chain's E(α, K)
    does not describe a round whose K drafts are branches, not one row)."""
    if trace is None or not trace.rounds or drafted_a_tree(trace):
        return None
    rounds = trace.rounds
    summary = trace.summary or summarize(rounds, 0.0)
    k = set_k(trace) or max(1, max(r.k for r in rounds))  # not recorded: the longest round drafted
    draft_s_per_token, verify_s_per_round = step_times(rounds)
    step = target_step_time(trace.baseline) if trace.baseline else None
    return MeasuredPoint(
        alpha=summary.acceptance_rate,
        k=k,
        draft_s_per_token=draft_s_per_token,
        verify_s_per_round=verify_s_per_round,
        tokens_per_pass=summary.tokens_per_pass,
        round_probs=round_shares(rounds, k),
        speedup=speedup_over_baseline(trace),
        n_rounds=len(rounds),
        steady=steady_state(rounds, step) if step else None,
        decode_speedup=decode_speedup(trace),
    )

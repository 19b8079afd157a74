"""What a run's rounds paid, in one-token steps of the target alone, against what the cost-aware rule priced them
at: why a run was slower than the target alone (view/summary.slower_sentence says it), and tools/rule_price's table.

A round's price is the rule's K·c + v(K) (its CostDecision.expected_cost); what it paid is its draft and verify
seconds over the target alone's step (the baseline's median step after the first, stats.target_step_time). A run
keeps `tokens` a round for `paid` steps where the target alone keeps one a step: tokens / paid under 1 is slower.

    costs = round_costs(trace)   # None without a baseline
    costs.tokens / costs.paid    # 1.53 / 1.66 = 0.92: the Spices example, 0.93× the target alone
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean

from specviz.record.stats import later_rounds, target_step_time
from specviz.record.trace import Round, Trace


@dataclass(frozen=True)
class RoundCosts:
    """The rounds after the first (whose target pass also reads the prompt), each a mean over them."""

    rounds: int
    tokens: float  # tokens a round kept
    draft: float  # one-token target steps a round paid drafting
    verify: float  # … verifying
    priced: float | None  # the rule's price of a round, over the rounds it priced; None: the rule priced none
    expected: float | None  # tokens the rule expected a round to keep, over the same rounds

    @property
    def paid(self) -> float:
        return self.draft + self.verify


def paid_steps(rnd: Round, step_s: float) -> tuple[float, float]:
    """(drafting, verifying) a round paid, in one-token target steps of `step_s` seconds."""
    return rnd.draft_time_s / step_s, rnd.verify_time_s / step_s


def round_costs(trace: Trace) -> RoundCosts | None:
    """What the trace's rounds after the first paid and kept, and what the rule priced them at; None without a
    baseline that times a step of the target alone."""
    step = target_step_time(trace.baseline) if trace.baseline is not None else None
    rounds = later_rounds(trace.rounds)
    if not step or not rounds:
        return None
    paid = [paid_steps(r, step) for r in rounds]
    priced = [r.cost for r in rounds if r.cost is not None]
    return RoundCosts(len(rounds), mean(len(r.committed_ids) for r in rounds), mean(p[0] for p in paid),
                      mean(p[1] for p in paid), mean(c.expected_cost for c in priced) if priced else None,
                      mean(c.expected_tokens for c in priced) if priced else None)

"""The cost-aware stop rule of adaptive K: draft one more token only while what it is expected to add pays for what
it costs on this machine.

Drafting the n-th token of a round adds one token to the round's yield exactly when it and every draft before it
survive, so it adds S_n tokens on average, where S_n is that chance. It costs one draft step, c, and makes the verify
pass read one more token, v(n) − v(n − 1), both in one-token target steps (measured for the pair:
record/cost_profile.py).
Spent on the run as it goes, that time would make `rate` tokens per step (the run's own tokens per step of cost so
far; at least 1, the target alone), so the draft pays when

    S_n > rate · (c + v(n) − v(n − 1))

or when it and some drafts after it pay together (the sum of S_j − rate · (c + v(j) − v(j − 1)) over them is above
0: `gain`), since a measured v often rises most for the first draft and hardly after.

Before the n-th draft exists, S_n is estimated as S_(n−1), the chance the drafts so far survive, times this run's
measured acceptance at position n (algorithm/acceptance.py). S_(n−1) is the product of each draft's own probability of its token raised to a
power γ: the draft is surer than it says where verification keeps most of its drafts (γ < 1) and less sure where it
loses them (γ > 1), so γ is refitted after every round until this run's estimates for the drafts it examined add up
to how many of them survived (`fit_gamma`; γ = 1, the draft taken at its word, before). K = 0 is a legal answer: the
round is a plain target step. After PROBE_EVERY_AT_ANY_PRICE plain rounds in a row one draft is made anyway, so
that a run whose text turns predictable is noticed.

The prices are what this run's own rounds paid (`reprice`, each round: engine/batch_prices.py keeps them, the same
clock the batch's rule reads, with the pair's measured profile filling in what has not run yet): a round of K = 0 is
the unit, the target alone's step as this run pays it. A draft cache that lags after plain rounds must first catch up
on the tokens they committed, once; the first draft of such a round is charged its share of that, `catch_up_share`,
as the batch's rule charges it. Priced by the short measurement alone and with no catch-up charged, the rule ran 0.83×
the target alone on a story in float32 on an AMD EPYC (issue 62): it paid its drafts 0.59–0.77 of a step where it
priced them at 0.42.

Exact: K is chosen from the draft's own probabilities and earlier rounds only, never from this round's target pass
or draws (as the threshold rule is), so the output follows the target whatever K each round gets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from specviz.algorithm.acceptance import PROBE_EVERY_AT_ANY_PRICE, Positions, survival
from specviz.record.trace import CostDecision, DraftChoice

PRIOR_AT_HALF = 2.0  # pseudo-drafts behind γ (fit_gamma): two of confidence 0.5, one of them survived
GAMMA_RANGE = (0.1, 4.0)  # γ beyond these would mean the draft's probabilities say nothing: kept within them
FIT_LAST = 256  # examined drafts γ is fitted to: the run's latest (a bound on the work after each round)


def catch_up_share(lag: float, left: int, expected: float) -> float:
    """A draft's catch-up of `lag` steps, paid once, charged to one round: it serves every round left, about left ÷
    expected of them (expected: the tokens a round is expected to yield), so a round pays lag ÷ that (all of it near
    the end, where no later round shares it)."""
    return lag / max(1.0, left / expected) if lag else 0.0


def fit_gamma(examined: list[tuple[float, bool]]) -> float:
    """γ such that the sum of confidence^γ over the examined drafts equals how many survived (between GAMMA_RANGE),
    with PRIOR_AT_HALF pseudo-drafts of confidence 0.5 surviving half the time, which holds at γ = 1: with no drafts
    seen γ is 1, and one lucky draft moves it little. The sum falls as γ grows (each confidence is below 1)."""
    survived = sum(kept for _, kept in examined) + PRIOR_AT_HALF * 0.5
    low, high = GAMMA_RANGE
    for _ in range(30):  # bisection: 30 halvings pin γ far below any printed digit
        gamma = (low + high) / 2
        if sum(sure ** gamma for sure, _ in examined) + PRIOR_AT_HALF * 0.5 ** gamma > survived:
            low = gamma
        else:
            high = gamma
    return (low + high) / 2


@dataclass
class CostRule:
    """The rule's state through one run: the prices, what earlier rounds did, and the round being drafted."""

    c: float  # a draft step, in one-token target steps
    v: list[float]  # v[n]: the verify pass over n drafts; v[0] = 1, never falling (evened: record/cost_profile.py)
    positions: Positions = field(default_factory=Positions)  # this run's drafts examined and kept, by position
    gamma: float = 1.0  # the power on the draft's own probabilities that this run's survivals fitted (fit_gamma)
    examined: list[tuple[float, bool]] = field(default_factory=list)  # (confidence, survived), the latest FIT_LAST
    tokens: int = 0  # committed by the rounds this rule priced
    cost: float = 0.0  # their predicted cost, in one-token target steps
    plain_in_a_row: int = 0
    catch_up: float = 0.0  # the draft's catch-up this round would pay first, in one-token target steps (`start_round`)
    left: int = 1 << 30  # tokens the run has left to make when this round starts
    _choices: list[DraftChoice] = field(default_factory=list)
    _survive: float = 1.0  # the chance this round's drafts so far all survive
    _expected: float = 1.0  # 1 + the sum of the survive estimates of this round's drafts so far
    _share: float = 0.0  # the catch-up's share charged to this round's first draft (catch_up_share)

    @property
    def rate(self) -> float:
        return max(1.0, self.tokens / self.cost) if self.cost > 0 else 1.0

    def reprice(self, c: float, v: list[float]) -> None:
        """Prices from the rounds this run paid so far (engine/batch_prices.py), for the rounds from now on."""
        self.c, self.v = c, list(v)

    def start_round(self, catch_up: float = 0.0, left: int = 1 << 30) -> None:
        """A new round: its draft first catches up `catch_up` steps (0: it lags no more than a drafting round leaves
        it), with `left` tokens still to make."""
        self._choices, self._survive, self._expected, self._share = [], 1.0, 1.0, 0.0
        self.catch_up, self.left = catch_up, left

    def draft_more(self, most: int) -> bool:
        """Whether to draft the next token of this round (at most `most` drafts), recording the weighing. Called
        until it says no (or the drafter stops at an end-of-sequence token)."""
        n = len(self._choices) + 1
        if n > min(most, len(self.v) - 1):
            return False
        survive, cost, gain = self._outlook(n, min(most, len(self.v) - 1))
        probe = n == 1 and self.plain_in_a_row >= PROBE_EVERY_AT_ANY_PRICE
        self._choices.append(DraftChoice(survive, cost, gain > 0 or probe, probe=probe and gain <= 0, gain=gain))
        return self._choices[-1].drafted

    def _outlook(self, n: int, most: int) -> tuple[float, float, float]:
        """(S_n, its cost, the best net gain in tokens of drafting n … m for any m up to `most`). Looking past the
        n-th draft matters where one more token makes the verify pass dearer at first and then hardly at all (a
        measured v(1) − v(0) above the later steps): a draft that does not pay alone may pay with those after it."""
        total, best = 0.0, -math.inf
        acceptances = (self.positions.acceptance(j) for j in range(n, most + 1))
        for j, survive in enumerate(survival(acceptances, self._survive), start=n):
            cost = self.c + self.v[j] - self.v[j - 1]
            if j == n == 1:  # the catch-up is paid by a round's first draft, whatever follows: charged to it once
                self._share = catch_up_share(self.catch_up, self.left, 1 + survive)
                cost += self._share
            total += survive - self.rate * cost
            best = max(best, total)
            if j == n:
                first = (survive, cost)
        return *first, best

    def drafted(self, confidence: float) -> None:
        """The draft just made had the draft's own probability `confidence`: the chance so far is updated with it."""
        self._survive *= confidence ** self.gamma
        self._expected += self._survive

    def end_round(self, confidences: list[float], n_accepted: int, committed: int) -> CostDecision:
        """Learn from the round's verdict (n_accepted of the drafts with these confidences survived; `committed`
        tokens kept) and return its record."""
        k = len(confidences)
        share = self._share if k else 0.0
        record = CostDecision(self.rate, self._choices, self._expected, k * self.c + self.v[k] + share, self.c,
                              list(self.v), self._share)
        examined = confidences[:n_accepted + 1]  # the accepted and the one rejected
        self.positions.add(len(examined), n_accepted)
        self.examined += [(sure, i < n_accepted) for i, sure in enumerate(examined)]
        if confidences:
            self.examined = self.examined[-FIT_LAST:]
            self.gamma = fit_gamma(self.examined)
        self.tokens, self.cost = self.tokens + committed, self.cost + record.expected_cost
        self.plain_in_a_row = self.plain_in_a_row + 1 if k == 0 else 0
        return record


def predicted_speedup(rounds: list) -> float | None:
    """The rule's own prediction for a run, over the target alone: the tokens it expected its rounds to yield over
    the one-token target steps it expected them to cost (a target step yields one token). None: it priced none."""
    priced = [r.cost for r in rounds if r.cost is not None]
    cost = sum(d.expected_cost for d in priced)
    return sum(d.expected_tokens for d in priced) / cost if cost > 0 else None

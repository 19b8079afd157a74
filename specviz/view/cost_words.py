"""The cost-aware stop rule in words: why a round drafted as many tokens as it did, with the numbers a student can
redo (the survive estimate against the run's rate × the draft's cost), the run's account of it, a run slower than the
target alone and why (`slower_words`), and the draft step's price set beside what the run paid for one (`price_note`). Plain text (no markup; the page escapes it), so the page,
the CLI's round lines and the summary say the same.
"""

from __future__ import annotations

from specviz.algorithm.acceptance import PROBE_EVERY_AT_ANY_PRICE
from specviz.algorithm.cost_rule import predicted_speedup
from specviz.record.cost_profile import CostProfile
from specviz.record.round_costs import round_costs
from specviz.record.stats import speedups, step_times, target_step_time
from specviz.record.trace import DraftChoice, PassCosts, Round, Trace
from specviz.settings import defaults
from specviz.settings.bounds import COST_RULE
from specviz.view.style import significant

ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def ordinal(n: int) -> str:
    return ORDINALS[n - 1] if n <= len(ORDINALS) else f"{n}th"


def pass_costs_text(profile: CostProfile | None, k: int = defaults.K) -> str:
    """What a target pass costs on the loaded pair's kernels, as the model line says it: 't(1) 79 ms, t(5) 131 ms:
    v = 1.66, a verify pass over K + 1 = 5 tokens in one-token steps'; '' before any measurement. v is worked out
    from the two times as printed, so a student who divides them gets it."""
    if profile is None or not profile.target_s:
        return ""
    one, more = round(profile.t(1) * 1000), round(profile.t(k + 1) * 1000)
    return (f"t(1) {one} ms, t({k + 1}) {more} ms: v = {more / max(one, 1):.2f}, a verify pass over K + 1 = {k + 1} "
            f"tokens in one-token steps ({profile.source})")


def speculation_off(rnd: Round) -> bool:
    """The cost-aware rule drafted nothing this round because no draft would have paid (a plain target step)."""
    return rnd.cost is not None and rnd.k == 0 and bool(rnd.cost.choices) and not rnd.cost.choices[0].drafted


def round_note(rnd: Round, prices: PassCosts | None, eos_ids=()) -> str:
    """Why the cost-aware rule drafted rnd.k tokens this round, at the run's prices (Trace.pass_costs); '' where it
    did not weigh this round. `eos_ids`: the run's end-of-text ids (a draft of one ends the round's drafting)."""
    if rnd.cost is None or prices is None or not rnd.cost.choices:
        return ""
    d = rnd.cost
    said = [f"Cost-aware K ({_rate_words(d.rate)}):"]
    if d.choices[0].probe:
        said.append(f"a probe: after {PROBE_EVERY_AT_ANY_PRICE} rounds without drafts it drafted one anyway, to "
                    f"measure this run's acceptance again.")
    last = d.choices[-1]
    n = len(d.choices)
    if last.drafted:
        said.append(f"each of its {rnd.k} draft{'s' * (rnd.k != 1)} paid for its cost; {_why_no_more(rnd, prices, eos_ids)}.")
        return " ".join(said)
    survive, rate, cost, value = weighing(last.survive, d.rate, last.cost)
    what = ("no draft would have paid, so the round is a plain target step, as decoding alone makes it"
            if n == 1 else f"it stopped at {rnd.k}")
    said.append(f"the {ordinal(n)} draft's estimated chance of surviving was {survive} (an estimate from the draft's "
                f"own probabilities and this run's acceptance so far, not a measured probability). It would have cost "
                f"{_cost(cost, last, n, rnd, prices)} of a target step, which at this run's rate makes {rate} × {cost} = "
                f"{value} tokens. {survive} < {value}: the draft would have added fewer tokens than its cost makes at "
                f"that rate, so {what}.")
    if last.gain < 0 and n < len(round_prices(rnd, prices)[1]) - 1:
        said.append("Drafting on past it would not have paid either (at best "
                    f"{last.gain:.2g} tokens).")
    return " ".join(said)


def round_reason(rnd: Round, prices: PassCosts | None, eos_ids=()) -> str:
    """round_note in one line, for the presenter view (view/why_k.py): why the cost-aware rule drafted rnd.k tokens,
    with the one comparison that decided it; '' where it did not weigh this round.

    'no draft would pay: the first's chance of surviving, 0.41, is below 1.20 × 0.45 = 0.54 tokens, what its cost
    makes at this run's rate'; 'each of its 8 drafts paid for its cost; K = 8 is the most a round drafts'."""
    if rnd.cost is None or prices is None or not rnd.cost.choices:
        return ""
    d, last, n = rnd.cost, rnd.cost.choices[-1], len(rnd.cost.choices)
    if d.choices[0].probe:
        return (f"a probe: after {PROBE_EVERY_AT_ANY_PRICE} rounds without drafts it drafted one anyway, to measure "
                "again")
    if last.drafted:
        return f"each of its {rnd.k} draft{'s' * (rnd.k != 1)} paid for its cost; {_why_no_more(rnd, prices, eos_ids)}"
    survive, rate, cost, value = weighing(last.survive, d.rate, last.cost)
    what = "no draft would pay" if n == 1 else f"it stopped at {rnd.k}"
    return (f"{what}: the {ordinal(n)} draft's estimated chance of surviving, {survive}, is below {rate} × {cost} = "
            f"{value} tokens, what its cost makes at this run's rate")


def _why_no_more(rnd: Round, prices: PassCosts, eos_ids) -> str:
    """Why a round whose every weighed draft paid drafted no more: the end-of-text token, K, or the tokens left."""
    if rnd.drafts and rnd.drafts[-1].token_id in eos_ids:
        return "drafting stopped at the end-of-text token, after which nothing is drafted"
    if rnd.k >= len(round_prices(rnd, prices)[1]) - 1:
        return f"K = {rnd.k} is the most a round drafts"
    return "the tokens left to generate allowed no more"


def _rate_words(rate: float) -> str:
    return ("the run had made no more than one token per target step of cost so far, the target alone's rate"
            if rate <= 1.0 else f"this run was making {rate:.2f} tokens per target step of cost")


def round_prices(rnd: Round, prices: PassCosts) -> tuple[float, list[float]]:
    """(c, v) the rule weighed this round at: its own (they follow what the run's rounds paid), else the run's (a
    trace from before the rule was repriced each round)."""
    d = rnd.cost
    return (d.c, d.v) if d is not None and d.c is not None and d.v else (prices.c, prices.v)


def _cost(cost: str, choice: DraftChoice, n: int, rnd: Round, prices: PassCosts) -> str:
    """'0.182 (c = 0.135 for the draft step + v(4) − v(3) = 0.047 for the longer verify pass)': the printed cost
    (weighing's) with its parts, to as many figures as it, more where the printed parts would not add up to it; a first
    draft whose draft lags has a third, its share of the draft's catch-up: on the prompt before the run's first draft
    (the draft reads it then), on the tokens plain rounds committed after them."""
    c_at, v_at = round_prices(rnd, prices)
    share = rnd.cost.catch_up if n == 1 else 0.0
    longer, figures = v_at[n] - v_at[n - 1], len(cost.replace(".", "").lstrip("0"))
    for digits in range(figures, figures + 6):
        c, more, lag = (significant(x, digits) for x in (c_at, longer, share))
        if significant(float(c) + float(more) + (float(lag) if share else 0.0), figures) == cost:
            break
    caught = (f" + {lag} for its share of the draft's catch-up on the tokens it has not read (the prompt, before its "
              f"first draft of the run; after plain rounds, the tokens they committed)") if share else ""
    return f"{cost} (c = {c} for the draft step + v({n}) − v({n - 1}) = {more} for the longer verify pass{caught})"


def weighing(survive: float, rate: float, cost: float) -> tuple[str, str, str, str]:
    """(survive, rate, cost, rate × cost) as printed beside the rule's comparison: three significant figures, more
    where needed (the rate and the cost may carry a figure more than the product), so that the printed rate times the
    printed cost, rounded as the product is printed, gives the printed product, and the printed survive stays below
    it, as the numbers are (the rule stopped because it was).
    weighing(0.41, 1.2, 0.45) -> ('0.410', '1.20', '0.450', '0.540')"""
    for digits in range(3, 10):
        rate_s, cost_s = significant(rate, digits), significant(cost, digits)
        for fewer in range(digits, 2, -1):
            survive_s, value_s = significant(survive, fewer), significant(rate * cost, fewer)
            if (significant(float(rate_s) * float(cost_s), fewer) == value_s
                    and float(survive_s) < float(value_s)):
                return survive_s, rate_s, cost_s, value_s
    return repr(survive), repr(rate), repr(cost), repr(rate * cost)


def cost_aware(trace: Trace) -> bool:
    """Whether the run was set to the cost-aware rule (adaptive K, stop rule "cost")."""
    return trace.settings.get("stop_rule") == COST_RULE and bool(trace.settings.get("adaptive"))


def run_account(trace: Trace) -> tuple[str, str, str] | None:
    """The summary's item for a run under the cost-aware rule: (name, value, why), or None for another rule."""
    if not cost_aware(trace):
        return None
    if trace.pass_costs is None:
        return ("cost-aware K", "fell back", trace.rule_note or "the run could not be priced")
    later = trace.rounds[1:]
    off = sum(speculation_off(r) for r in later)
    p = trace.pass_costs
    predicted = predicted_speedup(trace.rounds)
    load = f"{p.load} run{'s' * (p.load != 1)} in flight"
    c, v, repriced = last_prices(trace)
    then = (f"; then each round by what the rounds before it paid, the last at c = {c:.3g}, v(4) = "
            f"{v[min(4, len(v) - 1)]:.3g}" if repriced else "")
    return ("cost-aware K", f"speculation off in {off} of {len(later)} rounds · {load}",
            f"priced by {p.source} at {load}: a draft step c = {p.c:.3g} of a target step, verifying 4 drafts "
            f"v(4) = {p.v[min(4, len(p.v) - 1)]:.3g}{then}" + (f"; its own prediction {predicted:.2f}× the target "
                                                                f"alone after round 1" if predicted else ""))


def last_prices(trace: Trace) -> tuple[float, list[float], bool]:
    """(c, v) of the run's last round the rule weighed, and whether they differ from the prices it began with (it
    is repriced each round by what its rounds paid: engine/batch_prices.py)."""
    p = trace.pass_costs
    weighed = [r for r in trace.rounds if r.cost is not None]
    c, v = round_prices(weighed[-1], p) if weighed else (p.c, p.v)
    return c, v, (c, list(v)) != (p.c, list(p.v))


# --- a run slower than the target alone, and why -------------------------------------------------------------

def slower_words(trace: Trace) -> str:
    """Where the run's speedup over the target alone is below 1, that it was slower and why, from what its rounds
    after the first paid and kept (record/round_costs.py) and, under the cost-aware rule, what the rule priced them
    at; '' where it was not slower, or has no baseline. Each ratio is worked from the printed figures.

    'Slower than the target alone (0.93×): after round 1 a round kept 1.53 tokens for 1.66 steps of the target
    alone (drafting 0.45, verifying 1.21), 0.92 tokens a step where the target alone makes 1; the cost-aware rule
    priced a round at 1.44 steps for 1.61 tokens expected, 1.12 a step.'"""
    both, costs = speedups(trace), round_costs(trace)
    if both is None or both[0].beyond or both[0].value.median >= 1 or costs is None or costs.paid <= 0:
        return ""
    tokens, draft, verify = (f"{x:.2f}" for x in (costs.tokens, costs.draft, costs.verify))
    paid = f"{float(draft) + float(verify):.2f}"
    said = (f"Slower than the target alone ({both[0].value.median:.2f}×): after round 1 a round kept {tokens} tokens "
            f"for {paid} steps of the target alone (drafting {draft}, verifying {verify}), "
            f"{float(tokens) / float(paid):.2f} tokens a step where the target alone makes 1")
    if cost_aware(trace) and costs.priced:
        priced, expected = f"{costs.priced:.2f}", f"{costs.expected:.2f}"
        said += (f"; the cost-aware rule priced a round at {priced} steps for {expected} tokens expected, "
                 f"{float(expected) / float(priced):.2f} a step")
    return said + "."


# --- the price of a draft step against what the run paid --------------------------------------------------------

PRICE_MARGIN = 0.15  # a price further than this from what the run paid (relative to it) is said to be off


def paid_times(trace: Trace) -> tuple[float, float] | None:
    """(seconds of a draft step, seconds of a step of the target alone) as the run paid them, from its own timings: its
    c is the first ÷ the second. The draft's side is its seconds per drafted token in the rounds after the first, the
    round whose draft step read the prompt left out (stats.step_times); the target's is its baseline's median step
    after the first (stats.target_step_time), as measure/measured.py's steady state takes them. None without a
    baseline or without a drafted token."""
    draft = step_times(trace.rounds)[0] if trace.rounds else None
    step = target_step_time(trace.baseline) if trace.baseline else None
    return (draft, step) if draft and step else None


def price_note(trace: Trace) -> str:
    """The cost-aware rule's price of a draft step beside what the run paid for one, and, where they differ by more
    than PRICE_MARGIN, that the price was off and which way it pushed K; '' for another rule, a run the rule could not
    price, or one with no baseline (nothing to set the price beside). Every figure is worked from the printed ones.

    'Priced at c = 0.287 a draft step (a short measurement when the pair loaded); this run paid c = 0.363 (its own
    timings: 40.09 ms a draft step ÷ 110.4 ms a step of the target alone). The price was off: 21 % below what the run
    paid (more than 15 %), so each draft looked cheaper than it was: the price pushed K up.'"""
    times = paid_times(trace)
    if not cost_aware(trace) or trace.pass_costs is None or times is None:
        return ""
    c, _, repriced = last_prices(trace)
    price, (draft, step, paid) = significant(c, 3), _worked(*times)
    source = ("by what its rounds before it paid, its last price" if repriced else
              trace.pass_costs.source.split(", ")[0])  # its first part: which measurement (then the pair, the device)
    said = (f"Priced at c = {price} a draft step ({source}); this run paid c = {paid} (its own timings: {draft} ms a "
            f"draft step ÷ {step} ms a step of the target alone).")
    off, margin = float(price) / float(paid) - 1, f"{PRICE_MARGIN * 100:.0f} %"
    if abs(off) <= PRICE_MARGIN:
        return f"{said} The price was within {margin} of it."
    where, looked, k = ("below", "cheaper", "pushed K up") if off < 0 else ("above", "dearer", "held K down")
    return (f"{said} The price was off: {abs(off) * 100:.0f} % {where} what the run paid (more than {margin}), so each "
            f"draft looked {looked} than it was: the price {k}.")


def _worked(draft_s: float, step_s: float) -> tuple[str, str, str]:
    """(the draft step, the target's step, c) as printed: c to three significant figures, the two times in
    milliseconds to as many as make their printed quotient the printed c. (0.04009, 0.1104) -> ('40.09', '110.4',
    '0.363'), since 40.1 ÷ 110 would give 0.365."""
    c = significant(draft_s / step_s, 3)
    for digits in range(3, 9):
        draft, step = significant(draft_s * 1000, digits), significant(step_s * 1000, digits)
        if significant(float(draft) / float(step), 3) == c:
            break
    return draft, step, c

"""Statistics of a recorded run, each a pure function of a trace (its rounds, summary, baseline and settings): the
one home of the numbers the engine saves in the summary and the page, the CLI, the Lab and the benchmark read.

- The run: `summarize` (the Summary a trace saves), `acceptance_rate`, tokens/s after round 1 beside the target
  alone's (`decode_speed`, `baseline_decode_speed`, `decode_speedup`), the target alone's step (`target_step_time`),
  the whole run's `speedup_over_baseline`.
- Speedups as a paper publishes them (`speedups`): with the baseline's repeats, the median of the turns' ratios with
  their range (`Spread`, written one way, '1.10 (0.90–1.20)', by `Spread.text`), each beside the most it could be if
  drafting were free (`Ceiling`: the run's tokens over the seconds of its own target passes, over the target alone's
  tokens/s; a speedup above it is timing noise or a fault, never a result). Since format version 9 each turn records
  its own passes' seconds, so each turn has its own ceiling (`turn_ceilings`) and the ceilings' median and range stand
  beside the speedups': a turn's speedup never passes its own ceiling (its passes are part of its wall clock), so
  neither does any printed end of the range.
  How steady each side's turns ran (`turn_rates`; `quiet`: each within QUIET = 1.15×) says how quiet the machine was;
  one figure is below another only beyond that (`Spread.below`).
- The rounds after the first, whose target pass also encodes the prompt (`later_rounds`): `step_times` and
  `mean_drafts`, from which measure/measured.py reads the cost model's c and v. Round sizes: `set_k`, the K a run
  was set to; `round_shares` of all rounds (the Lab's measured point), and acceptance as real systems report it,
  from the chain rounds: per position (of the drafts tested at position i = 1 … K of their round, how many were
  accepted: E(α, K) assumes one α at every position, independent of the others, and vLLM, SGLang and llama.cpp
  report these counts because the measured rates fall with the position), and round sizes (how many rounds of K
  drafts committed n = 1 … K + 1 tokens, against that assumption's (1 − α)·α^(n−1) and α^K, round_size_probs).

Which acceptance metric each number is: `acceptance_rate` in the summary is accepted ÷ tested drafts over the run
(llama.cpp's definition since its #14104); tokens per target pass is the "mean acceptance length" (accepted + 1 a
round, EAGLE's); the per-position rate is accepted ÷ tested at that position.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from specviz.record.trace import ACCEPTED, DISCARDED, Baseline, Repeats, Round, Summary, TimedRun, Trace


# --- the run -----------------------------------------------------------------------------------------------------

def acceptance_rate(rounds: list[Round]) -> float:
    """Accepted over examined draft tokens (bonus tokens and replacements never count); 0 when none examined."""
    examined = [d for r in rounds for d in r.drafts if d.fate != DISCARDED]
    return sum(d.fate == ACCEPTED for d in examined) / len(examined) if examined else 0.0


def summarize(rounds: list[Round], total_time_s: float) -> Summary:
    """Summary figures of a run, computed from its rounds only (so the UI and CLI quote one source)."""
    drafts = [d for r in rounds for d in r.drafts]
    examined = [d for d in drafts if d.fate != DISCARDED]
    accepted = sum(d.fate == ACCEPTED for d in drafts)
    new_tokens = sum(r.tokens_this_pass for r in rounds)
    overlaps = [d.overlap for d in examined if d.overlap is not None]
    return Summary(
        n_rounds=len(rounds),
        n_new_tokens=new_tokens,
        n_drafted=len(drafts),
        n_examined=len(examined),
        n_accepted=accepted,
        acceptance_rate=acceptance_rate(rounds),
        mean_overlap=sum(overlaps) / len(overlaps) if overlaps else 0.0,
        tokens_per_pass=new_tokens / len(rounds) if rounds else 0.0,
        first_token_time_s=rounds[0].draft_time_s + rounds[0].verify_time_s if rounds else 0.0,
        draft_time_s=sum(r.draft_time_s for r in rounds),
        verify_time_s=sum(r.verify_time_s for r in rounds),
        total_time_s=total_time_s,
        tokens_per_s=new_tokens / total_time_s if total_time_s > 0 else 0.0,
    )


def decode_speed(trace: Trace) -> float | None:
    """Tokens/s after the first round, by the wall clock: throughput, apart from the latency of the first tokens
    (round 1 also encodes the prompt). None for a one-round run: only its whole-run rate exists."""
    s = trace.summary
    later_tokens = s.n_new_tokens - trace.rounds[0].tokens_this_pass
    later_time = s.total_time_s - s.first_token_time_s
    return later_tokens / later_time if later_tokens > 0 and later_time > 0 else None


def after_first(tokens: int, first_s: float, end_s: float) -> float | None:
    """Tokens/s after the first token: the tokens after it over the time from it to the last, None for one token or
    no time between (the first token's step also encoded the prompt, so it is left out). (5, 1.0, 3.0) -> 2.0."""
    return (tokens - 1) / (end_s - first_s) if tokens > 1 and end_s > first_s else None


def baseline_decode_speed(b: Baseline) -> float | None:
    """The target alone's tokens/s after its first token (whose step also encoded the prompt)."""
    return after_first(len(b.output_token_ids), b.first_token_time_s, b.total_time_s)


def target_step_time(b: Baseline) -> float | None:
    """Seconds of one target-only decoding step: the median step after the first (which also encoded the
    prompt); for a version-1 trace, the mean of those steps. None for a one-token baseline."""
    if len(b.step_times_s) > 1:
        return statistics.median(b.step_times_s[1:])
    n = len(b.output_token_ids)
    return (b.total_time_s - b.first_token_time_s) / (n - 1) if n > 1 else None


def speedup_over_baseline(trace: Trace) -> float | None:
    """The run's tokens/s over the target alone's (its baseline's), whole runs: the median over the baseline's
    repeats where it has them, else this one run's; None without a baseline, a summary or tokens on either side."""
    both = speedups(trace)
    return both[0].value.median if both else None


def decode_speedup(trace: Trace) -> float | None:
    """Tokens/s after the first round over the baseline's after its first step (the median over the repeats where
    there are some); None without a baseline or a summary, or where either side has no tokens after its first."""
    both = speedups(trace)
    return both[1].value.median if both and both[1] else None


# --- speedups as a paper publishes them ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Spread:
    """Repeated measurements of one figure: their median, least and most. [1.2, 0.9, 1.1] -> 1.1 (0.9-1.2), 3 runs."""

    median: float
    low: float
    high: float
    runs: int

    @property
    def ratio(self) -> float:
        """The most over the least: [1.2, 0.9, 1.1] -> 1.33."""
        return self.high / self.low

    def below(self, other: "Spread") -> bool:
        """Below `other` beyond what turns vary: its most below other's least, and where either was timed once (no
        range to judge by) by more than QUIET. 7.1 against 7.1, a turn each: not below; 5.0 (4.8–5.1) against 7.1
        (6.9–7.3): below."""
        return self.high < other.low and (min(self.runs, other.runs) > 1 or self.median * QUIET < other.median)

    def text(self, digits: int = 2, unit: str = "", aside: str = "({})") -> str:
        """The median, then its range in `aside`, the one way a median with its range is written:
        [1.2, 0.9, 1.1] -> '1.10 (0.90–1.20)'; digits=1, unit='×' -> '1.1× (0.9–1.2)'; a page may set `aside` to
        '<small>({})</small>'."""
        span = f"{self.low:.{digits}f}–{self.high:.{digits}f}"
        return f"{self.median:.{digits}f}{unit} {aside.format(span)}"


def spread(values: list[float]) -> Spread:
    return Spread(statistics.median(values), min(values), max(values), len(values))


@dataclass(frozen=True)
class Ceiling:
    """The most a run could gain over the target alone if drafting were free: its rounds would then take only their
    target passes, so ceiling = (tokens ÷ seconds of the rounds' target passes) ÷ the target alone's tokens/s.
    55 tokens in 19.2 s of passes (2.86 tok/s) against the target alone's 1.00 tok/s: 2.86×.

    Priced from the trace's own measurements: the rounds' verify times (each a pass over its round's K + 1 tokens,
    at the run's own context lengths and on the machine as it was then) and the target alone's own timing. Not
    from the pair's recorded pass costs (assets/costs), measured another day at another context: on the rewrite
    example their t(5)/t(1) is 1.01 while the run's own 5-token passes took 0.93 of its baseline's median step.
    Not the tokens per target pass either, which assumes no pass costs less than a one-token step: in bfloat16 on
    this project's CPU a pass over two or three tokens measured cheaper than over one. The target alone's side is
    its tokens/s (its mean step, not the median), the very figure the speedup divides by, so the run the rounds are
    from never passes its own ceiling (its passes are part of its wall clock); only the turns, other runs of the
    same settings timed at other moments, can."""

    tokens: int  # tokens the priced rounds committed
    passes: int  # their target passes: one a round
    pass_s: float  # seconds of those passes: the rounds' verify times
    alone: float  # the target alone's tokens/s over the same stretch (its whole run, or after its first token)

    @property
    def value(self) -> float:
        return self.tokens / self.pass_s / self.alone

    @property
    def above_tokens_per_pass(self) -> bool:
        """Whether the target alone took longer a token than a round's pass took on average (so the ceiling is
        above the tokens per target pass, which assumes no pass costs less than a one-token step)."""
        return 1 / self.alone > self.pass_s / self.passes


def ceiling(rounds: list[Round], alone: float | None) -> Ceiling | None:
    """The ceiling of a speedup over these rounds against the target alone's tokens/s; None where a side has no
    time to price (rounds with no recorded pass times, as a hand-made trace may hold)."""
    pass_s = sum(r.verify_time_s for r in rounds)
    if not (rounds and pass_s > 0 and alone):
        return None
    return Ceiling(sum(r.tokens_this_pass for r in rounds), len(rounds), pass_s, alone)


@dataclass(frozen=True)
class Speedup:
    """A measured speedup beside the most it could be if drafting were free (its `Ceiling`, priced from the run's own
    passes); above it, the timing is noise (or a fault), never a result. With turns that recorded their passes
    (format version 9), each turn's own ceiling too: `ceilings`, their median and range, and `over`, the turns whose
    speedup passed their own ceiling (none can, unless the file's times disagree with each other)."""

    value: Spread  # one value and runs = 1 where there are no repeats
    ceiling: Ceiling | None  # the run shown's; None: the rounds recorded no pass times, so no ceiling is known
    ceilings: Spread | None = None  # each turn's own ceiling; None: one run each, or turns recorded before version 9
    over: int = 0  # turns whose speedup is above their own ceiling

    @property
    def per_turn(self) -> bool:
        """Whether each turn's ceiling is known (the turns recorded their target passes)."""
        return self.ceilings is not None

    @property
    def beyond(self) -> bool:
        """Not a result: a turn above its own ceiling; without ceilings per turn, the median above the run shown's."""
        if self.ceilings is not None:
            return self.over > 0
        return self.ceiling is not None and self.value.median > self.ceiling.value


def run_lengths(trace: Trace) -> list[tuple[int, int]]:
    """(the run's tokens, the target alone's) of each turn, or of the one run each; [] without a baseline or summary.
    Where they differ a speedup compares tokens/s of runs of different lengths (view/summary.py says so)."""
    s, b = trace.summary, trace.baseline
    if not (s and b):
        return []
    if b.repeats is not None:
        return [(x.tokens, t.tokens) for x, t in zip(b.repeats.speculative, b.repeats.target)]
    return [(s.n_new_tokens, len(b.output_token_ids))]


def run_speed(t: TimedRun) -> float:
    return t.tokens / t.total_s


def run_decode_speed(t: TimedRun) -> float | None:
    """Tokens/s after the first token (round 1, the target's prefill, commits one since format version 3)."""
    return after_first(t.tokens, t.first_s, t.total_s)


QUIET = 1.15  # each side's fastest turn over its slowest, at most, for turns timed on a quiet machine: the same run
#               of the same settings takes the same time unless other work slows it (record-examples times an example
#               again beyond it, and the page says how far its turns varied)


def turn_rates(r: Repeats) -> tuple[Spread, Spread]:
    """Tokens/s of each side's turns, (the run's, the target alone's), each with its least and most: how steady the
    machine was while they ran. Target alone at 6.36 … 9.27 tok/s: ratio 1.46, not quiet."""
    return spread([run_speed(t) for t in r.speculative]), spread([run_speed(t) for t in r.target])


def quiet(r: Repeats) -> bool:
    """Whether each side's turns ran within QUIET times of each other."""
    return all(side.ratio <= QUIET for side in turn_rates(r))


def turn_speedups(r: Repeats) -> list[float]:
    """Each turn's run over its target alone, whole runs: [2.0, 2.2, 1.9] for three turns."""
    return [run_speed(s) / run_speed(t) for s, t in zip(r.speculative, r.target)]


def turn_decode_speedups(r: Repeats) -> list[float]:
    """Each turn's decode speed over its target alone's (turns where either side has one token only left out)."""
    return [s / t for s, t in _decode_pairs(r)]


def _decode_pairs(r: Repeats) -> list[tuple[float, float]]:
    pairs = [(run_decode_speed(s), run_decode_speed(t)) for s, t in zip(r.speculative, r.target)]
    return [(s, t) for s, t in pairs if s and t]


def turn_ceilings(r: Repeats) -> list[float] | None:
    """Each turn's ceiling, whole runs: its run's tokens over the seconds of its own target passes, over its target
    alone's tokens/s. 48 tokens in 6.0 s of passes against 2.0 tok/s alone: 4.0. None where a turn did not record its
    passes (format versions 7-8)."""
    if any(not s.pass_s for s in r.speculative):
        return None
    return [s.tokens / s.pass_s / run_speed(t) for s, t in zip(r.speculative, r.target)]


def turn_decode_ceilings(r: Repeats) -> list[float] | None:
    """Each turn's ceiling of the decode speed: its tokens after round 1 over its passes after round 1, over its target
    alone's decode speed (the turns turn_decode_speedups keeps, in the same order); None as turn_ceilings."""
    turns = [(s, t) for s, t in zip(r.speculative, r.target) if run_decode_speed(s) and run_decode_speed(t)]
    if any(not s.later_pass_s for s, _ in turns):
        return None
    return [(s.tokens - 1) / s.later_pass_s / run_decode_speed(t) for s, t in turns]


def _against(values: list[float], ceilings: list[float] | None, shown: Ceiling | None) -> Speedup:
    """A speedup's turns beside each turn's own ceiling, where known, and the run shown's."""
    if not ceilings:
        return Speedup(spread(values), shown)
    return Speedup(spread(values), shown, spread(ceilings), sum(v > c for v, c in zip(values, ceilings)))


def speedups(trace: Trace) -> tuple[Speedup, Speedup | None] | None:
    """(the whole run's speedup, the decode speed's or None) with their ceilings: the median and range over the
    baseline's repeats (beside each turn's own ceiling where the turns recorded their passes), or this one run's ratio
    where it has none; None without a baseline or a summary."""
    s, b = trace.summary, trace.baseline
    if not (s and b and trace.rounds and s.tokens_per_s > 0 and b.tokens_per_s > 0):
        return None
    later = later_rounds(trace.rounds)
    shown = ceiling(trace.rounds, b.tokens_per_s), ceiling(later, baseline_decode_speed(b))
    if b.repeats is not None:
        ratios = turn_decode_speedups(b.repeats)
        whole = _against(turn_speedups(b.repeats), turn_ceilings(b.repeats), shown[0])
        decode = _against(ratios, turn_decode_ceilings(b.repeats), shown[1]) if ratios else None
    else:
        one = decode_speed(trace), baseline_decode_speed(b)
        whole = Speedup(spread([s.tokens_per_s / b.tokens_per_s]), shown[0])
        decode = Speedup(spread([one[0] / one[1]]), shown[1]) if all(one) else None
    return whole, decode if len(trace.rounds) > 1 else None


# --- the rounds after the first ----------------------------------------------------------------------------------

def later_rounds(rounds: list[Round]) -> list[Round]:
    """The rounds after the first, whose target pass also encodes the prompt; a one-round run's only round."""
    return rounds[1:] or rounds


def mean_drafts(rounds: list[Round]) -> float:
    """K̄: the mean drafts per round of these rounds (at least one round)."""
    return sum(r.k for r in rounds) / len(rounds)


def step_times(rounds: list[Round]) -> tuple[float | None, float]:
    """(seconds per drafted token, seconds per verify pass) of a run, from the rounds after the first, whose
    target pass encodes the prompt (a one-round run has only that one); draft steps also leave out the round
    whose first step encoded the prompt (round 2 since format version 3). None when nothing was drafted."""
    later = later_rounds(rounds)
    drafting = [r for r in later if not _draft_read_prompt(r)] or later
    drafted = sum(r.k for r in drafting)
    draft = sum(r.draft_time_s for r in drafting) / drafted if drafted else None
    return draft, sum(r.verify_time_s for r in later) / len(later)


def _draft_read_prompt(rnd: Round) -> bool:
    """Whether the round's first draft step fed the prompt: the draft model's cache was empty before it and drafting
    filled it. A drafter with no cache of its own (prompt lookup, Medusa heads, the EAGLE-style layer) leaves it at 0
    throughout: its draft time is a draft's own, every round."""
    return rnd.cache is not None and rnd.k > 0 and rnd.cache.draft[0] == 0 and rnd.cache.draft[1] > 0


# --- round sizes and acceptance by position ----------------------------------------------------------------------

def set_k(trace: Trace) -> int | None:
    """The K the run was set to draft (settings["k"]); None where the trace holds no whole number ≥ 1 there."""
    k = trace.settings.get("k")
    return k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else None


def round_shares(rounds: list[Round], k: int) -> list[float]:
    """The share of all rounds that committed j + 1 tokens, j = 0 … k (a round of more, where k is below the longest
    drafted, counted at k + 1); unlike round_sizes, round 1 and cut rounds count. Rounds committing 2 and 5 tokens,
    k = 4: [0, 0.5, 0, 0, 0.5]."""
    sizes = [min(r.tokens_this_pass, k + 1) for r in rounds]
    return [sizes.count(j + 1) / len(rounds) for j in range(k + 1)]


def drafted_a_tree(trace: Trace) -> bool:
    """Whether any round drafted a tree (whose drafts are branches, not positions of one chain)."""
    return any(r.tree for r in trace.rounds)


@dataclass(frozen=True)
class PositionCount:
    position: int  # 1-based place in the round's chain of drafts
    tested: int  # drafts at this position the target tested (not discarded after an earlier rejection)
    accepted: int

    @property
    def rate(self) -> float | None:
        return self.accepted / self.tested if self.tested else None


def chain_rounds(trace: Trace) -> list[Round]:
    """The rounds that drafted a chain (not round 1's prefill, not a tree's)."""
    return [r for r in trace.rounds if r.k and r.tree is None]


def per_position(trace: Trace) -> list[PositionCount]:
    """Tested and accepted drafts at each position 1 … the longest chain drafted."""
    rounds = chain_rounds(trace)
    longest = max((r.k for r in rounds), default=0)
    counts = []
    for i in range(longest):
        fates = [r.drafts[i].fate for r in rounds if i < r.k]
        tested = [f for f in fates if f != DISCARDED]
        counts.append(PositionCount(i + 1, len(tested), tested.count(ACCEPTED)))
    return counts


def cut_short(rnd: Round) -> bool:
    """Whether the run's end (the end-of-text token among the accepted drafts, or max new tokens) kept fewer of the
    round's tokens than verification gave (its accepted drafts and the one after): its size then says when the text
    ended, not what verification kept. A round that ends the run with all of them committed is not cut short."""
    return len(rnd.committed_ids) < rnd.n_accepted + 1


def round_sizes(trace: Trace, k: int) -> list[int]:
    """How many rounds that drafted exactly k committed n tokens, n = 1 … k + 1 (rounds cut short are left out)."""
    sizes = [0] * (k + 1)
    for r in chain_rounds(trace):
        if r.k == k and not cut_short(r):
            sizes[len(r.committed_ids) - 1] += 1
    return sizes

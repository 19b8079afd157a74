"""Drafters compared: the real engine run once per (drafter, K) on one prompt, against the target alone.

    for row in compare_drafters(engine, prompt, RunSettings(temperature=0, max_new_tokens=32), ks=[1, 2, 4, 8]):
        print(row)   # the target-only baseline first, then each drafter at each K, as each run finishes

Every model call happens in the engine (`Engine.baseline`, `Engine.run`); this module only chooses the runs and
summarises each trace into a `CompareRow`. The baseline is timed in the same call, so every speedup compares
numbers taken seconds apart on the same machine. No gradio, no plotly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Iterator

from specviz.engine import self_speculation
from specviz.engine import Engine, RunSettings
from specviz.drafters import CHAINS, LAYERS, REGISTRY
from specviz.settings.bounds import MAX_K, TARGET_ONLY, TARGET_ONLY_LABEL, whole_number
from specviz.record.trace import Baseline, Trace

LABELS = {TARGET_ONLY: TARGET_ONLY_LABEL, **{key: d.label for key, d in CHAINS.items()}}  # a row's drafter -> its label
ALL_KS = tuple(range(1, 9))  # the K range the lab offers
DEFAULT_KS = (1, 2, 4, 8)  # a subset: each K adds a run per drafter, and a run takes seconds on a CPU


@dataclass(frozen=True)
class CompareRow:
    """One run of the comparison, in the terms of the summary line."""

    drafter: str  # TARGET_ONLY or a chain drafter's key (RunSettings.drafter)
    k: int | None  # draft tokens per round; None for the baseline
    acceptance_rate: float | None  # accepted / examined drafts; None for the baseline (nothing is drafted)
    tokens_per_pass: float  # new tokens / target passes (1.0 for the baseline)
    tokens_per_s: float
    speedup: float  # tokens/s over the baseline's tokens/s from the same call
    n_new_tokens: int
    seconds: float  # wall time of the run
    draft_layers: int | None = None  # self-speculation's N; None for the other drafters

    @property
    def label(self) -> str:
        return layers_label(self.draft_layers) if self.draft_layers else LABELS[self.drafter]


def layers_label(n: int) -> str:
    """Self-speculation's drafter at N layers, in words: 14 -> "the target's first 14 layers"."""
    return f"the target's first {n} layer{'s' * (n != 1)}"


def check_ks(ks: Iterable | None) -> tuple[int, ...]:
    """The K values to run, sorted and without repeats; ValueError for none, a fraction, or one out of range.
    check_ks([4, 1, 4.0]) -> (1, 4)."""
    ks = list(ks or ())
    numbers = [whole_number(k) for k in ks]
    if None in numbers:
        raise ValueError(f"K values must be whole numbers, got {ks[numbers.index(None)]!r}")
    chosen = sorted(set(numbers))
    if not chosen:
        raise ValueError("choose at least one K value")
    if chosen[0] < 1 or chosen[-1] > MAX_K:
        raise ValueError(f"K values must be from 1 to {MAX_K}, got {chosen}")
    return tuple(chosen)


def plan(ks: tuple[int, ...], drafters: tuple[str, ...] = tuple(CHAINS),
         layers: tuple[int, ...] = (0,)) -> list[tuple[str, int | None, int]]:
    """The runs in the order they are made, as (drafter, K, N): the baseline, then the drafters alternating within
    each K, so slow drift in the machine's speed (another process, heat) touches all alike; self-speculation runs
    once per N in `layers` (0: half the target's layers; N is 0 for the other drafters).
    plan((1, 2), ("model", "lookup")) -> [("target", None, 0), ("model", 1, 0), ("lookup", 1, 0), ("model", 2, 0),
    ("lookup", 2, 0)]."""
    runs = [(drafter, k, n) for k in ks for drafter in drafters
            for n in (layers if REGISTRY[drafter].reads("draft_layers") else (0,))]
    return [(TARGET_ONLY, None, 0)] + runs


def layer_counts(engine: Engine, fractions: Iterable[float]) -> tuple[int, ...]:
    """Self-speculation's N for fractions of the target's layers: (0.25, 0.5) of 28 layers -> (7, 14)."""
    count = self_speculation.layer_count(engine.target)
    return tuple(sorted({max(1, min(count - 1, round(count * f))) for f in fractions}))


def baseline_row(baseline: Baseline) -> CompareRow:
    return CompareRow(TARGET_ONLY, None, None, 1.0, baseline.tokens_per_s, 1.0, len(baseline.output_token_ids),
                      baseline.total_time_s)


def trace_row(trace: Trace, baseline: Baseline) -> CompareRow:
    """A speculative run's row; its speedup is over `baseline`, which must come from the same call."""
    s = trace.summary
    speedup = s.tokens_per_s / baseline.tokens_per_s if baseline.tokens_per_s > 0 else 0.0
    n = trace.settings.get("draft_layers") if trace.drafter_spec.reads("draft_layers") else None
    return CompareRow(trace.settings["drafter"], trace.settings["k"], s.acceptance_rate, s.tokens_per_pass,
                      s.tokens_per_s, speedup, s.n_new_tokens, s.total_time_s, n)


def runnable(engine: Engine) -> tuple[tuple[str, ...], list[str]]:
    """(the chain drafters this engine can run now, a sentence for each it cannot: heads not trained yet)."""
    keys, notes = [], []
    for key, spec in CHAINS.items():
        problem = engine.unavailable(spec)
        if problem:
            notes.append(problem)
        else:
            keys.append(key)
    return tuple(keys), notes


def compare_drafters(engine: Engine, prompt: str, settings: RunSettings, ks: Iterable = DEFAULT_KS,
                     drafters: Iterable[str] | None = None, layers: tuple[int, ...] = (0,)) -> Iterator[CompareRow]:
    """Yield the target-only row, then one row per K and drafter (in `plan` order; self-speculation once per N in
    `layers`) as each run finishes. `drafters`: None for every chain drafter the engine can run (`runnable`).

    `settings` gives everything but K and the drafter (temperature, seed, max new tokens ...). Raises ValueError
    before any model runs for an empty or too long prompt, no K, an unknown drafter or an N the target lacks."""
    ks, drafters = check_ks(ks), runnable(engine)[0] if drafters is None else tuple(drafters)
    if not drafters or any(d not in CHAINS for d in drafters):
        raise ValueError(f"drafters must be some of {', '.join(CHAINS)}, got {list(drafters)!r}")
    for n in layers if LAYERS.key in drafters else ():
        engine.encode(prompt, replace(settings, drafter=LAYERS.key, draft_layers=n))
    engine.encode(prompt, replace(settings, k=ks[-1]))  # the largest K needs the most room in the context
    baseline = engine.baseline(prompt, settings)
    yield baseline_row(baseline)
    for drafter, k, n in plan(ks, drafters, layers)[1:]:
        # details=False: no top-10 candidates per position, so the time is the algorithm's, as the baseline's
        # is (the table needs only the summary)
        trace = engine.run(prompt, replace(settings, k=k, drafter=drafter, draft_layers=n), details=False)
        yield trace_row(trace, baseline)


HEADERS = ("drafter", "K", "acceptance α", "tokens / target pass", "tokens/s", "speedup")


def cells(row: CompareRow) -> list[str]:
    """One row as the table shows it (the lab's table and docs/benchmarks.md's Markdown alike)."""
    return [row.label, "–" if row.k is None else str(row.k),
            "–" if row.acceptance_rate is None else f"{row.acceptance_rate:.2f}",
            f"{row.tokens_per_pass:.2f}", f"{row.tokens_per_s:.2f}", f"{row.speedup:.2f}×"]


def markdown_table(rows: list[CompareRow]) -> str:
    """The rows as a Markdown table (docs/benchmarks.md's form)."""
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    return "\n".join(lines + ["| " + " | ".join(cells(r)) + " |" for r in rows])

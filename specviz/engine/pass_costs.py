"""What drafting and verifying cost on this machine, for the cost-aware stop rule (algorithm/cost_rule.py): a short
measurement when a pair loads, and the prices a run drafts by; and `time_passes`, the one timer of passes on a cached
context, which the Costs tab's full measurement (measure/pass_timing.py) times with too; and `draft_step_times`, the one
timer of a draft step as a run pays it, which both measurements time the draft's step at batch 1 with.

The short measurement times the target's pass over TOKENS new tokens (1 to 17) and one draft step, each a few
times over a cache of CONTEXT tokens (seconds for the packaged pair on 2 CPU cores, docs/engine.md), fed only ids and
positions the loaded pair has (a smaller vocabulary or context than the packaged pair's shortens them, see `_context`);
the Costs tab's full measurement (measure/pass_timing.py) replaces it on the engine when it runs. A draft step is timed
with the run's own draft pass (lean.py's, where it applies), since that is what a round pays, by both measurements
alike (`draft_step_times`), so their c differ only by noise and their caches' lengths; self-speculation's N layers are
timed the same way, once per N.
A profile that cannot price the run (another device or pair, a time missing, not a number or not positive) is
refused with the reason, and the run falls back to the threshold rule, saying why.

At load the short measurement is remembered per machine, pair and kernels (`remembered_or_measured`, a JSON file in
the model cache beside kernels.json): a later start reads it (about 50 s saved on 2 CPU cores, issue 64) instead of
timing again. A price measured at another moment is only where a run starts: each round after its first is weighed
at what the rounds before it paid (batch_prices.py, Engine.clock_for), though the shape of a run's prices (what
one more token adds to a pass it has not paid yet) still comes from it: so a measurement that other work slowed
(a longer pass timed cheaper than a shorter one) is never remembered. Delete the file to measure
again.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from pathlib import Path

import torch

from specviz.engine.decoding import forward, rollback
from specviz.models.timer import time_calls
from specviz.models.machine import cpu_flags, machine
from specviz.models.remembered import read_entries, remember
from specviz.record.cost_profile import CostProfile
from specviz.record.strict_json import build
from specviz.record.trace import PassCosts

# New tokens per target pass: K + 1 for K = 0, 1, 2, 3, 4, 7, 8, 16 (between: interpolated). 4 and 8 are measured,
# not interpolated: gguf-int4's kernel reads its weights once per block of four rows, so t jumps from 4 tokens to 5
# and from 8 to 9, and a line from t(3) to t(5) priced a pass over 4 tokens at 1.5 steps where it costs 1.25
# (2026-12-05, Intel Xeon AMX): the cost-aware rule then drafted 2 where 3 paid (docs/benchmarks.md).
TOKENS = (1, 2, 3, 4, 5, 8, 9, 17)
CONTEXT = 64  # cached tokens under every timed pass
REPEATS = 5  # timings per point; the median is kept (a target-alone step is timed the same way, by its median)
SHORT = "a short measurement when the pair loaded"
REMEMBERED = "a short measurement when the pair first loaded on this machine (remembered)"
REMEMBERED_FILE = "pass_costs.json"


def measure_pass_costs(engine) -> CostProfile:
    """The short profile of the engine's pair: the target over TOKENS new tokens, the draft model's step."""
    started = time.perf_counter()
    with torch.inference_mode():
        target = [statistics.median(_timings(engine, engine.target, None, n)) for n in TOKENS]
    draft = draft_step_s(engine, engine.draft)
    return CostProfile(engine.device, engine.dtype, engine.draft_name, engine.target_name, _context(engine),
                       list(TOKENS),
                       target, [1], [target[0]], [draft], time.perf_counter() - started, repeats=REPEATS,
                       source=SHORT, kernels=engine_kernels(engine),
                       kernels_why=getattr(engine, "dtype_why", ""))


def remembered_or_measured(engine, cache: Path) -> CostProfile:
    """The short profile this machine measured of this pair on these kernels at an earlier load, read from `cache`
    (its source says so); else measured now and remembered there. A remembered one that cannot price the pair (another
    device, a time missing or not positive), will not read, or was timed while other work slowed it
    (CostProfile.slowed) is measured again; a new one so slowed prices this load alone, evened, and is not remembered
    (its notes say why): timing it again at once, on a machine that is still busy, doubled a load's wait for little."""
    key = _remembered_key(engine)
    remembered = read_entries(Path(cache) / REMEMBERED_FILE).get(key)
    if remembered is not None:
        try:
            profile = dataclasses.replace(build(CostProfile, remembered, "a remembered cost profile"), source=REMEMBERED)
            if profile.problem(engine.device, engine.dtype, engine.target_name, engine_kernels(engine)) is None \
                    and profile.slowed() is None:
                return profile
        except (ValueError, TypeError):
            pass
    profile = measure_pass_costs(engine)
    slowed = profile.slowed()
    if slowed is None:
        remember(Path(cache) / REMEMBERED_FILE, key, dataclasses.asdict(profile))
    else:
        profile.notes.append(f"not remembered: {slowed}")
    return profile


def _remembered_key(engine) -> str:
    """What a remembered profile holds for: this machine (its CPU and speed flags, or its GPU), the threads, torch, the
    pair, its dtype and kernels."""
    return (f"{machine(engine.device)} | {cpu_flags()} | {torch.get_num_threads()} threads | torch {torch.__version__} | "
            f"{engine.draft_name} -> {engine.target_name} | {engine.dtype} | {engine_kernels(engine) or 'own kernels'}")


def engine_kernels(engine) -> str:
    """The engine's kernel path as a CostProfile records it: "" for its dtype's own kernels."""
    kernels = getattr(engine, "kernels", engine.dtype)
    return "" if kernels == engine.dtype else kernels


def draft_step_s(engine, drafter) -> float:
    """Seconds of one step of this drafter model with its run's own cache (a lean one where it applies)."""
    return statistics.median(draft_step_times(engine, drafter))


def draft_step_times(engine, drafter, context: int | None = None, repeats: int = REPEATS) -> list[float]:
    """Seconds of `repeats` steps of this drafter model at batch 1 with its run's own cache (Engine.new_draft_cache:
    lean.py's pass where it applies, else transformers' forward), over `context` cached tokens (None: this short
    measurement's): what a round pays a draft step. The Costs tab's measurement times its batch-1 draft step here."""
    with torch.inference_mode():
        return _timings(engine, drafter, engine.new_draft_cache(drafter), 1, context, repeats)


def _timings(engine, model, cache, n: int, context: int | None = None, repeats: int = REPEATS) -> list[float]:
    """Seconds of `repeats` passes of the run's own forward over n new tokens on a cache of `context` tokens (None:
    _context's), after one untimed pass (the first of a shape pays for kernel choice)."""
    from transformers import DynamicCache

    cache = DynamicCache() if cache is None else cache
    forward(model, _ids(engine, range(10, 10 + (context or _context(engine)))), cache, 1)
    return time_passes(lambda i: forward(model, _ids(engine, [i + 1] * n), cache, n), cache, engine.device, repeats,
                       warm_up=1)


def _context(engine) -> int:
    """The cached tokens under every timed pass: CONTEXT, or fewer where the pair's context cannot also hold the
    longest timed pass (a model with learned positions has no position past its last; a pass over 17 tokens on 64
    cached ones reads position 81)."""
    return max(1, min(CONTEXT, engine.max_positions - TOKENS[-1]))


def _ids(engine, ids) -> list[int]:
    """Token ids the pair has, whatever its vocabulary (which ids does not matter to the time, only how many)."""
    return [i % engine.vocab for i in ids]


def time_passes(feed, cache, device, repeats: int, warm_up: int = 0) -> list[float]:
    """Seconds of each of `repeats` calls of feed(i), a forward pass over new tokens on top of `cache` (i counts every
    call from 0), after `warm_up` untimed ones; the cache is cropped back to its length after each, so every pass sees
    the same cache. Passes are timed through timer.time_calls, as everything is: this module feeds the run's own
    forward (lean.py's draft pass where it applies), measure/pass_timing.py transformers' forward at a batch."""
    length = cache.get_seq_length()
    return time_calls(feed, device, repeats, warm_up, after=lambda: rollback(cache, length))


def prices(profile: CostProfile, step_s: float, most: int, load: int) -> PassCosts:
    """The rule's prices at `load` runs in flight, in one-token target steps at that load (CostProfile.prices_at):
    c, a draft step of this drafter (`step_s` at batch 1, grown with the load as the profile's draft's step grows),
    and v[n], the verify pass over n drafts for each of `load` runs (read once), each the least of the values at n
    and beyond and at least 1 (Prices.steady): the rule drafted three at most where one slow point at 5 tokens priced
    every draft past the third at 4.8 steps (measured 2026-12-01)."""
    at = profile.prices_at(load, most).steady()
    source = f"{profile.source}, {profile.target} on {profile.device} in {profile.dtype}"
    return PassCosts(step_s / profile.draft_step(1) * at.c, at.v, load, source)

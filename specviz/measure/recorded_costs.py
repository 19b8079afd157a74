"""The packaged pair's pass costs, recorded once and shipped (assets/costs/packaged.json), so the Costs tab draws a
measurement before any live one runs: marked as recorded (its date, machine and dtype) until the tab measures the
loaded pair. `record_costs` writes it (`python -m specviz record-examples --costs`, beside the recorded examples,
in the process that loaded the pair once); `recorded_costs` reads it back, strictly, or None where it is missing or
unreadable (the tab then says so and waits for a live measurement). `record_parts` adds what a draft from the target's
own state costs to the recording alone (`python -m tools.record_draft_parts`), leaving its other figures as they were.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

from specviz.engine.pass_costs import draft_step_times
from specviz.models.machine import machine
from specviz.measure import pass_timing
from specviz.measure.draft_parts import measure_parts
from specviz.record.cost_profile import CostProfile, DraftParts
from specviz.record.strict_json import build

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "assets" / "costs" / "packaged.json"
MAX_BYTES = 64 * 1024  # a profile is a few KiB; anything larger is not one


def record_costs(engine, path: Path = RECORDED, progress=None) -> CostProfile:
    """Measure the loaded pair as the Costs tab does, mark it recorded (today's date, the machine) and write it."""
    profile, busy = while_measuring(lambda: pass_timing.measure_costs(engine, progress=progress))
    when = time.strftime("%Y-%m-%d", time.gmtime())
    profile = dataclasses.replace(profile, recorded=f"{when} on {machine(engine.device)}{busy}",
                                  source=f"the recording of {when}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dataclasses.asdict(profile), indent=1, allow_nan=False), encoding="utf-8")
    return profile


def while_measuring(work):
    """work() -> (its result, how busy other work kept the machine meanwhile, in words (_load_words)): what a
    recording says beside its figures (the Costs tab's and the busy server's)."""
    before = _cpu_seconds()
    out = work()
    return out, _load_words(_other_work(before, _cpu_seconds()))


BUSY_CORES = 0.25  # other work, in cores kept busy on average, from which a recording says it slowed the passes


def _cpu_seconds() -> tuple[float, float, float] | None:
    """(the machine's busy CPU seconds, this process's, the wall clock) now; None where /proc/stat is not there."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    tick = os.sysconf("SC_CLK_TCK")
    own = os.times()
    return (user + nice + system + irq + softirq + steal) / tick, own.user + own.system, time.monotonic()


def _other_work(before, after) -> float | None:
    """The cores other work kept busy on average between two _cpu_seconds readings: the machine's busy time less
    this process's own (the load average counts the measurement's own threads, so it cannot say this)."""
    if before is None or after is None or after[2] <= before[2]:
        return None
    return max(0.0, (after[0] - before[0]) - (after[1] - before[1])) / (after[2] - before[2])


def _load_words(other: float | None) -> str:
    """How busy the machine was while measuring, said beside the recording: a shared machine's times are several
    times an idle one's."""
    if other is None:
        return ""
    if other >= BUSY_CORES:
        return f", other work keeping {other:.1f} cores busy meanwhile (it slows every pass)"
    return f", nothing else running (other work {other:.2f} cores)"


def recorded_costs(path: Path = RECORDED) -> CostProfile | None:
    """The shipped recording, checked as a trace's fields are; None where it is missing, oversized or malformed."""
    try:
        raw = path.read_bytes()
        if len(raw) > MAX_BYTES:
            return None
        profile = build(CostProfile, json.loads(raw), "recorded costs")
    except (OSError, ValueError, RecursionError):
        return None
    if not profile.recorded or profile.problem(profile.device, profile.dtype, profile.target, profile.path):
        return None
    return profile


def record_parts(engine, path: Path = RECORDED) -> DraftParts:
    """Time a draft from the target's own state part by part on the loaded pair, beside a one-token target pass and a
    draft step timed in the same run at the recording's context, and write them into the recording at `path` as its
    "parts", leaving its other figures as they were recorded; the parts. Refused for another pair, draft weights or
    dtype than the recording's (its figures and these would not describe the same models)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    want = (data.get("draft"), data.get("target"), data.get("dtype"))
    if want != (engine.draft_name, engine.target_name, engine.dtype):
        raise ValueError(f"the recording at {path} is of {want[0]} → {want[1]} in {want[2]}, not of the loaded "
                         f"{engine.draft_name} → {engine.target_name} in {engine.dtype}: load that pair")
    context, repeats = data["context"], pass_timing.REPEATS
    steps = [pass_timing.pass_times(engine.target, pass_timing.prefill(engine.target, context), 1, repeats, warm_up=1),
             draft_step_times(engine, engine.draft, context, repeats)]  # as measure_costs times the draft's step
    parts = measure_parts(engine, context, *steps, repeats=repeats)
    data["parts"] = dataclasses.asdict(parts)
    Path(path).write_text(json.dumps(data, indent=1, allow_nan=False), encoding="utf-8")
    return parts

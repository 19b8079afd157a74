"""The packaged pair's pass costs, recorded once and shipped (assets/costs/packaged.json), so the Costs tab draws a
measurement before any live one runs: marked as recorded (its date, machine and dtype) until the tab measures the
loaded pair. `record_costs` writes it (`python -m specviz record-examples --costs`, beside the recorded examples,
in the process that loaded the pair once); `recorded_costs` reads it back, strictly, or None where it is missing or
unreadable (the tab then says so and waits for a live measurement).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

from specviz.engine.machine import machine
from specviz.measure import pass_timing
from specviz.record.cost_profile import CostProfile
from specviz.record.strict_json import build

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "assets" / "costs" / "packaged.json"
MAX_BYTES = 64 * 1024  # a profile is a few KiB; anything larger is not one


def record_costs(engine, path: Path = RECORDED, progress=None) -> CostProfile:
    """Measure the loaded pair as the Costs tab does, mark it recorded (today's date, the machine) and write it."""
    profile = pass_timing.measure_costs(engine, progress=progress)
    when = time.strftime("%Y-%m-%d", time.gmtime())
    busy = f", load average {os.getloadavg()[0]:.0f} (other work on the machine slows every pass)" \
        if hasattr(os, "getloadavg") else ""  # a shared machine's times are several times an idle one's: said
    profile = dataclasses.replace(profile, recorded=f"{when} on {machine(engine.device)}{busy}",
                                  source=f"the recording of {when}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dataclasses.asdict(profile), indent=1, allow_nan=False), encoding="utf-8")
    return profile


def recorded_costs(path: Path = RECORDED) -> CostProfile | None:
    """The shipped recording, checked as a trace's fields are; None where it is missing, oversized or malformed."""
    try:
        raw = path.read_bytes()
        if len(raw) > MAX_BYTES:
            return None
        profile = build(CostProfile, json.loads(raw), "recorded costs")
    except (OSError, ValueError, RecursionError):
        return None
    if not profile.recorded or profile.problem(profile.device, profile.dtype, profile.target):
        return None
    return profile

"""The GPU time a model call asks ZeroGPU for: the least that covers the request.

ZeroGPU refuses a call that asks more than the visitor has left of their daily quota, and may end one that runs
past its ask; a shorter ask also queues sooner. So each call asks for a start plus the most its tokens can take:

    ask = GPU_START_S + Σ over the call's runs of (new tokens × seconds per token),   at most MAX_CALL_S

Seconds per token: until the GPU check has measured the pair on this GPU kind (MEASURED, empty today), the
documented bound GPU_S_PER_TOKEN for every request. Once measured, the slowest a run of this request can go: every
draft rejected, so each round makes one token and costs one verify pass plus its draft steps, in target steps:

    seconds per token = MARGIN × (1 + drafts per round × one draft step / one target step) / target tokens per s

so a larger K, a drafter that runs a model, and a slower pair ask more; copying earlier text drafts for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.drafters import DRAFT_MODEL, EARLIER_TEXT, TARGET_LAYERS, TARGET_STATE, drafter
from specviz.engine import RunSettings
from specviz.settings.bounds import TARGET_ONLY

# The start: the worker moves the weights to the GPU on its first call. The allowance per token is a chosen bound,
# not a measurement: a floor of 8.3 tokens/s. ZeroGPU charges the time used, not the time asked.
GPU_START_S = 20
GPU_S_PER_TOKEN = 0.12
SERVE_S = 90  # the busy server's live run: at most 60 s of serving (app/busy_server.py, LIVE_S), its warm-up, its load
COSTS_S = 90  # the cost measurement: several times what it took on 2-core CPUs (docs/benchmarks.md, "Why it pays")
# The most one call asks. ZeroGPU refuses a longer ask ("illegal duration"); its maximum is not documented, and
# 300 s (5 minutes) is what its maintainers gave (hub discussions zero-gpu-explorers/README #7 and #98). A request
# whose bound is longer asks this much and may be ended early: the page keeps what it has made by then.
MAX_CALL_S = 300
MARGIN = 1.5  # over a measured speed: runs of one request vary, and so do two GPUs of one kind (chosen)


@dataclass(frozen=True)
class PairSpeed:
    """What the GPU check's side by side (tools/gpu_check.sh) measured for one pair on one GPU kind."""

    target_tokens_per_s: float  # the target alone, greedy: one target step per token (its "target-only" row)
    draft_step_ratio: float  # c: one step of the pair's draft model over one target step (its "c" column)


# (preset, GPU kind as torch.cuda.get_device_name() names it) -> what the GPU check measured there. Empty: no GPU has
# run the check yet (README, "Status"), so every ask uses GPU_S_PER_TOKEN. The first report's figures go here.
MEASURED: dict[tuple[str, str], PairSpeed] = {}


def gpu_kind(device: str) -> str:
    """The name MEASURED knows a device by: the GPU's own ("NVIDIA L4"), or the device type ("cpu")."""
    return torch.cuda.get_device_name(device) if device.startswith("cuda") else device


def measured_speed(preset: str, device: str) -> PairSpeed | None:
    return MEASURED.get((preset, gpu_kind(device)))


def _draft_step(drafter_key: str, speed: PairSpeed) -> float:
    """One draft step in target steps: the draft model's measured c; the target's own first layers, at most a whole
    target step; drafting heads (a block and the target's output layer a head), at most a whole target step too;
    copied text, or no drafter (the target alone), nothing."""
    if drafter_key == TARGET_ONLY:
        return 0.0
    return {DRAFT_MODEL: speed.draft_step_ratio, TARGET_LAYERS: 1.0, TARGET_STATE: 1.0,
            EARLIER_TEXT: 0.0}[drafter(drafter_key).source]


def seconds_per_token(speed: PairSpeed | None, drafter_key: str = TARGET_ONLY, drafts: int = 0) -> float:
    """The most one new token can take: `drafts` draft steps per round (K, or a tree's depth) and one verify pass."""
    if speed is None:
        return GPU_S_PER_TOKEN
    return MARGIN * (1 + drafts * _draft_step(drafter_key, speed)) / speed.target_tokens_per_s


def drafts_per_round(settings: RunSettings) -> int:
    """K for a chain; a tree drafts one level per step, so its depth."""
    return settings.depth if settings.drafter_spec.tree else settings.k


def ask(run_seconds: float) -> int:
    """The duration asked for runs that take at most run_seconds: the start added, MAX_CALL_S at most."""
    return min(MAX_CALL_S, round(GPU_START_S + run_seconds))


def generate_seconds(settings: RunSettings, speed: PairSpeed | None = None) -> int:
    """Generate's ask. Unmeasured, 20 s + 0.12 s a token: generate_seconds(RunSettings(max_new_tokens=64)) -> 28."""
    per_token = seconds_per_token(speed, settings.drafter, drafts_per_round(settings))
    return ask(settings.max_new_tokens * per_token)


def baseline_seconds(settings: RunSettings, speed: PairSpeed | None = None, turns: int = 1) -> int:
    """Baseline's ask: `turns` turns of the target alone, one step a token, and of the run (engine/repeats.py)."""
    alone = settings.max_new_tokens * seconds_per_token(speed)
    run = settings.max_new_tokens * seconds_per_token(speed, settings.drafter, drafts_per_round(settings))
    return ask(alone if turns == 1 else turns * (alone + run))


def comparison_seconds(settings: RunSettings, runs: list[tuple[str, int | None, int]],
                       speed: PairSpeed | None = None) -> int:
    """The Lab's comparison's ask: each run of compare.plan, (drafter, K or None, N), at its own drafter and K."""
    return ask(sum(settings.max_new_tokens * seconds_per_token(speed, key, k or 0) for key, k, _ in runs))

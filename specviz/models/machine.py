"""The machine a timing ran on, in words: every measured speed is named with it (its CPU's model, cores and the flags
that decide its speed, or its GPU), since the same run is several times faster or slower elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

import torch

SPEED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")  # what sets a CPU's speed here


def cpu_flags() -> str:
    """The CPU's flags that decide its speed here (each figure is named with them): AVX2, AVX-512 bf16, AMX."""
    flags = _cpuinfo_words()
    if flags is None:
        return "unknown"
    return ", ".join(f for f in SPEED_FLAGS if f in flags) or "none of avx2, avx512, amx"


def native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (avx512_bf16 or AMX), where torch's bfloat16 is fast."""
    return bool((_cpuinfo_words() or set()) & {"avx512_bf16", "amx_bf16"})


def machine(device: str) -> str:
    """'AMD EPYC, 2 cores (2 threads), avx2 avx512f avx512_bf16, no AMX' on a CPU; the GPU's name on CUDA."""
    if torch.device(device).type == "cuda":
        return f"{torch.cuda.get_device_name(torch.device(device))} (CUDA)"
    if torch.device(device).type == "mps":
        return "Apple GPU (MPS)"
    flags = _cpuinfo_words() or set()
    named = " ".join(f for f in SPEED_FLAGS[:3] if f in flags)
    amx = "AMX" if "amx_bf16" in flags else "no AMX"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{_cpu_model()}, {cores} cores ({torch.get_num_threads()} threads), {named or 'no AVX2'}, {amx}"


def load_average() -> float | None:
    """The machine's 1-minute load average now (this process's own threads count in it); None where the system has
    none (Windows)."""
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def _cpuinfo_words() -> set[str] | None:
    try:
        return set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or "a CPU"

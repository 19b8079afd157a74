"""The one timer: every time specviz measures (a run's rounds, a pass's cost, a draft part, a kernel) is read the
same way, with the device synchronised on both sides of the call, so that a GPU's queued work is counted where it is
done and not where it was queued.

    synchronize("cuda")                          # wait for the device's queued work
    times = time_calls(lambda i: step(), "cpu", repeats=5, warm_up=1)   # seconds of each timed call
    median_s(lambda i: step(), "cpu")            # their median

`pass_costs.time_passes` times forward passes on a cached context through it (cropping the cache back after each).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

REPEATS = 5  # timed calls when none are asked: a median of five, as every published figure here


def synchronize(device: str | torch.device) -> None:
    """Wait for the device ("cpu", "cuda", "cuda:1", "mps" or a torch.device) to finish its queued work, so a clock
    read after it measures the work, not its queueing."""
    kind = torch.device(device).type
    if kind == "cuda":
        torch.cuda.synchronize()
    elif kind == "mps":
        torch.mps.synchronize()


def time_calls(call: Callable[[int], object], device: str | torch.device, repeats: int = REPEATS, warm_up: int = 1,
               after: Callable[[], object] | None = None) -> list[float]:
    """Seconds of each of `repeats` calls of call(i) (i counts every call from 0), after `warm_up` untimed ones (the
    first call of a shape pays for kernel choice); `after()`, untimed, follows every call (a cache's rollback)."""
    times = []
    for i in range(warm_up + repeats):
        synchronize(device)
        t0 = time.perf_counter()
        call(i)
        synchronize(device)
        if i >= warm_up:
            times.append(time.perf_counter() - t0)
        if after is not None:
            after()
    return times


def median_s(call: Callable[[int], object], device: str | torch.device, repeats: int = REPEATS,
             warm_up: int = 1) -> float:
    """The median of time_calls: what one call costs here."""
    return statistics.median(time_calls(call, device, repeats, warm_up))

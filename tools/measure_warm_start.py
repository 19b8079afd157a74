"""A later start, measured: from a fresh process to a ready pair on a warm cache (the packaged pair prepared before),
stage by stage, as app.py's background load and the page's status line report them (app/pair_cache.py).

    python -m tools.measure_warm_start

Prints the seconds each stage took (the imports, then each stage the load reports: the tokenizers, the kernels'
choice, the draft's and the target's weights, the rows' check, a first pass, timing the passes), the total, this
process's CPU seconds, and how busy other work kept the machine meanwhile: on a shared 2-core machine that slows every
stage. The README's "later starts" sentence quotes it.
"""

import time

STARTED = time.perf_counter()

import os  # noqa: E402

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from specviz.app.pair_cache import EngineCache  # noqa: E402
from specviz.measure.recorded_costs import while_measuring  # noqa: E402
from specviz.models.machine import machine  # noqa: E402
from specviz.models.pairs import DEFAULT_PRESET  # noqa: E402


def main() -> None:
    stages = [("imports (torch, transformers, gradio, specviz)", STARTED)]

    def heard(fraction: float, text: str) -> None:
        if text != stages[-1][0]:
            stages.append((text, time.perf_counter()))

    stages.append(("starting the load", time.perf_counter()))
    engine, busy = while_measuring(lambda: EngineCache()(DEFAULT_PRESET, heard))
    ended = time.perf_counter()
    print(f"a later start of {DEFAULT_PRESET} on {machine('cpu')}{busy}; kernels {engine.kernels}")
    for (text, at), (_, then) in zip(stages, [*stages[1:], ("ready", ended)]):
        print(f"{at - STARTED:7.1f} s  {then - at:6.1f} s  {text}")
    cpu = os.times()
    print(f"ready after {ended - STARTED:.1f} s; this process's CPU {cpu.user + cpu.system:.1f} s")


if __name__ == "__main__":
    main()

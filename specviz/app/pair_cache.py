"""The process-wide model pairs: each loaded once, by one caller, and kept (`EngineCache`); what a load in progress
has reached, told to every caller waiting on it (`Loading`); and `waiting_for`, a handler's wait for a pair as a
stream of its stages, so that a run waiting on the pair the app began loading at its start says so at once.

    engine = yield from waiting_for(get_engine, preset, lambda stage: {status: words(stage)})  # in a handler

A loader is any callable `(preset, progress) -> Engine`; tests pass tiny models with one of their own.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Generator

from specviz.engine import Engine
from specviz.settings.bounds import Progress


@dataclass(frozen=True)
class Loading:
    """How far a pair's load in progress is: what each caller waiting on it is told."""

    fraction: float  # 0 to 1
    text: str  # the stage, in words
    started: float  # time.monotonic() when the load began


WAIT_SAY_S = 0.5  # a caller waiting on another's load hears how far it is this often (and once at once)
FIRST_SAY_S = 0.1  # a handler waiting for a pair says so this soon (a pair in memory, or a tiny one, needs no word)
WARMING, TIMING = 0.96, 0.97  # the load's last stages, after load_pair's own (0 to 0.95)


class EngineCache:
    """The process-wide models: the newest Engine loaded, by preset.

    One pair is kept (two rarely fit in memory together); the old one is replaced only once the new one has
    loaded, so a pair that fails to load (a hub model, offline) leaves the working one in place. A preset
    loads once however many sessions ask for it, and loading one never blocks sessions using another. A caller
    that waits on a load another began (the app's own, started with the server) hears how far it is, through its
    own progress, every WAIT_SAY_S."""

    def __init__(self, load_pair: Callable[..., Any] | None = None, measure_at_load: bool = True,
                 kernels: str | None = None):
        self._load_pair = load_pair or _load_pair
        self.kernels = kernels  # on a CPU, the kernel path every pair loads on (models/kernels.py; None: auto)
        # Time the pair's passes once loaded (engine/pass_costs.py: seconds), for the cost-aware stop rule. Not on
        # ZeroGPU, where the main process has no GPU to time: there the first run measures in its GPU call
        self.measure_at_load = measure_at_load
        # The app's own loader's pairs have their measurement remembered per machine in the model cache (a later start
        # reads it); a stand-in loader's (tests' tiny pairs) are timed afresh and never written there
        self.remember = load_pair is None
        self._lock = threading.Lock()  # guards the three dicts below
        self._engines: dict[str, Engine] = {}
        self._loading: dict[str, threading.Lock] = {}  # held by the one caller loading the preset
        self._steps: dict[str, Loading] = {}  # the latest stage of each load in progress

    def __call__(self, preset: str, progress: Progress | None = None) -> Engine:
        with self._lock:
            if preset in self._engines:
                return self._engines[preset]
            loading = self._loading.setdefault(preset, threading.Lock())
        self._take(loading, preset, progress)
        try:
            with self._lock:
                if preset in self._engines:  # another session loaded it while we waited
                    return self._engines[preset]
            return self._load(preset, progress)
        finally:
            loading.release()

    def _take(self, loading: threading.Lock, preset: str, progress: Progress | None) -> None:
        """Take the preset's load lock; while another caller's load holds it, pass its stage on to `progress`."""
        if loading.acquire(blocking=False):
            return
        while True:
            step = self.loading(preset)
            if progress and step:
                progress(step.fraction, step.text)
            if loading.acquire(timeout=WAIT_SAY_S):
                return

    def _load(self, preset: str, progress: Progress | None) -> Engine:
        started = time.monotonic()

        def step(fraction: float, text: str) -> None:
            with self._lock:
                self._steps[preset] = Loading(fraction, text, started)
            if progress:
                progress(fraction, text)

        try:
            step(0.0, "starting")
            kernels = {"kernels": self.kernels} if self.kernels else {}  # a stand-in loader (tests) may take none
            engine = Engine.from_pair(self._load_pair(preset=preset, progress=step, **kernels))
            step(WARMING, "a first pass through each model (the CPU picks its kernels)")
            engine.warm_up()  # kernel selection happens now, not inside the first Generate's round 1
            if self.measure_at_load:
                step(TIMING, "timing the pair's passes, for the cost-aware rule (remembered after the first start)")
                engine.price_at_load() if self.remember else engine.measure_pass_costs()
            with self._lock:
                self._engines = {preset: engine}
            return engine
        finally:
            with self._lock:
                self._steps.pop(preset, None)

    def loading(self, preset: str) -> Loading | None:
        """The stage of preset's load in progress, or None where none is."""
        with self._lock:
            return self._steps.get(preset)

    def clear(self) -> None:
        """Forget every loaded engine, so its memory can go back (a test that is done with a real pair)."""
        with self._lock:
            self._engines = {}

    def loaded(self, preset: str) -> Engine | None:
        """The engine for preset if it is in memory now; never loads one."""
        with self._lock:
            return self._engines.get(preset)


def _load_pair(**kwargs):
    from specviz.models.pairs import load_pair  # loading pulls in the GGUF machinery: only when a pair is first asked for

    return load_pair(**kwargs)


default_engine_loader = EngineCache()


def preset_labels() -> dict[str, str]:
    """Every model pair this specviz knows: preset name -> the label the page shows."""
    from specviz.models.pairs import PRESETS

    return {name: preset.label for name, preset in PRESETS.items()}


def waiting_for(get_engine: Callable[[str, Progress], Engine], preset: str,
                say: Callable[[Loading], Any]) -> Generator[Any, None, Engine]:
    """The pair for `preset`, loaded by `get_engine` in a thread of its own, while this generator yields `say(stage)`
    soon after it starts and every WAIT_SAY_S until the pair is ready (nothing where it is ready at once); returns
    the engine, and raises what the load raised."""
    peek = getattr(get_engine, "loaded", None)
    engine = peek(preset) if peek else None
    if engine is not None:
        return engine
    started = time.monotonic()
    latest, result, done = [Loading(0.0, "starting", started)], {}, threading.Event()

    def load() -> None:
        try:
            result["engine"] = get_engine(preset, lambda fraction, text: latest.append(
                Loading(fraction, text, started)))
        except BaseException as e:  # raised again below, in the handler's thread
            result["error"] = e
        done.set()

    threading.Thread(target=load, name="specviz-wait", daemon=True).start()
    wait = FIRST_SAY_S
    while not done.wait(wait):
        yield say(latest[-1])
        wait = WAIT_SAY_S
    if "error" in result:
        raise result["error"]
    return result["engine"]

"""What the server holds for everyone: the GPU wrapper, the runs in progress, the launch settings.

Models are process-wide (app/pair_cache.py: `EngineCache`, behind a lock); each browser session's trace lives in
`gr.State` in the page. Only the functions here marked `@gpu` run a model. On ZeroGPU (Hugging Face's shared GPUs)
each call of one is pickled to a worker process forked from this one, where the GPU exists, and what it returns or
yields is pickled back. So their arguments are plain values (an `EngineRef` names the pair: the worker finds the models
it inherited from this process), they return or yield plain CPU data (traces, rows, numbers), never tensors or
callables, and each asks for the `duration` its request needs at most (app/gpu_time.py).

Tests inject tiny models with a loader of their own: any callable `(preset, progress) -> Engine`.
"""

from __future__ import annotations

import queue
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import gradio as gr

from specviz.app import gpu_time
from specviz.app.assets import ASSETS, PAGE_SCRIPTS, scripts, text
from specviz.app.room_hub import ROOMS, RoomHub
from specviz.app.room_routes import room_routes
from specviz.lecture.room_setting import store_named
from specviz.lecture.rooms import Rooms
from specviz.models.packaged import cache_root
from specviz.lab import compare
from specviz.measure import pass_timing
from specviz.engine import Engine, RunSettings
from specviz.engine.repeats import PAGE_TURNS, timed_baseline
from specviz.settings.bounds import Progress
from specviz.view.style import palette_css
from specviz.record.trace import MAX_TRACE_BYTES

EngineLoader = Callable[[str, Progress], Engine]
# Model runs (Generate, Baseline, the Lab's comparison) at once, across all sessions; the rest wait in Gradio's
# queue. On a CPU two runs only split the same cores (each gets slower, none finishes sooner), so 1; a GPU with
# memory to spare may take more (app.py --concurrency). Stepping through recorded rounds never waits for these.
DEFAULT_CONCURRENCY = 1
MODEL_RUNS = "model-runs"  # the concurrency group of every event that runs a model
# Sessions whose state (their trace: what it weighs per token, docs/security.md, "Load") the server
# keeps; past this, Gradio drops the least recently used. A closed tab's state goes an hour after closing.
SESSIONS_KEPT = 200

try:  # On ZeroGPU a GPU exists only inside functions decorated with spaces.GPU; elsewhere this is a no-op.
    import spaces

    gpu = spaces.GPU
except ImportError:
    def gpu(duration=None):
        return lambda fn: fn


# --- the calls that run a model --------------------------------------------------------------------------------

LOADERS: dict[str, EngineLoader] = {}  # every loader a page runs models with, by EngineRef.loader


@dataclass(frozen=True)
class EngineRef:
    """A loaded pair by name, for the calls that cross the GPU boundary (two strings pickle in microseconds;
    an Engine would pickle gigabytes of weights). On ZeroGPU the worker resolves it in the LOADERS it inherited
    when it was forked, with the models in them."""

    loader: str
    preset: str

    def engine(self) -> Engine:
        return LOADERS[self.loader](self.preset, lambda *_: None)  # loaded already: its cached pair comes back


def engine_ref(get_engine: EngineLoader, preset: str) -> EngineRef:
    key = f"{type(get_engine).__name__}-{id(get_engine)}"  # kept in LOADERS for good, so the id is never reused
    LOADERS.setdefault(key, get_engine)
    return EngineRef(key, preset)


# The durations each call asks ZeroGPU for, from its own arguments (app/gpu_time.py). They run in this process,
# before the call is sent to a GPU worker, where the pair is loaded already.

def _speed(ref: EngineRef) -> gpu_time.PairSpeed | None:
    return gpu_time.measured_speed(ref.preset, ref.engine().device)


def _generate_duration(ref, prompt, settings, load=1, prompt_ids=None) -> int:
    return gpu_time.generate_seconds(settings, _speed(ref))


def _baseline_duration(ref, prompt, settings) -> int:
    return gpu_time.baseline_seconds(settings, _speed(ref), PAGE_TURNS)


def _compare_duration(ref, prompt, settings, ks, layers=(0,), drafters=None) -> int:
    planned = compare.plan(tuple(ks), *(() if drafters is None else (tuple(drafters),)), layers=tuple(layers))
    return gpu_time.comparison_seconds(settings, planned, _speed(ref))


@gpu(duration=_generate_duration)
def stream_traces(ref: EngineRef, prompt: str, settings: RunSettings, load: int = 1,
                  prompt_ids: list[int] | None = None):
    """The model-bound part of Generate: the trace so far after each round (plain CPU data, safe for State).
    `load`: the runs in flight when it started, which the cost-aware rule prices its drafts at; `prompt_ids`: the
    prompt as Engine.encode checked it before the call (None: the run encodes it)."""
    run = ref.engine().start(prompt, settings, load=load, prompt_ids=prompt_ids)
    for _ in run:
        yield run.trace()


@gpu(duration=_baseline_duration)
def run_baseline(ref: EngineRef, prompt: str, settings: RunSettings):
    """The target alone, timed in PAGE_TURNS turns with reruns of the run (engine/repeats.py)."""
    return timed_baseline(ref.engine(), prompt, settings, PAGE_TURNS)


@gpu(duration=_compare_duration)
def stream_comparison(ref: EngineRef, prompt: str, settings: RunSettings, ks: tuple[int, ...],
                      layers: tuple[int, ...] = (0,), drafters: tuple[str, ...] | None = None):
    """The model-bound part of the Lab's comparison: one CompareRow per finished run (plain data); `layers`:
    self-speculation's N values; `drafters`: None for every chain drafter the engine can run."""
    yield from compare.compare_drafters(ref.engine(), prompt, settings, ks, drafters, layers=layers)


class CostCache:
    """Pass times measured per pair, kept for the process: a measurement takes tens of seconds and the pair's
    costs do not change while it is loaded."""

    def __init__(self):
        self._lock = threading.Lock()
        self._profiles: dict[str, pass_timing.CostProfile] = {}

    def get(self, preset: str) -> pass_timing.CostProfile | None:
        with self._lock:
            return self._profiles.get(preset)

    def put(self, preset: str, profile: pass_timing.CostProfile) -> None:
        with self._lock:
            self._profiles[preset] = profile


@dataclass(frozen=True)
class Step:
    """How far a measurement is (a callback cannot cross the GPU boundary; this travels back as data)."""

    fraction: float
    text: str


@gpu(duration=gpu_time.COSTS_S)
def measure_pair_costs(ref: EngineRef):
    """The model-bound part of the cost panel: a Step now and then, and last the CostProfile (plain numbers).
    The measurement runs in a thread of the decorated call, handing its steps over a queue."""
    steps: queue.SimpleQueue = queue.SimpleQueue()
    result: dict = {}

    def measure():
        try:
            result["profile"] = pass_timing.measure_costs(ref.engine(),
                                                          progress=lambda f, text: steps.put(Step(f, text)))
        except BaseException as e:  # re-raised below, in the caller's thread
            result["error"] = e
        steps.put(None)

    threading.Thread(target=measure, name="specviz-costs", daemon=True).start()
    while (step := steps.get()) is not None:
        yield step
    if "error" in result:
        raise result["error"]
    yield result["profile"]


class LiveStops:
    """The stop flag of the busy server's live run in each browser session: the page's Stop sets it, the run's end
    forgets it. Only a plain key crosses into the decorated call: on ZeroGPU, whose call runs in a forked worker,
    a Stop pressed later cannot reach it, and the run ends at its time bound instead."""

    def __init__(self):
        self._lock, self._flags = threading.Lock(), {}

    def start(self, session: str) -> threading.Event:
        with self._lock:
            flag = self._flags[session] = threading.Event()
            return flag

    def get(self, session: str) -> threading.Event:
        with self._lock:
            return self._flags.get(session) or threading.Event()

    def stop(self, session: str) -> bool:
        with self._lock:
            flag = self._flags.get(session)
        if flag is not None:
            flag.set()
        return flag is not None

    def end(self, session: str) -> None:
        with self._lock:
            self._flags.pop(session, None)


LIVE_STOPS = LiveStops()


@gpu(duration=gpu_time.SERVE_S)
def serve_live(ref: EngineRef, plan, profile, seconds: float, session: str):
    """The Costs tab's busy server, run live (measure/closed_loop.py): a Step after each run, last the runs (plain
    numbers). It ends after the round in progress once `seconds` have passed or the session's Stop was pressed
    (LIVE_STOPS): what was served in full by then is kept."""
    from specviz.measure import closed_loop

    stop = LIVE_STOPS.get(session)
    timer = threading.Timer(seconds, stop.set)
    steps: queue.SimpleQueue = queue.SimpleQueue()
    result: dict = {}

    def run():
        try:
            result["runs"] = closed_loop.serve_runs(ref.engine(), plan, profile,
                                                    lambda f, text: steps.put(Step(f, text)), stop)
        except BaseException as e:  # re-raised below, in the caller's thread
            result["error"] = e
        steps.put(None)

    timer.start()
    threading.Thread(target=run, name="specviz-serve", daemon=True).start()
    try:
        while (step := steps.get()) is not None:
            yield step
    finally:
        timer.cancel()
    if "error" in result:
        raise result["error"]
    yield result["runs"]


class Runs:
    """The Generate running in each browser session, so that pressing Generate again stops it after its current
    round (the new run waits for the model either way; without this it would wait for the whole old run)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stops: dict[str, threading.Event] = {}  # session -> the stop flag of its running Generate
        self._in_flight = 0  # runs going now, in every session (what the cost-aware rule prices drafts at)

    @contextmanager
    def running(self, session: str | None):
        """A stop flag for one run, registered under its session while the run lasts (then forgotten)."""
        stop = threading.Event()
        with self._lock:
            self._in_flight += 1
            if session:
                self._stops[session] = stop
        try:
            yield stop
        finally:
            with self._lock:
                self._in_flight -= 1
                if session and self._stops.get(session) is stop:
                    del self._stops[session]

    def in_flight(self) -> int:
        """Generate runs going now, across all sessions (at least 1 inside `running`)."""
        with self._lock:
            return self._in_flight

    def stop(self, session: str | None) -> None:
        with self._lock:
            stop = self._stops.get(session)
        if stop is not None:
            stop.set()


# --- the server ----------------------------------------------------------------------------------------------

def check_concurrency(concurrency) -> int:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number of at least 1, got {concurrency!r}")
    return concurrency


def limit_model_runs(demo: gr.Blocks, concurrency: int) -> None:
    """Every event of the MODEL_RUNS group (Generate, Baseline, the Lab's comparison) shares one limit. Gradio
    keeps the lowest limit any event of a group names, so it is set on all of them, once all are wired."""
    for fn in demo.fns.values():
        if fn.concurrency_id == MODEL_RUNS:
            fn.concurrency_limit = concurrency


def keep_rooms(setting: str | None, hub: RoomHub = ROOMS) -> None:
    """Keep the server's rooms where `setting` (SPECVIZ_ROOMS, app.py's --rooms) says: lecture/room_setting.py's
    forms, the default a SQLite file in the cache folder. ValueError for a malformed setting, RoomError for a file
    another process holds: both say what to do."""
    hub.use(Rooms(store_named(setting, cache_root())))


def launch_kwargs(hub: RoomHub = ROOMS) -> dict:
    """Theme, CSS and JS for `demo.launch(...)` (Gradio 6 takes them there, not in Blocks), the rooms' routes on
    Gradio's own app (app/room_routes.py), and the server's bounds: upload size, sessions kept."""
    # Gradio's own greys and primary blue darkened to WCAG AA (the defaults gave 2.56:1 hints, a 3.67:1 Generate)
    theme = gr.themes.Default(primary_hue="blue", neutral_hue="slate", text_size="lg").set(
        body_text_color_subdued="*neutral_600", button_primary_background_fill="*primary_700",
        button_primary_background_fill_hover="*primary_800")
    return dict(theme=theme, show_error=True,
                css=palette_css(), css_paths=[ASSETS / "style.css", ASSETS / "room.css"],
                # the presenter view's sheet as it is: Gradio rewrites css_paths rule by rule and drops the
                # @container rules its narrow cards need (only style and @media rules survive, Gradio 6.31); beside
                # it, the sheet of its sections of the Lab and the Costs tab
                head=f"<style>{text('present.css')}\n{text('sections.css')}</style>",
                js=f"() => {{\n{scripts(PAGE_SCRIPTS)}\n}}",
                app_kwargs={"routes": room_routes(hub)},
                max_file_size=MAX_TRACE_BYTES,  # an upload larger than any trace is refused before it lands
                state_session_capacity=SESSIONS_KEPT)

"""The Gradio page: `build_demo` lays it out, then `_wire` connects every event in one place.

Models are process-wide (`EngineCache`, behind a lock); each browser session's trace lives in `gr.State` and
is replaced by a new object, never mutated. Only Generate, Baseline and loading a pair touch a model:
stepping through rounds re-renders the recorded trace with charts.py and render.py.

Tests inject tiny models through `get_engine`: build_demo(lambda preset, progress: engine, {"tiny": "Tiny"}, "tiny").
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import tempfile
import threading
import time
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NamedTuple

import gradio as gr
import torch

from . import charts, render
from .engine import MAX_K, Engine, RunSettings
from .trace import MAX_TRACE_BYTES, Trace, load_trace, short_repr, token_texts

ASSETS = Path(__file__).resolve().parent.parent / "assets"
EXAMPLES = {  # label -> prompt: code drafts well, a fact fairly, a story poorly; all three are worth showing
    "code": "Write a Python function that returns the n-th Fibonacci number.",
    "fact": "What is the capital of France? Answer in one sentence.",
    "story": "Write the opening of a short story about a lighthouse keeper.",
}
DRAFTER_CHOICES = [("draft model", "model"), ("prompt lookup", "lookup")]  # (label, RunSettings.drafter)
CHART_FONT = {False: 15, True: 22}  # chart font size in px, by lecture mode
MIN_FRAME_S = 0.25  # while generating, redraw at most this often: a redraw costs the browser ~0.1-0.2 s
# Model runs (Generate, Baseline, the Lab's comparison) at once, across all sessions; the rest wait in Gradio's
# queue. On a CPU two runs only split the same cores (each gets slower, none finishes sooner), so 1; a GPU with
# memory to spare may take more (app.py --concurrency). Stepping through recorded rounds never waits for these.
DEFAULT_CONCURRENCY = 1
Progress = Callable[[float, str], None]  # (fraction done, message), as models.load_pair reports it
EngineLoader = Callable[[str, Progress], Engine]

try:  # On ZeroGPU a GPU exists only inside functions decorated with spaces.GPU; elsewhere this is a no-op.
    import spaces

    gpu = spaces.GPU
except ImportError:
    def gpu(fn):
        return fn


# --- models: process-wide ----------------------------------------------------------------------------------

class EngineCache:
    """The process-wide models, shared by every session: the newest Engine loaded, by preset.

    One pair is kept (two rarely fit in memory together); the old one is replaced only once the new one has
    loaded, so a pair that fails to load (a hub model, offline) leaves the working one in place. A preset
    loads once however many sessions ask for it, and loading one never blocks sessions using another."""

    def __init__(self, load_pair: Callable[..., Any] | None = None):
        self._load_pair = load_pair or _load_pair
        self._lock = threading.Lock()  # guards the two dicts below
        self._engines: dict[str, Engine] = {}
        self._loading: dict[str, threading.Lock] = {}

    def __call__(self, preset: str, progress: Progress | None = None) -> Engine:
        with self._lock:
            if preset in self._engines:
                return self._engines[preset]
            loading = self._loading.setdefault(preset, threading.Lock())
        with loading:
            with self._lock:
                if preset in self._engines:  # another session loaded it while we waited
                    return self._engines[preset]
            engine = Engine.from_pair(self._load_pair(preset=preset, progress=progress))
            engine.warm_up()  # kernel selection happens now, not inside the first Generate's round 1
            with self._lock:
                self._engines = {preset: engine}
            return engine

    def loaded(self, preset: str) -> Engine | None:
        """The engine for preset if it is in memory now; never loads one."""
        with self._lock:
            return self._engines.get(preset)


def _load_pair(**kwargs):
    from .models import load_pair

    return load_pair(**kwargs)


default_engine_loader = EngineCache()


def preset_labels() -> dict[str, str]:
    from .models import PRESETS

    return {name: preset.label for name, preset in PRESETS.items()}


@gpu
def stream_traces(engine: Engine, prompt: str, settings: RunSettings):
    """The model-bound part of Generate: the trace so far after each round (plain CPU data, safe for State)."""
    run = engine.start(prompt, settings)
    for _ in run:
        yield run.trace()


@gpu
def run_baseline(engine: Engine, prompt: str, settings: RunSettings):
    return engine.baseline(prompt, settings)


# --- what the page shows: pure functions of a trace --------------------------------------------------------

HINT = ("Press Generate, or open a recorded trace, to watch speculative decoding round by round: the p and q "
        "bars, the residual and the tokens-per-pass chart appear below.")


def empty_view() -> list:
    """Values for the round panels after the slider, before there is a trace. The charts stay empty (None), not
    empty figures: the browser loads plotly (a 4.6 MB script) only for a plotly value, so the page is
    interactive without it, and it loads while the first round runs."""
    return [render.placeholder(HINT), None, "", None, "", None, ""]


def round_view(trace: Trace | None, number: float | None, lecture: bool = False) -> list:
    """Values for the round panels (slider, strip, p/q bars, verdicts, residual, explanation, tokens per pass,
    summary) showing round `number` (1-based, clamped) of `trace`. Calls no model."""
    font = CHART_FONT[bool(lecture)]
    if trace is None or not trace.rounds:
        # Gradio insists on maximum > minimum, even for a slider that cannot move yet
        return [gr.Slider(minimum=1, maximum=2, value=1, interactive=False), *empty_view()]
    n = len(trace.rounds)
    i = min(max(round_number(number), 1), n) - 1
    rnd = trace.rounds[i]
    return [gr.Slider(minimum=1, maximum=max(n, 2), value=i + 1, interactive=n > 1),
            render.token_strip(trace, i), charts.pq_bars(rnd, font), render.decision_row(rnd),
            charts.residual_chart(rnd, font), render.explanation(trace, i), charts.tokens_per_pass(trace, i, font),
            render.summary_html(trace)]


# Each numeric setting's bounds on the page, checked again on the server: an API client can send anything (a
# string, null, NaN, 10**400), and the handler must answer each with a message, not a traceback.
class Limit(NamedTuple):
    name: str  # as messages say it
    low: int | float
    high: int | float
    whole: bool  # whole numbers only


LIMITS = {
    "k": Limit("K", 1, MAX_K, True),
    "temperature": Limit("temperature", 0, 2, False),
    "top_p": Limit("top-p", 0.05, 1, False),
    "top_k": Limit("top-k", 0, 1000, True),
    "seed": Limit("seed", 0, 2**31 - 1, True),
    "max_new_tokens": Limit("max new tokens", 1, 512, True),
}
MAX_PROMPT_CHARS = 10_000  # about 2,500 tokens: a long prompt is a slow prompt for everyone sharing the server


def round_number(value) -> int:
    """A round number from the page or an API client, to clamp; 1 for what is no number (text, NaN, inf, null)."""
    try:
        return int(value or 1)
    except (TypeError, ValueError, OverflowError):
        return 1


def settings_from(k, temperature, top_p, top_k, seed, max_new_tokens, drafter="model",
                  adaptive=False) -> RunSettings:
    """RunSettings from the page's fields (numbers arrive as floats); ValueError names the first bad one."""
    if adaptive not in (True, False, None):  # raw API input: 1, "yes" or [] would otherwise pass as truthy
        raise ValueError(f"adaptive K must be true or false, got {short_repr(adaptive)}")
    return RunSettings(k=_setting(k, "k"), temperature=_setting(temperature, "temperature"),
                       top_p=_setting(top_p, "top_p"), top_k=_setting(top_k, "top_k"), seed=_setting(seed, "seed"),
                       max_new_tokens=_setting(max_new_tokens, "max_new_tokens"), drafter=drafter or "model",
                       adaptive=bool(adaptive))


def _setting(value, field: str) -> int | float:
    """value as the number LIMITS[field] allows, or ValueError saying what is allowed."""
    name, low, high, whole = LIMITS[field]
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    # NaN fails every comparison and inf fails `<= high`, so both land in the message below
    if not (number and low <= value <= high and (not whole or value == int(value))):
        kind = "a whole number" if whole else "a number"
        raise ValueError(f"{name} must be {kind} from {low} to {high}, got {short_repr(value)}")
    return int(value) if whole else float(value)


def limits(field: str) -> dict:
    """A setting's bounds as a slider's or number field's keyword arguments."""
    return dict(minimum=LIMITS[field].low, maximum=LIMITS[field].high)


def check_prompt(prompt) -> str:
    """The prompt, or ValueError: empty, too long, or not encodable text (a lone surrogate from an API client)."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("prompt is empty")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ValueError(f"prompt is {len(prompt):,} characters long; the limit is {MAX_PROMPT_CHARS:,}")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("prompt holds a character that is not valid text (a lone UTF-16 surrogate)") from None
    return prompt


def trace_settings(trace: Trace) -> RunSettings:
    """The RunSettings a trace was recorded with (a trace may carry extra keys: ignore them)."""
    names = {f.name for f in dataclasses.fields(RunSettings)}
    return RunSettings(**{k: v for k, v in trace.settings.items() if k in names})


# --- trace files -------------------------------------------------------------------------------------------

_DOWNLOADS = tempfile.TemporaryDirectory(prefix="specviz-traces-")  # removed when the process exits
_DOWNLOADS_LOCK = threading.Lock()  # sessions write and prune the folder at once
# Gradio copies each file a handler returns into its own cache (cleared of files older than an hour, hourly:
# Blocks(delete_cache=...)), so a file here is needed only until its handler returns: keep the newest few.
KEEP_DOWNLOADS = 32
KEEP_DOWNLOADS_S = 3600


def trace_file(trace: Trace) -> str:
    """Write trace as JSON for the download button; the folder is named by content. Prunes the folder to the
    newest KEEP_DOWNLOADS files, none older than KEEP_DOWNLOADS_S, so it stays bounded however many runs."""
    text = trace.to_json(indent=1)
    root = Path(_DOWNLOADS.name)
    with _DOWNLOADS_LOCK:
        _prune_downloads(root)
        folder = root / hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        folder.mkdir(exist_ok=True)
        path = folder / "specviz-trace.json"
        path.write_text(text, encoding="utf-8")
    return str(path)


def _prune_downloads(root: Path) -> None:
    """Make room for one more file: drop all but the newest KEEP_DOWNLOADS - 1, and any past KEEP_DOWNLOADS_S."""
    files = sorted(((f.stat().st_mtime, f) for f in root.glob("*/specviz-trace.json")), reverse=True)
    for i, (mtime, old) in enumerate(files):
        if i >= KEEP_DOWNLOADS - 1 or time.time() - mtime > KEEP_DOWNLOADS_S:
            with suppress(OSError):  # a file that cannot go stays: a prune must never fail the run it follows
                old.unlink()
                old.parent.rmdir()  # folders too: one per distinct trace would pile up


def read_trace(path: str) -> Trace:
    """An uploaded trace file, read no further than the size limit; ValueError for anything unreadable."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_TRACE_BYTES + 1)
    except OSError as e:
        raise ValueError(f"could not read the uploaded file: {e.strerror}") from None
    trace = load_trace(raw)
    try:
        trace_settings(trace)  # Baseline reruns them; the page quotes them
    except ValueError as e:
        raise ValueError(f"malformed trace: settings: {e}") from None
    return trace


# --- layout ------------------------------------------------------------------------------------------------

@dataclass
class Page:
    """The components events read and write (built by `build_demo`, wired by `_wire`)."""

    trace: gr.State
    lecture: gr.Checkbox
    controls: gr.Accordion
    prompt: gr.Textbox
    preset: gr.Dropdown
    k: gr.Slider
    temperature: gr.Slider
    top_p: gr.Slider
    top_k: gr.Number
    seed: gr.Number
    max_new_tokens: gr.Slider
    generate: gr.Button
    baseline: gr.Button
    info: gr.HTML
    status: gr.HTML
    download: gr.DownloadButton
    upload: gr.File
    previous: gr.Button
    next: gr.Button
    play: gr.Button
    pace: gr.Slider
    timer: gr.Timer
    view: list  # round_view's outputs, in its order: slider, strip, bars, decisions, residual, explanation,
    #             tokens per pass, summary
    drafter: gr.Radio  # "model" or "lookup" (RunSettings.drafter)
    adaptive: gr.Checkbox  # RunSettings.adaptive: K per round, the slider's K the most

    @property
    def round_slider(self) -> gr.Slider:
        return self.view[0]


def build_demo(get_engine: EngineLoader = default_engine_loader, presets: dict[str, str] | None = None,
               default_preset: str | None = None, concurrency: int = DEFAULT_CONCURRENCY) -> gr.Blocks:
    """The whole page. `get_engine(preset, progress)` returns a ready Engine (tests pass tiny models);
    `presets` maps preset name -> label for the dropdown; `concurrency`: model runs at once, for all sessions."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number of at least 1, got {concurrency!r}")
    presets = presets or preset_labels()
    default_preset = default_preset or next(iter(presets))
    from .lab_ui import build_lab

    with gr.Blocks(title="specviz: speculative decoding, round by round", fill_width=True,
                   delete_cache=(3600, 3600)) as demo:
        lecture = _header()
        with gr.Tabs():
            with gr.Tab("Rounds", elem_id="rounds-tab"):
                page = _layout(presets, default_preset, lecture)
            with gr.Tab("Lab", elem_id="lab-tab"):
                build_lab(page.trace, page.preset, get_engine)  # fed the session's trace and the app's models
        _wire(demo, page, ModelActions(get_engine, list(presets)))
    limit_model_runs(demo, concurrency)
    return demo


def limit_model_runs(demo: gr.Blocks, concurrency: int) -> None:
    """Every event of the "model" group (Generate, Baseline, the Lab's comparison) shares one limit. Gradio keeps
    the lowest limit any event of a group names, so it is set on all of them here, after the Lab wired its own."""
    for fn in demo.fns.values():
        if fn.concurrency_id == "model":
            fn.concurrency_limit = concurrency


def _header() -> gr.Checkbox:
    with gr.Row(elem_id="sv-header", equal_height=True):
        gr.HTML('<h1>specviz <span>speculative decoding, one round at a time</span></h1>', elem_id="sv-title")
        return gr.Checkbox(label="Lecture mode", value=False, elem_id="lecture-mode", scale=0, min_width=180)


def _layout(presets: dict[str, str], default_preset: str, lecture: gr.Checkbox) -> Page:
    trace = gr.State(None)
    with gr.Accordion("Prompt and settings", open=True, elem_id="controls") as controls:
        with gr.Row(equal_height=False):
            with gr.Column(scale=4):
                prompt = gr.Textbox(label="Prompt", value=EXAMPLES["code"], lines=2, max_lines=6, elem_id="prompt")
                gr.Examples([[text] for text in EXAMPLES.values()], inputs=[prompt], label="Example prompts",
                            example_labels=[f"{name}: {text}" for name, text in EXAMPLES.items()])
            with gr.Column(scale=1, min_width=200):
                generate = gr.Button("Generate", variant="primary", elem_id="generate")
                baseline = gr.Button("Baseline", elem_id="baseline")
                download = gr.DownloadButton("Download trace (JSON)", value=None, interactive=False,
                                             elem_id="download-trace", size="md")
        with gr.Row():
            preset = gr.Dropdown([(label, name) for name, label in presets.items()], value=default_preset,
                                 label="Draft → target pair", elem_id="preset", scale=3, min_width=260)
            k = gr.Slider(**limits("k"), value=4, step=1, label="K (draft tokens per round)", elem_id="k",
                          min_width=160)
            temperature = gr.Slider(**limits("temperature"), value=0.7, step=0.05, label="Temperature (0 = greedy)",
                                    elem_id="temperature", min_width=160)
            top_p = gr.Slider(**limits("top_p"), value=1.0, step=0.05, label="top-p", elem_id="top-p", min_width=120)
            top_k = gr.Number(0, **limits("top_k"), precision=0, label="top-k (0 = off)", elem_id="top-k",
                              min_width=100)
            seed = gr.Number(0, **limits("seed"), precision=0, label="Seed", elem_id="seed", min_width=100)
            max_new_tokens = gr.Slider(**limits("max_new_tokens"), value=64, step=1, label="Max new tokens",
                                       elem_id="max-new-tokens", min_width=160)
            drafter = gr.Radio(DRAFTER_CHOICES, value="model", label="Drafter", elem_id="drafter", min_width=200)
            adaptive = gr.Checkbox(False, label="Adaptive K (K is then the most per round)", elem_id="adaptive",
                                   info="stop drafting once the draft's confidence that all its drafts survive "
                                        "falls below 0.25", min_width=200)
        with gr.Row(equal_height=True):
            info = gr.HTML(render.placeholder("Loading models…"), elem_id="run-info")
            upload = gr.File(label="Open a recorded trace (JSON)", file_types=[".json"], type="filepath",
                             elem_id="trace-upload", height=90, scale=0, min_width=280)
    status = gr.HTML("", elem_id="status")
    with gr.Row(elem_id="sv-nav", equal_height=True):
        previous = gr.Button("Previous round", elem_id="prev-round", scale=0, min_width=200)
        round_slider = gr.Slider(1, 2, value=1, step=1, label="Round  (← → keys)", interactive=False,
                                 elem_id="round-slider", scale=4)
        next_ = gr.Button("Next round", elem_id="next-round", scale=0, min_width=200)
        play = gr.Button("Play", elem_id="play", scale=0, min_width=110)
        pace = gr.Slider(0.3, 5, value=1.5, step=0.1, label="Seconds per round", elem_id="pace", scale=1,
                         min_width=150)
    timer = gr.Timer(1.5, active=False)
    empty = empty_view()
    strip = gr.HTML(empty[0], elem_id="token-strip")
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            bars = gr.Plot(empty[1], elem_id="pq-bars", show_label=False)
        with gr.Column(scale=2):
            decisions = gr.HTML(empty[2], elem_id="decisions")
            residual = gr.Plot(empty[3], elem_id="residual", show_label=False)
    explanation = gr.HTML(empty[4], elem_id="round-explanation")
    per_pass = gr.Plot(empty[5], elem_id="tokens-per-pass", show_label=False)
    summary = gr.HTML(empty[6], elem_id="summary")
    return Page(trace, lecture, controls, prompt, preset, k, temperature, top_p, top_k, seed, max_new_tokens,
                generate, baseline, info, status, download, upload, previous, next_, play, pace, timer,
                [round_slider, strip, bars, decisions, residual, explanation, per_pass, summary], drafter, adaptive)


# --- event handlers: each returns new values, never mutates a trace ----------------------------------------

N_VIEW = 8  # len(round_view(...)): slider, strip, bars, decisions, residual, explanation, tokens per pass, summary
SKIP_VIEW = [gr.skip()] * N_VIEW


def problem(message: str, n_outputs: int) -> list:
    """Say what went wrong (a toast and the status line) and leave every other output as it is."""
    gr.Warning(html.escape(message))  # a toast renders HTML, and a message may quote what a user sent
    return [gr.skip(), render.status(message, "error")] + [gr.skip()] * (n_outputs - 2)


def message_of(e: Exception) -> str:
    """What to tell the user about an exception: ours (ValueError) are written for people; anything else is
    named by its type, and running out of memory says so first (the usual cause, and one the user can fix)."""
    if isinstance(e, ValueError):
        return str(e)
    first_line = (str(e).splitlines() or [""])[0][:200]
    detail = f"{type(e).__name__}: {first_line}" if first_line else type(e).__name__
    if isinstance(e, (MemoryError, torch.OutOfMemoryError)) or "out of memory" in first_line.lower():
        return f"out of memory ({detail}); fewer new tokens, a smaller K or a smaller pair needs less"
    return detail


def trace_info(trace: Trace) -> str:
    return render.run_info(trace.device, trace.dtype, trace.draft_model, trace.target_model, recorded=True)


def engine_info(engine: Engine, drafter: str = "model") -> str:
    draft = engine.draft_name if drafter == "model" else "prompt lookup"  # the name a trace records, too
    return render.run_info(engine.device, engine.dtype, draft, engine.target_name)


def check_tokenizer(trace: Trace, engine: Engine) -> None:
    """Refuse a trace that names the loaded target but whose tokens are not its tokenizer's: an id past its
    vocabulary, or an id recorded with a text the tokenizer does not decode it to."""
    for token_id, text in token_texts(trace).items():
        if token_id >= engine.vocab:
            raise ValueError(f"token id {token_id} is out of range for the vocabulary of {engine.target_name} "
                             f"({engine.vocab:,} ids): the trace was recorded with another tokenizer")
        if text is not None and engine.text(token_id) != text:
            raise ValueError(f"token id {token_id} is {short_repr(text)} in the trace but "
                             f"{short_repr(engine.text(token_id))} in the tokenizer of {engine.target_name}: the "
                             f"trace was recorded with another tokenizer")


class Runs:
    """The Generate running in each browser session, so that pressing Generate again stops it after its current
    round (the new run waits for the model either way; without this it would wait for the whole old run)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stops: dict[str, threading.Event] = {}  # session -> the stop flag of its running Generate

    @contextmanager
    def running(self, session: str | None):
        """A stop flag for one run, registered under its session while the run lasts (then forgotten)."""
        stop = threading.Event()
        with self._lock:
            if session:
                self._stops[session] = stop
        try:
            yield stop
        finally:
            with self._lock:
                if session and self._stops.get(session) is stop:
                    del self._stops[session]

    def stop(self, session: str | None) -> None:
        with self._lock:
            stop = self._stops.get(session)
        if stop is not None:
            stop.set()


class ModelActions:
    """The handlers that need a model: loading a pair, Generate, Baseline, and checking an opened trace
    against the pair in memory. `presets` are the pairs this page offers; no other may be named."""

    def __init__(self, get_engine: EngineLoader, presets: list[str]):
        self.get_engine, self.presets = get_engine, presets
        self.runs = Runs()

    def engine(self, preset, progress: gr.Progress) -> Engine:
        if preset not in self.presets:  # Generate skips Gradio's own check of the dropdown (preprocess=False)
            raise ValueError(f"unknown model pair {short_repr(preset)}; this app offers: {', '.join(self.presets)}")
        return self.get_engine(preset, lambda fraction, message: progress(fraction, desc=message))

    def loaded(self, preset) -> Engine | None:
        """The selected pair if it is in memory, else None: opening a trace never starts a load. (A loader
        other than EngineCache, as in tests, holds its models already and is simply asked.)"""
        if preset not in self.presets:
            return None
        peek = getattr(self.get_engine, "loaded", None)
        try:
            return peek(preset) if peek else self.get_engine(preset, lambda *_: None)
        except ValueError:
            return None

    def show_pair(self, preset, progress=gr.Progress()):
        """-> info, status"""
        try:
            return engine_info(self.engine(preset, progress)), ""
        except Exception as e:  # a hub id offline, a full disk while preparing, not enough memory: say which
            gr.Warning(html.escape(message_of(e)))
            return render.placeholder("No model pair loaded."), render.status(message_of(e), "error")

    def generate(self, prompt, preset, k, temperature, top_p, top_k, seed, max_new_tokens, lecture,
                 drafter="model", adaptive=False, progress=gr.Progress(), request: gr.Request = None):
        """-> trace, status, info, download, *view after each round (at most every MIN_FRAME_S), then once more.
        `drafter` and `adaptive` come last, with defaults, so API clients written before them keep working. The inputs
        arrive as sent (the event skips Gradio's preprocessing), so every one is checked here."""
        try:
            settings = settings_from(k, temperature, top_p, top_k, seed, max_new_tokens, drafter, adaptive)
            prompt = check_prompt(prompt)
            engine = self.engine(preset, progress)
            engine.encode(prompt, settings)  # a prompt too long for the context fails here, before any model runs
        except Exception as e:
            yield problem(message_of(e), 4 + N_VIEW)
            return
        with self.runs.running(request.session_hash if request else None) as stop:
            yield from self._stream(engine, prompt, settings, bool(lecture), stop)

    def stop(self, request: gr.Request = None):
        """Pressing Generate during a run: the running one stops after its current round (see Runs)."""
        self.runs.stop(request.session_hash if request else None)

    def _stream(self, engine: Engine, prompt: str, settings: RunSettings, lecture: bool, stop: threading.Event):
        """Generate's frames. A failure or a stop mid-run keeps the rounds so far: the last frame puts them in
        the trace state (viewable, downloadable) and says what happened."""
        info, started, shown = engine_info(engine, settings.drafter), time.perf_counter(), 0.0
        latest = failure = None
        with closing(stream_traces(engine, prompt, settings)) as traces:  # closed at once, also when the tab is
            try:
                for latest in traces:
                    if stop.is_set():
                        break
                    if time.perf_counter() - shown < MIN_FRAME_S:
                        continue  # rounds faster than the browser can draw them (tiny models): draw a later one
                    shown, n = time.perf_counter(), len(latest.rounds)
                    busy = render.status(f"Generating… round {n}, {latest.summary.n_new_tokens} of "
                                         f"{settings.max_new_tokens} new tokens", "busy")
                    yield [latest, busy, info, gr.skip(), *round_view(latest, n, lecture)]
            except Exception as e:  # out of memory, a model error: the rounds before it are still good
                failure = message_of(e)
        if latest is None:
            yield problem(f"Generation failed in round 1: {failure}", 4 + N_VIEW)
            return
        s = latest.summary
        if failure:
            gr.Warning(html.escape(f"Generation stopped after round {s.n_rounds}: {failure}"))
            done = render.status(f"Generation stopped after round {s.n_rounds}: {failure}. The {s.n_rounds} rounds "
                                 f"before it stay viewable (← →); Generate runs again.", "error")
        elif stop.is_set():
            done = render.status(f"Stopped after round {s.n_rounds} ({s.n_new_tokens} new tokens): Generate was "
                                 f"pressed again, so the new run starts next.", "info")
        else:
            done = render.status(f"Done: {s.n_rounds} rounds, {s.n_new_tokens} new tokens in "
                                 f"{time.perf_counter() - started:.1f} s. Step through the rounds with ← →.", "done")
        # The last frame always carries the full view, so a client reading only the result sees the last round.
        yield [latest, done, info, gr.DownloadButton(value=trace_file(latest), interactive=True),
               *round_view(latest, s.n_rounds, lecture)]

    def baseline(self, trace, preset, progress=gr.Progress()):
        """-> trace (with .baseline), status, summary, download"""
        if trace is None or not trace.rounds:
            return problem("Generate (or open a trace) first: the baseline reruns its prompt with the target alone.", 4)
        try:
            engine = self.engine(preset, progress)
            if engine.target_name != trace.target_model:
                raise ValueError(f"this trace was recorded with target {trace.target_model}, but the selected "
                                 f"pair's target is {engine.target_name}; pick the pair it was recorded with")
            check_tokenizer(trace, engine)
            progress(0.5, desc="running the target alone")
            result = run_baseline(engine, trace.prompt, trace_settings(trace))
        except Exception as e:
            return problem(message_of(e), 4)
        timed = dataclasses.replace(trace, baseline=result)
        message = (f"Baseline: the target alone made {len(result.output_token_ids)} tokens at "
                   f"{result.tokens_per_s:.1f} tok/s.")
        return [timed, render.status(message, "done"), render.summary_html(timed),
                gr.DownloadButton(value=trace_file(timed), interactive=True)]

    def open_trace(self, path, lecture, preset=None):
        """An uploaded trace file -> trace, status, info, download, *view at round 1. Stepping through it needs no
        model; when its target is the pair in memory, its tokens must be that pair's tokenizer's."""
        if not path:
            return [gr.skip()] * (4 + N_VIEW)
        try:
            trace = read_trace(path)
            engine = self.loaded(preset)
            if engine is not None and engine.target_name == trace.target_model:
                check_tokenizer(trace, engine)
        except ValueError as e:
            return problem(str(e), 4 + N_VIEW)
        other = engine is not None and engine.target_name != trace.target_model
        note = f" It was recorded with {trace.target_model}: Baseline needs that pair." if other else ""
        opened = render.status(f"Opened a trace of {len(trace.rounds)} rounds (no model needed to step through "
                               f"it).{note}", "done")
        return [trace, opened, trace_info(trace), gr.DownloadButton(value=trace_file(trace), interactive=True),
                *round_view(trace, 1, lecture)]


def step(delta: int):
    """A handler showing the round `delta` away from the one on screen (clamped to the trace)."""
    def show(trace, number, lecture):
        return round_view(trace, round_number(number) + delta, lecture)
    return show


def toggle_play(label, trace, number, lecture):
    """Play <-> Pause. Play from the last round starts again at round 1. -> timer, play button, *view"""
    if label == "Pause" or trace is None or not trace.rounds:
        return [gr.Timer(active=False), gr.Button("Play"), *SKIP_VIEW]
    at_end = int(number or 1) >= len(trace.rounds)
    return [gr.Timer(active=True), gr.Button("Pause"), *(round_view(trace, 1, lecture) if at_end else SKIP_VIEW)]


def tick(trace, number, lecture):
    """One Play step: the next round, stopping at the last. -> timer, play button, *view"""
    if trace is None or int(number or 1) >= len(trace.rounds):
        return [gr.Timer(active=False), gr.Button("Play"), *SKIP_VIEW]
    last = int(number) + 1 >= len(trace.rounds)
    return [gr.Timer(active=not last), gr.Button("Play" if last else "Pause"),
            *round_view(trace, int(number) + 1, lecture)]


def lecture_mode(on, trace, number):
    """Collapse the controls and redraw the charts in large type (the page's CSS follows a class on <body>)."""
    return [gr.Accordion(open=not on), *round_view(trace, number, on)]


# --- events: all the wiring, in one place -------------------------------------------------------------------

def _wire(demo: gr.Blocks, p: Page, models: ModelActions) -> None:
    settings = [p.k, p.temperature, p.top_p, p.top_k, p.seed, p.max_new_tokens]
    nav = [p.trace, p.round_slider, p.lecture]
    # Re-rendering records needs no model and no queue. Navigation and Generate take their inputs as sent
    # (preprocess=False) and check them themselves, so a bad value from an API client gets a message, not a
    # traceback from a component's preprocessing.
    quick = dict(show_progress="hidden", concurrency_limit=None)
    steps = dict(quick, preprocess=False)
    loads = dict(show_progress_on=[p.info], concurrency_limit=None)  # EngineCache makes loading safe to share
    one_model_run = dict(show_progress_on=[p.status], concurrency_id="model")  # its limit: limit_model_runs

    demo.load(models.show_pair, [p.preset], [p.info, p.status], api_visibility="private", **loads)
    p.preset.change(models.show_pair, [p.preset], [p.info, p.status], api_name="load_pair", **loads)
    # Generate pressed during a run: the first listener stops the running one after its round; the second
    # queues the new run, which starts when the model is free. ("multiple": the page sends every press at once.
    # "always_last" would hold the press back until the old run ended, then send both listeners, and the stop
    # could then hit the new run.)
    p.generate.click(models.stop, None, None, api_name="stop", **quick)
    p.generate.click(models.generate, [p.prompt, p.preset, *settings, p.lecture, p.drafter, p.adaptive],
                     [p.trace, p.status, p.info, p.download, *p.view], api_name="generate", preprocess=False,
                     trigger_mode="multiple", **one_model_run)
    p.baseline.click(models.baseline, [p.trace, p.preset], [p.trace, p.status, p.view[-1], p.download],
                     api_name="baseline", **one_model_run)
    p.upload.upload(models.open_trace, [p.upload, p.lecture, p.preset],
                    [p.trace, p.status, p.info, p.download, *p.view], api_name="open_trace", show_progress="minimal")
    p.previous.click(step(-1), nav, p.view, api_name="previous_round", **steps)
    p.next.click(step(+1), nav, p.view, api_name="next_round", **steps)
    p.round_slider.input(step(0), nav, p.view, api_name="show_round", trigger_mode="always_last", **steps)
    p.play.click(toggle_play, [p.play, *nav], [p.timer, p.play, *p.view], api_visibility="private", **quick)
    p.timer.tick(tick, nav, [p.timer, p.play, *p.view], api_visibility="private", **quick)
    p.pace.change(lambda seconds: gr.Timer(value=seconds), [p.pace], [p.timer], api_visibility="private", **quick)
    p.lecture.change(None, [p.lecture], None, js="(on) => { document.body.classList.toggle('sv-lecture', on); }")
    p.lecture.change(lecture_mode, [p.lecture, p.trace, p.round_slider], [p.controls, *p.view],
                     api_visibility="private", **quick)


# Sessions whose state (their trace, ~7 kB per generated token: 0.5 MB at 64 tokens, 4 MB at 512) the server
# keeps; past this, Gradio drops the least recently used. A closed tab's state goes an hour after closing.
SESSIONS_KEPT = 200


def launch_kwargs() -> dict:
    """Theme, CSS and JS for `demo.launch(...)` (Gradio 6 takes them there, not in Blocks), and the server's
    bounds: upload size, sessions kept."""
    return dict(theme=gr.themes.Default(primary_hue="blue", neutral_hue="slate", text_size="lg"), show_error=True,
                css=render.palette_css(), css_paths=[ASSETS / "style.css"],
                js=(ASSETS / "keys.js").read_text(encoding="utf-8"),
                max_file_size=MAX_TRACE_BYTES,  # an upload larger than any trace is refused before it lands
                state_session_capacity=SESSIONS_KEPT)

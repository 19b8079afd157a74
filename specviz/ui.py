"""The Gradio page: `build_demo` lays it out, then `_wire` connects every event in one place.

Models are process-wide (`EngineCache`, behind a lock); each browser session's trace lives in `gr.State` and
is replaced by a new object, never mutated. Only Generate, Baseline and loading a pair touch a model:
stepping through rounds re-renders the recorded trace with charts.py and render.py.

Tests inject tiny models through `get_engine`: build_demo(lambda preset, progress: engine, {"tiny": "Tiny"}, "tiny").
"""

from __future__ import annotations

import dataclasses
import hashlib
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import gradio as gr

from . import charts, render
from .engine import MAX_K, Engine, RunSettings
from .trace import MAX_TRACE_BYTES, Trace, load_trace

ASSETS = Path(__file__).resolve().parent.parent / "assets"
EXAMPLES = {  # label -> prompt: code drafts well, a fact fairly, a story poorly; all three are worth showing
    "code": "Write a Python function that returns the n-th Fibonacci number.",
    "fact": "What is the capital of France? Answer in one sentence.",
    "story": "Write the opening of a short story about a lighthouse keeper.",
}
FONT = {False: 15, True: 22}  # chart font size, by lecture mode
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
    """One Engine per preset, loaded once under a lock and shared by every session. Loading another preset
    drops the previous pair first: two pairs rarely fit in memory together."""

    def __init__(self, load_pair: Callable[..., Any] | None = None):
        self._load_pair = load_pair
        self._lock = threading.Lock()
        self._engines: dict[str, Engine] = {}

    def __call__(self, preset: str, progress: Progress | None = None) -> Engine:
        with self._lock:
            if preset not in self._engines:
                self._engines.clear()
                load = self._load_pair or _load_pair
                self._engines[preset] = Engine.from_pair(load(preset=preset, progress=progress))
            return self._engines[preset]


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

HINT = "Press Generate, or open a recorded trace, to watch speculative decoding round by round."


def empty_view(font: int = FONT[False]) -> list:
    """Values for the round panels after the slider, before there is a trace."""
    return [render.placeholder(HINT), charts.empty_figure("p and q for each draft token appear here.", font), "",
            charts.empty_figure("The residual, or the bonus token, appears here.", font), "",
            charts.empty_figure("Tokens per target pass appear here as rounds complete.", font), ""]


def round_view(trace: Trace | None, number: float | None, lecture: bool = False) -> list:
    """Values for the round panels (slider, strip, p/q bars, verdicts, residual, explanation, tokens per pass,
    summary) showing round `number` (1-based, clamped) of `trace`. Calls no model."""
    font = FONT[bool(lecture)]
    if trace is None or not trace.rounds:
        return [gr.Slider(minimum=1, maximum=1, value=1, interactive=False), *empty_view(font)]
    n = len(trace.rounds)
    i = min(max(int(number or 1), 1), n) - 1
    rnd = trace.rounds[i]
    return [gr.Slider(minimum=1, maximum=max(n, 2), value=i + 1, interactive=n > 1),
            render.token_strip(trace, i), charts.pq_bars(rnd, font), render.decision_row(rnd),
            charts.residual_chart(rnd, font), render.explanation(trace, i), charts.tokens_per_pass(trace, i, font),
            render.summary_html(trace)]


def trace_info(trace: Trace) -> str:
    return render.run_info(trace.device, trace.dtype, trace.draft_model, trace.target_model)


def engine_info(engine: Engine) -> str:
    return render.run_info(engine.device, engine.dtype, engine.draft_name, engine.target_name)


def settings_from(k, temperature, top_p, top_k, seed, max_new_tokens) -> RunSettings:
    """RunSettings from the page's fields (numbers arrive as floats); ValueError names the first bad one."""
    return RunSettings(k=_whole(k, "K"), temperature=_number(temperature, "temperature"),
                       top_p=_number(top_p, "top-p"), top_k=_whole(top_k, "top-k"), seed=_whole(seed, "seed"),
                       max_new_tokens=_whole(max_new_tokens, "max new tokens"))


def _number(value, name: str) -> float:
    if value is None or isinstance(value, bool):
        raise ValueError(f"{name} is empty")
    return float(value)


def _whole(value, name: str) -> int:
    number = _number(value, name)
    if not number.is_integer():
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return int(number)


def trace_settings(trace: Trace) -> RunSettings:
    """The RunSettings a trace was recorded with (a trace may carry extra keys: ignore them)."""
    names = {f.name for f in dataclasses.fields(RunSettings)}
    return RunSettings(**{k: v for k, v in trace.settings.items() if k in names})


# --- trace files -------------------------------------------------------------------------------------------

_DOWNLOADS = tempfile.TemporaryDirectory(prefix="specviz-traces-")  # removed when the process exits
KEEP_DOWNLOADS_S = 3600


def trace_file(trace: Trace) -> str:
    """Write trace as JSON for the download button; the folder is named by content, stale ones are pruned."""
    root = Path(_DOWNLOADS.name)
    for old in root.glob("*/specviz-trace.json"):
        if time.time() - old.stat().st_mtime > KEEP_DOWNLOADS_S:
            old.unlink(missing_ok=True)
    text = trace.to_json(indent=1)
    folder = root / hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    folder.mkdir(exist_ok=True)
    path = folder / "specviz-trace.json"
    path.write_text(text, encoding="utf-8")
    return str(path)


def read_trace(path: str) -> Trace:
    """An uploaded trace file, read no further than the size limit; ValueError for anything unreadable."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_TRACE_BYTES + 1)
    except OSError as e:
        raise ValueError(f"could not read the uploaded file: {e.strerror}") from None
    return load_trace(raw)


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

    @property
    def round_slider(self) -> gr.Slider:
        return self.view[0]


def build_demo(get_engine: EngineLoader = default_engine_loader, presets: dict[str, str] | None = None,
               default_preset: str | None = None) -> gr.Blocks:
    """The whole page. `get_engine(preset, progress)` returns a ready Engine (tests pass tiny models);
    `presets` maps preset name -> label for the dropdown."""
    presets = presets or preset_labels()
    default_preset = default_preset or next(iter(presets))
    with gr.Blocks(title="specviz: speculative decoding, round by round", fill_width=True,
                   delete_cache=(3600, 3600)) as demo:
        page = _layout(presets, default_preset)
        _wire(demo, page, get_engine)
    return demo


def _layout(presets: dict[str, str], default_preset: str) -> Page:
    trace = gr.State(None)
    with gr.Row(elem_id="sv-header", equal_height=True):
        gr.HTML('<h1>specviz <span>speculative decoding, one round at a time</span></h1>', elem_id="sv-title")
        lecture = gr.Checkbox(label="Lecture mode", value=False, elem_id="lecture-mode", scale=0, min_width=180)
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
            k = gr.Slider(1, MAX_K, value=4, step=1, label="K (draft tokens per round)", elem_id="k", min_width=160)
            temperature = gr.Slider(0, 2, value=0.7, step=0.05, label="Temperature (0 = greedy)",
                                    elem_id="temperature", min_width=160)
            top_p = gr.Slider(0.05, 1, value=1.0, step=0.05, label="top-p", elem_id="top-p", min_width=120)
            top_k = gr.Number(0, precision=0, label="top-k (0 = off)", elem_id="top-k", min_width=100)
            seed = gr.Number(0, precision=0, label="Seed", elem_id="seed", min_width=100)
            max_new_tokens = gr.Slider(1, 512, value=64, step=1, label="Max new tokens", elem_id="max-new-tokens",
                                       min_width=160)
        with gr.Row(equal_height=True):
            info = gr.HTML(render.placeholder("Loading models…"), elem_id="run-info")
            upload = gr.File(label="Open a recorded trace (JSON)", file_types=[".json"], type="filepath",
                             elem_id="trace-upload", height=90, scale=0, min_width=280)
    status = gr.HTML("", elem_id="status")
    with gr.Row(elem_id="sv-nav", equal_height=True):
        previous = gr.Button("Previous round", elem_id="prev-round", scale=0, min_width=150)
        round_slider = gr.Slider(1, 1, value=1, step=1, label="Round  (← → keys)", interactive=False,
                                 elem_id="round-slider", scale=4)
        next_ = gr.Button("Next round", elem_id="next-round", scale=0, min_width=150)
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
                [round_slider, strip, bars, decisions, residual, explanation, per_pass, summary])


# --- events ------------------------------------------------------------------------------------------------

def _wire(demo: gr.Blocks, page: Page, get_engine: EngineLoader) -> None:
    p = page
    skip_view = [gr.skip()] * len(p.view)
    quick = dict(show_progress="hidden", concurrency_limit=None)  # re-rendering records: no model, no queue

    def problem(message: str, n_outputs: int) -> list:
        gr.Warning(message)
        return [gr.skip(), render.status(message, "error")] + [gr.skip()] * (n_outputs - 2)

    def load_engine(preset: str, progress: gr.Progress) -> Engine:
        return get_engine(preset, lambda fraction, message: progress(fraction, desc=message))

    def show_pair(preset, progress=gr.Progress()):
        try:
            return engine_info(load_engine(preset, progress)), ""
        except ValueError as e:
            gr.Warning(str(e))
            return render.placeholder("No model pair loaded."), render.status(str(e), "error")

    def generate(prompt, preset, k, temperature, top_p, top_k, seed, max_new_tokens, lecture,
                 progress=gr.Progress()):
        n_out = 4 + len(p.view)
        try:
            settings = settings_from(k, temperature, top_p, top_k, seed, max_new_tokens)
            engine = load_engine(preset, progress)
            engine.encode(prompt, settings)  # an empty or too long prompt fails here, before any model runs
        except ValueError as e:
            yield problem(str(e), n_out)
            return
        info, trace, started = engine_info(engine), None, time.perf_counter()
        try:
            for trace in stream_traces(engine, prompt, settings):
                n = len(trace.rounds)
                busy = render.status(f"Generating… round {n}, {trace.summary.n_new_tokens} of "
                                     f"{settings.max_new_tokens} new tokens", "busy")
                yield [trace, busy, info, gr.skip(), *round_view(trace, n, lecture)]
        except Exception as e:  # a model failure mid-run: keep the rounds so far and say what happened
            gr.Warning(f"generation stopped: {type(e).__name__}: {e}")
            if trace is None:
                yield problem(f"generation failed: {type(e).__name__}: {e}", n_out)
                return
        s = trace.summary
        done = render.status(f"Done: {s.n_rounds} rounds, {s.n_new_tokens} new tokens in "
                             f"{time.perf_counter() - started:.1f} s. Step through the rounds with ← →.", "done")
        yield [trace, done, info, gr.DownloadButton(value=trace_file(trace), interactive=True), *skip_view]

    def baseline(trace, preset, progress=gr.Progress()):
        if trace is None or not trace.rounds:
            return problem("Generate (or open a trace) first: the baseline reruns its prompt with the target alone.", 4)
        try:
            engine = load_engine(preset, progress)
            if engine.target_name != trace.target_model:
                raise ValueError(f"this trace was recorded with target {trace.target_model}, but the selected pair's "
                                 f"target is {engine.target_name}; pick the pair it was recorded with")
            progress(0.5, desc="running the target alone")
            result = run_baseline(engine, trace.prompt, trace_settings(trace))
        except ValueError as e:
            return problem(str(e), 4)
        timed = dataclasses.replace(trace, baseline=result)
        message = f"Baseline: the target alone made {len(result.output_token_ids)} tokens at {result.tokens_per_s:.1f} tok/s."
        return [timed, render.status(message, "done"), render.summary_html(timed),
                gr.DownloadButton(value=trace_file(timed), interactive=True)]

    def open_trace(path, lecture):
        if not path:
            return [gr.skip()] * (4 + len(p.view))
        try:
            trace = read_trace(path)
        except ValueError as e:
            return problem(str(e), 4 + len(p.view))
        loaded = render.status(f"Opened a trace of {len(trace.rounds)} rounds (no model needed to step through it).",
                               "done")
        return [trace, loaded, render.run_info(trace.device, trace.dtype, trace.draft_model, trace.target_model,
                                               recorded=True),
                gr.DownloadButton(value=trace_file(trace), interactive=True), *round_view(trace, 1, lecture)]

    def step(delta: int):
        def go(trace, number, lecture):
            return round_view(trace, (number or 1) + delta, lecture)
        return go

    def toggle_play(label, trace, number, lecture):
        if label == "Pause" or trace is None or not trace.rounds:
            return [gr.Timer(active=False), gr.Button("Play"), *skip_view]
        at_end = int(number or 1) >= len(trace.rounds)
        return [gr.Timer(active=True), gr.Button("Pause"),
                *(round_view(trace, 1, lecture) if at_end else skip_view)]

    def tick(trace, number, lecture):
        if trace is None or int(number or 1) >= len(trace.rounds):
            return [gr.Timer(active=False), gr.Button("Play"), *skip_view]
        last = int(number) + 1 >= len(trace.rounds)
        return [gr.Timer(active=not last), gr.Button("Play" if last else "Pause"),
                *round_view(trace, int(number) + 1, lecture)]

    def lecture_mode(on, trace, number):
        return [gr.Accordion(open=not on), *round_view(trace, number, on)]

    settings = [p.k, p.temperature, p.top_p, p.top_k, p.seed, p.max_new_tokens]
    nav = [p.trace, p.round_slider, p.lecture]
    demo.load(show_pair, [p.preset], [p.info, p.status], show_progress_on=[p.info], api_visibility="private")
    p.preset.change(show_pair, [p.preset], [p.info, p.status], api_name="load_pair", show_progress_on=[p.info],
                    concurrency_id="model")
    p.generate.click(generate, [p.prompt, p.preset, *settings, p.lecture],
                     [p.trace, p.status, p.info, p.download, *p.view], api_name="generate",
                     show_progress_on=[p.status], concurrency_id="model", concurrency_limit=1)
    p.baseline.click(baseline, [p.trace, p.preset], [p.trace, p.status, p.view[-1], p.download], api_name="baseline",
                     show_progress_on=[p.status], concurrency_id="model", concurrency_limit=1)
    p.upload.upload(open_trace, [p.upload, p.lecture], [p.trace, p.status, p.info, p.download, *p.view],
                    api_name="open_trace", show_progress="minimal")
    p.previous.click(step(-1), nav, p.view, api_name="previous_round", **quick)
    p.next.click(step(+1), nav, p.view, api_name="next_round", **quick)
    p.round_slider.release(step(0), nav, p.view, api_name="show_round", **quick)
    p.play.click(toggle_play, [p.play, *nav], [p.timer, p.play, *p.view], api_visibility="private", **quick)
    p.timer.tick(tick, nav, [p.timer, p.play, *p.view], api_visibility="private", **quick)
    p.pace.change(lambda seconds: gr.Timer(value=seconds), [p.pace], [p.timer], api_visibility="private", **quick)
    p.lecture.change(None, [p.lecture], None, js="(on) => { document.body.classList.toggle('sv-lecture', on); }")
    p.lecture.change(lecture_mode, [p.lecture, p.trace, p.round_slider], [p.controls, *p.view],
                     api_visibility="private", **quick)


def launch_kwargs() -> dict:
    """Theme, CSS and JS for `demo.launch(...)` (Gradio 6 takes them there, not in Blocks)."""
    return dict(theme=gr.themes.Default(primary_hue="blue", neutral_hue="slate", text_size="lg"),
                css=render.palette_css(), css_paths=[ASSETS / "style.css"],
                js=(ASSETS / "keys.js").read_text(encoding="utf-8"))

"""The page's handlers that need a model: load a pair, Generate, Baseline, and open a trace (checked against the
pair in memory) or a shipped example (examples.py; no model consulted). Each returns updates by component: an error
says what went wrong in the status line (and a toast) and leaves every other output as it was.
"""

from __future__ import annotations

import dataclasses
import html
import json
import threading
import time
from contextlib import closing
from dataclasses import dataclass

import gradio as gr

from specviz.view import charts
from specviz.view import notices
from specviz.view import summary
from specviz.view.cost_words import pass_costs_text, slower_words
from specviz.view.style import speed
from specviz.drafters import REGISTRY
from specviz.engine import Engine, RunSettings
from specviz.models.kernels import weights_said
from specviz.models.pairs import PRESETS
from specviz.engine.trained import check_trained
from specviz.app.errors import message_of, refused_by_zerogpu
from specviz.lecture.examples import EXAMPLES, FIRST, Example, ExampleError, load_example
from specviz.app.inputs import check_preset, check_prompt, settings_from
from specviz.settings.bounds import short_repr
from specviz.app.pair_cache import Loading, waiting_for
from specviz.app.serving import EngineLoader, EngineRef, Runs, engine_ref, run_baseline, stream_traces
from specviz.record.trace import PUBLISHED_TURNS, Trace
from specviz.record.quiz_data import QuizState, check_quiz, quiz_from_dict
from specviz.app.trace_files import (CONTROLS, check_tokenizer, controls_of, pack_file, read_lecture, trace_file,
                                     trace_settings)
from specviz.app.round_view import STEP_NAMES, RoundView, round_view

# Each event that shows a run, and which of RunOutputs' lists it writes.
EVENT_OUTPUTS = {"generate": "all", "open_example": "of_open", "open_trace": "of_open", "baseline": "of_baseline"}
KEPT = "The trace on the page stays as it was."  # what a failed Generate or Baseline leaves: problem() writes no trace
MIN_FRAME_S = 0.25  # while generating, redraw at most this often (what a redraw costs the browser: docs/benchmarks.md,
#                    "Timings behind choices in the code")


@dataclass
class RunOutputs:
    """The components a run writes to."""

    trace: gr.State  # the session's trace
    status: gr.HTML  # one line: busy, done, or what went wrong
    info: gr.HTML  # device, dtype, draft and target
    download: gr.DownloadButton  # the trace as JSON
    panels: RoundView  # the round view, components
    quiz: gr.Checkbox  # quiz mode: a lecture pack turns it on or off
    controls: dict | None = None  # the settings box by trace_files.CONTROLS' names: an opened trace sets them

    def all(self) -> list:
        """The outputs of Generate, in order."""
        return [self.trace, self.status, self.info, self.download, *self.panels.values()]

    def of_open(self) -> list:
        """The outputs of opening a recorded example, a trace or a lecture pack."""
        return [*self.all(), self.quiz, *(self.controls or {}).values()]

    def of_baseline(self) -> list:
        return [self.trace, self.status, self.panels.summary, self.download, self.panels.timeline]

    def of(self, event: str) -> list:
        """The outputs of the API event `event` (EVENT_OUTPUTS): the page's wiring and `api_outputs` both read it."""
        return getattr(self, EVENT_OUTPUTS[event])()

    @classmethod
    def names(cls) -> "RunOutputs":
        """A RunOutputs of its own field names (the panels' too): `RunOutputs.names().all()` lists Generate's
        outputs by name, in the order an API client receives them (see `api_outputs`)."""
        panels = RoundView(*(f.name for f in dataclasses.fields(RoundView)))
        return cls(**{f.name: f.name for f in dataclasses.fields(cls) if f.name not in ("panels", "controls")},
                   panels=panels, controls={name: name for name in CONTROLS})


def api_outputs(event: str) -> list[str]:
    """What the API endpoint `event` returns, by name and in order (the trace state is never sent): an API client
    or a test reads `dict(zip(api_outputs("generate"), result))`, never a position."""
    if event == "show_round":  # stepping: the round view's step outputs only
        return list(STEP_NAMES)
    return [name for name in RunOutputs.names().of(event) if name != "trace"]


def trace_info(trace: Trace) -> str:
    return notices.run_info(trace.device, trace.dtype, trace.draft_model, trace.target_model, recorded=True,
                            kernels=trace.kernels, weights=weights_said(trace.kernels))


def engine_info(engine: Engine, drafter_name: str | None = None) -> str:
    """The model line: the engine's pair, or with `drafter_name` (a run's trace.draft_model) what a run drafted with."""
    return notices.run_info(engine.device, engine.dtype, drafter_name or engine.draft_name, engine.target_name,
                            why=engine.dtype_why, kernels=engine.kernels, costs=pass_costs_text(engine.pass_costs),
                            weights=weights_said(engine.kernels))


def download(trace: Trace) -> gr.DownloadButton:
    return gr.DownloadButton(value=trace_file(trace), interactive=True)


class ModelActions:
    """`presets` are the pairs this page offers; no other may be named."""

    def __init__(self, get_engine: EngineLoader, presets: list[str], out: RunOutputs):
        self.get_engine, self.presets, self.out = get_engine, presets, out
        self.runs = Runs()

    def problem(self, message: str) -> dict:
        """Say what went wrong (a toast and the status line) and leave every other output as it is."""
        gr.Warning(html.escape(message))  # a toast renders HTML, and a message may quote what a user sent
        return {self.out.status: notices.status(message, "error")}

    def engine(self, preset, progress: gr.Progress) -> Engine:
        """The selected pair, its load's stages on Gradio's progress bar (also a load another caller began)."""
        check_preset(preset, self.presets)
        return self.get_engine(preset, lambda fraction, message: progress(fraction,
                                                                          desc=f"Loading the model pair: {message}"))

    def pair(self, preset, run: str):
        """The selected pair, waited for where it is still loading (the app began loading it at its start, or the
        page changed pair): the status line says at once what `run` waits for and how far the load is, and again
        every WAIT_SAY_S (pair_cache.waiting_for). A generator for `yield from`; returns the Engine."""
        check_preset(preset, self.presets)
        return (yield from waiting_for(self.get_engine, preset, lambda stage: {
            self.out.status: notices.status(waiting_words(run, stage), "busy")}))

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

    def show_model_pair(self, preset, progress=gr.Progress()):
        """Load the selected pair (once per process) and say what it is. -> info, status"""
        try:
            return engine_info(self.engine(preset, progress)), ""
        except Exception as e:  # a hub id offline, a full disk while preparing, not enough memory: say which
            gr.Warning(html.escape(message_of(e)))
            return notices.placeholder("No model pair loaded."), notices.status(message_of(e), "error")

    def drafter_note(self, drafter, preset) -> str:
        """What the page says the moment a drafter is chosen: for Medusa heads or the EAGLE layer not trained yet for
        this pair's target, that they are not and the command that trains them (read from the weights' folder: no
        model loads); '' otherwise. -> the drafter's note"""
        if not isinstance(drafter, str) or drafter not in REGISTRY or preset not in self.presets or preset not in PRESETS:
            return ""  # a drafter or pair the page does not offer: Generate says what is wrong with it
        try:
            check_trained(RunSettings(drafter=drafter), PRESETS[preset].target)
        except ValueError as e:
            return notices.status(str(e), "error")
        return ""

    def show_model_pair_first(self, preset, progress=gr.Progress()):
        """The page's first load: as show_model_pair, but a success leaves the status line alone, since it
        describes the recorded example the page opened meanwhile. -> info, status"""
        info, status = self.show_model_pair(preset, progress)
        return info, status or gr.skip()

    def generate(self, prompt, preset, k, temperature, top_p, top_k, seed, max_new_tokens, lecture, drafter,
                 adaptive, draft_layers, tree_widths, stop_rule=RunSettings.stop_rule,
                 tree_budget=RunSettings.tree_budget, tree_depth=RunSettings.tree_depth, request: gr.Request = None):
        """The trace and the round view after each round (at most every MIN_FRAME_S), then once more; while the
        pair is still loading, the status line says so first (`pair`). The inputs arrive as sent (the event skips
        Gradio's preprocessing), so every one is checked here."""
        try:
            settings = settings_from(k=k, temperature=temperature, top_p=top_p, top_k=top_k, seed=seed,
                                     max_new_tokens=max_new_tokens, drafter=drafter, adaptive=adaptive,
                                     draft_layers=draft_layers, tree_widths=tree_widths, stop_rule=stop_rule,
                                     tree_budget=tree_budget, tree_depth=tree_depth)
            prompt = check_prompt(prompt)
            engine = yield from self.pair(preset, "Generate")
            # A prompt too long for the context fails here, before any model runs; the run starts from these ids,
            # so the prompt is tokenised once
            ids = engine.encode(prompt, settings)
        except Exception as e:
            yield self.problem(message_of(e))
            return
        with self.runs.running(request.session_hash if request else None) as stop:
            yield from self._stream(engine, engine_ref(self.get_engine, preset), prompt, ids, settings,
                                    bool(lecture), stop)

    def stop(self, request: gr.Request = None):
        """Pressing Generate during a run: the running one stops after its current round (see Runs)."""
        self.runs.stop(request.session_hash if request else None)

    def _stream(self, engine: Engine, ref: EngineRef, prompt: str, ids: list[int], settings: RunSettings,
                lecture: bool, stop: threading.Event):
        """Generate's frames. A failure or a stop mid-run keeps the rounds so far: the last frame puts them in
        the trace state (viewable, downloadable) and says what happened."""
        out, info, started, shown = self.out, engine_info(engine), time.perf_counter(), 0.0
        latest = failure = None
        refused = False  # ZeroGPU refused the call before it ran (the quota, no free GPU): no round was made
        # closing(): the GPU call is closed at once, also when the tab is closed mid-run
        with closing(stream_traces(ref, prompt, settings, self.runs.in_flight(), ids)) as traces:
            try:
                for latest in traces:
                    info = engine_info(engine, latest.draft_model)  # the drafter the run was built with
                    if stop.is_set():
                        break
                    if time.perf_counter() - shown < MIN_FRAME_S:
                        continue  # rounds faster than the browser can draw them (tiny models): draw a later one
                    shown, n = time.perf_counter(), len(latest.rounds)
                    busy = notices.status(f"Generating… round {n}, {latest.summary.n_new_tokens} of "
                                         f"{settings.max_new_tokens} new tokens", "busy")
                    yield {out.trace: latest, out.status: busy, out.info: info,  # the stage: this round only
                           **round_view(latest, n, lecture, latest_only=True).updates(out.panels)}
            except Exception as e:  # out of memory, a model error, ZeroGPU: the rounds before it are still good
                failure, refused = message_of(e), refused_by_zerogpu(e)
        if latest is None:
            yield self.problem(f"{'Generate did not run' if refused else 'Generation failed in round 1'}: "
                               f"{failure}. {KEPT}")
            return
        # The last frame always carries the full view (every round on the stage, the last shown), so a client
        # reading only the result sees the whole run.
        yield {out.trace: latest, out.status: self._end_status(latest, failure, stop, started), out.info: info,
               out.download: download(latest), **round_view(latest, latest.summary.n_rounds, lecture).updates(out.panels)}

    @staticmethod
    def _end_status(trace: Trace, failure: str | None, stop: threading.Event, started: float) -> str:
        s = trace.summary
        if failure:
            gr.Warning(html.escape(f"Generation stopped after round {s.n_rounds}: {failure}"))
            return notices.status(f"Generation stopped after round {s.n_rounds}: {failure}. The {s.n_rounds} rounds "
                                 f"before it stay viewable (← →); Generate runs again.", "error")
        if stop.is_set():
            return notices.status(f"Stopped after round {s.n_rounds} ({s.n_new_tokens} new tokens): Generate was "
                                 f"pressed again, so the new run starts next.", "info")
        return notices.status(f"Done: {s.n_rounds} rounds, {s.n_new_tokens} new tokens in "
                             f"{time.perf_counter() - started:.1f} s. Step through the rounds with ← →.", "done")

    def baseline(self, trace, preset, progress=gr.Progress()):
        """Rerun the trace's prompt and settings with the target alone; the trace gains its .baseline."""
        if trace is None or not trace.rounds:
            return self.problem("Generate (or open a trace) first: the baseline reruns its prompt with the target alone.")
        try:
            engine = self.engine(preset, progress)
            if engine.target_name != trace.target_model:
                raise ValueError(f"this trace was recorded with target {trace.target_model}, but the selected "
                                 f"pair's target is {engine.target_name}; pick the pair it was recorded with")
            check_tokenizer(trace, engine)
            progress(0.5, desc="running the target alone")
            result = run_baseline(engine_ref(self.get_engine, preset), trace.prompt, trace_settings(trace))
        except Exception as e:
            return self.problem(f"{message_of(e)}. {KEPT}")
        timed = dataclasses.replace(trace, baseline=result)
        turns = len(result.repeats.speculative) if result.repeats else 1
        message = (f"Baseline: the run and the target alone timed in {turns} interleaved turns each (fewer than the "
                   f"{PUBLISHED_TURNS} a recording takes: a shared server); in the median turn the target alone made "
                   f"{len(result.output_token_ids)} tokens at {speed(result.tokens_per_s)} tok/s. "
                   f"{slower_words(timed)}").rstrip()
        return {self.out.trace: timed, self.out.status: notices.status(message, "done"),
                self.out.panels.summary: summary.summary_html(timed), self.out.download: download(timed),
                self.out.panels.timeline: charts.timeline(timed)}

    def open_trace(self, path, lecture, preset=None):
        """An uploaded trace file, shown at round 1, or a lecture pack, shown as its quiz left it. Stepping
        through it needs no model; when its target is the pair in memory, its tokens must be that pair's
        tokenizer's."""
        if not path:
            return gr.skip()
        try:
            trace, quiz = read_lecture(path)
            engine = self.loaded(preset)
            if engine is not None and engine.target_name == trace.target_model:
                check_tokenizer(trace, engine)
        except ValueError as e:
            return self.problem(str(e))
        other = engine is not None and engine.target_name != trace.target_model
        note = f" It was recorded with {trace.target_model}: Baseline needs that pair." if other else ""
        what = "a lecture pack" if quiz else "a trace"
        return self.show_trace(trace, lecture, f"Opened {what} of {len(trace.rounds)} rounds (no model needed to "
                                               f"step through it).{note}", quiz)

    def open_example(self, index, lecture):
        """The gallery's example number `index` (0-based, in examples.EXAMPLES' order), shown as an uploaded trace
        is. It consults no model: the page opens one while the models are still preparing."""
        names = list(EXAMPLES)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(names):
            return self.problem(f"there is no recorded example number {short_repr(index)}; the gallery has "
                                f"{len(names)} (0 to {len(names) - 1})")
        try:
            trace = load_example(names[index])
        except ExampleError as e:
            return self.problem(f"Could not open the example: {e}")
        example, baseline = EXAMPLES[names[index]], "with" if trace.baseline else "without"
        return self.show_trace(trace, lecture, f"Recorded example “{example.title}” ({len(trace.rounds)} rounds, "
                                               f"{baseline} its target-only baseline; no model needed to step "
                                               f"through it): {example_said(example, trace)}")

    def open_first_example(self, lecture):
        """The page's first load opens examples.FIRST at once, so the page is never empty while models prepare."""
        return self.open_example(list(EXAMPLES).index(FIRST), lecture)

    def keep_shown(self, updates: dict, shown) -> dict:
        """`updates` less those that would set a control of the settings box to the value it held when the event
        was sent (`shown`, by CONTROLS' order): the page's first load opens an example while a person may already
        be typing a prompt of their own, and an update that changes nothing would still overwrite what they typed
        since (issue 64, item 16)."""
        controls = self.out.controls or {}
        same = {controls[name] for name, value in zip(CONTROLS, shown)
                if name in controls and controls[name] in updates and updates[controls[name]] == value}
        return {component: update for component, update in updates.items() if component not in same}

    def show_trace(self, trace: Trace, lecture, message: str, quiz: QuizState | None = None) -> dict:
        """A recorded trace (an upload or a shipped example) shown at round 1, `message` in the status line; a
        lecture pack's trace as its quiz left it (the round, the answers and reveals, quiz mode on or off). The
        settings box shows the trace's prompt and settings."""
        out = self.out
        quiz_on = {out.quiz: quiz.on} if quiz else {}
        if out.controls:
            quiz_on.update({out.controls[name]: value for name, value in controls_of(trace).items()})
        return {out.trace: trace, out.status: notices.status(message, "done"), out.info: trace_info(trace),
                out.download: download(trace), **quiz_on,
                **round_view(trace, quiz.current if quiz else 1, lecture, quiz).updates(out.panels)}


def waiting_words(run: str, stage: Loading) -> str:
    """What a run waiting for its pair says: 'Generate waits for the model pair to load: loading the target's
    weights (90% of the load; waiting 12 s so far). It runs as soon as the pair is ready.'"""
    waited = time.monotonic() - stage.started
    return (f"{run} waits for the model pair to load: {stage.text} ({stage.fraction:.0%} of the load; waiting "
            f"{waited:.0f} s so far). It runs as soon as the pair is ready.")


def example_said(example: Example, trace: Trace) -> str:
    """What the status line says of a shipped example however it opens (the list, a link): what it shows, then its
    speedup. -> 'The draft agrees … Speedup over the target alone: 2.42× (…).'"""
    return f"{example.description} {summary.speedup_sentence(trace)}".rstrip()


def lecture_pack(trace, quiz_json):
    """The trace and the quiz state the browser sent (assets/quiz.js: svQuizState) as one file. -> pack file, status"""
    if trace is None or not trace.rounds:
        return gr.skip(), notices.status("Generate (or open a trace) first: a lecture pack holds a trace.", "error")
    try:
        state = quiz_from_dict(json.loads(quiz_json or "{}"))
        check_quiz(state, trace)
    except (ValueError, RecursionError) as e:
        return gr.skip(), notices.status(f"Could not save the quiz: {message_of(e)}", "error")
    right, answered = state.score(trace)
    return pack_file(trace, state), notices.status(
        f"Lecture pack ready: {len(trace.rounds)} rounds, quiz {'on' if state.on else 'off'}, at round "
        f"{state.current}, score {right} of {answered}. Open it with \"Open a recorded trace\" on any machine, "
        f"no model needed.", "done")

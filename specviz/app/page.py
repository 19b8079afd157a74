"""The page: `build_demo` lays it out, then `_wire` connects every event in one place.

Layout and wiring only. What a handler does lives elsewhere: showing a recorded round in app/round_view.py (no model),
running a model in actions.py, the models themselves in serving.py, input checks in inputs.py, trace files in
app/trace_files.py, the Lab in app/lab_tab.py; the run's settings as controls are app/settings_rows.py's. Each browser
session's trace lives in `gr.State` and is replaced by a new object, never mutated.

Tests inject tiny models through `get_engine`: build_demo(lambda preset, progress: engine, {"tiny": "Tiny"}, "tiny").
"""

from __future__ import annotations

import inspect
from functools import partial
from dataclasses import dataclass, fields

import gradio as gr

from specviz.view import notices
from specviz.app.actions import ModelActions, RunOutputs, lecture_pack
from specviz.app.trace_files import CONTROLS
from specviz.app.controls import Needy, wire_needs
from specviz.app.costs_tab import build_costs
from specviz.lecture.examples import EXAMPLES
from specviz.app.lab_tab import build_lab
from specviz.app.room_panel import HREF_JS, RoomPanel, build_room_panel, open_linked, wire_room_panel
from specviz.app.room_hub import ROOMS, RoomHub
from specviz.app.settings_rows import INFO, Settings, settings_rows
from specviz.settings.prompts import EXAMPLE_PROMPTS
from specviz.app.pair_cache import default_engine_loader, preset_labels
from specviz.app.serving import DEFAULT_CONCURRENCY, MODEL_RUNS, EngineLoader, check_concurrency, limit_model_runs
from specviz.app.round_view import PLAY_JS, SHOW_JS, STEP_JS, Player, RoundView, empty_view, lecture_mode, show_round

# On a phone (the width assets/style.css calls one) the settings fold away as the page opens and after an example or
# a trace is opened, so that the round is on the first screen (issue 36); the lecture-mode switch folds them anywhere
FOLD_JS = """() => {
  if (!window.matchMedia('(max-width: 640px)').matches) return;
  const fold = (frames) => {  // as the page opens, the accordion may not be drawn yet: try again next frame
    const label = document.querySelector('#controls > .label-wrap');
    if (label) { if (label.classList.contains('open')) label.click(); }
    else if (frames) requestAnimationFrame(() => fold(frames - 1));
  };
  fold(600);
}"""
# The presenter view (assets/present.js; the P key does the same), from the navigation's Present and the lecturer's tools'
PRESENT_JS = "() => { window.svPresent(true); }"


@dataclass
class Page:
    """The components events read and write (built by `_layout`, wired by `_wire`)."""

    trace: gr.State
    lecture: gr.Checkbox
    quiz: gr.Checkbox  # predict, then reveal: the stage hides verdicts until revealed (assets/quiz.js)
    controls: gr.Accordion
    prompt: gr.Textbox
    preset: gr.Dropdown
    settings: Settings
    drafter: gr.Radio  # RunSettings.drafter, a key of the drafter registry
    drafter_note: gr.HTML  # what the chosen drafter lacks before a run (untrained heads), or nothing
    adaptive: gr.Checkbox  # RunSettings.adaptive: K per round, the slider's K the most
    stop_rule: gr.Radio  # RunSettings.stop_rule: how adaptive K stops (the threshold, or cost-aware)
    draft_layers: gr.Number  # RunSettings.draft_layers: self-speculation's N (0: half the target's layers)
    tree_widths: gr.Textbox  # RunSettings.tree_widths as text, 2-2-1-1 (read with the tree drafter only)
    tree_budget: gr.Number  # RunSettings.tree_budget: a shaped tree's most nodes (read with a shaped tree only)
    tree_depth: gr.Number  # RunSettings.tree_depth: a shaped tree's most depth (0: its drafter's default)
    generate: gr.Button
    baseline: gr.Button
    info: gr.HTML
    status: gr.HTML
    download: gr.DownloadButton
    pack: gr.Button  # makes a lecture pack: the trace and the browser's quiz state
    pack_file: gr.File  # the lecture pack, to download
    quiz_state: gr.Textbox  # not shown: carries the browser's quiz state to `lecture_pack` (see _wire)
    upload: gr.File
    examples: gr.Dataset  # the shipped recorded examples (examples.EXAMPLES), opened by index
    previous: gr.Button
    next: gr.Button
    play: gr.Button
    present: gr.Button  # the presenter view of the trace on screen (assets/present.js; the P key does the same)
    present_top: gr.Button  # the same, in the lecturer's tools atop the page (_lecture_tools)
    to_room: gr.Button  # the room panel unfolded and brought into view (assets/first_screen.js)
    pace: gr.Slider
    timer: gr.Timer
    panels: RoundView  # the round view's components
    room: RoomPanel  # open a room for the class; link to this round

    @property
    def outputs(self) -> RunOutputs:
        named = self._named()
        return RunOutputs(self.trace, self.status, self.info, self.download, self.panels, self.quiz,
                          {name: named[name] for name in CONTROLS})

    def _named(self) -> dict:
        """Every component by its field's name, the numeric settings' by RunSettings' names."""
        return ({f.name: getattr(self, f.name) for f in fields(self)}
                | {f.name: getattr(self.settings, f.name) for f in fields(self.settings)})

    def needy(self) -> list[Needy]:
        """The controls whose setting only applies with another (settings/needs.py), each with its INFO line."""
        named = {"adaptive": self.adaptive, "stop_rule": self.stop_rule, "draft_layers": self.draft_layers,
                 "tree_widths": self.tree_widths, "tree_budget": self.tree_budget, "tree_depth": self.tree_depth,
                 **{f.name: getattr(self.settings, f.name) for f in fields(Settings)}}
        return [Needy(setting, named[setting], info) for setting, info in INFO.items()]

    def inputs_of(self, handler) -> list:
        """The components a handler reads, found by its parameter names: Generate's are the request contract's
        fields (RunSettings' names) beside the prompt, the pair and lecture mode, so its inputs on the page and
        its parameter list in the API both follow its signature, written once (ModelActions.generate)."""
        named = self._named()
        return [named[name] for name in inspect.signature(handler).parameters if name in named]


def build_demo(get_engine: EngineLoader = default_engine_loader, presets: dict[str, str] | None = None,
               default_preset: str | None = None, concurrency: int = DEFAULT_CONCURRENCY,
               hub: RoomHub = ROOMS) -> gr.Blocks:
    """The whole page. `get_engine(preset, progress)` returns a ready Engine (tests pass tiny models);
    `presets` maps preset name -> label for the dropdown; `concurrency`: model runs at once, for all sessions;
    `hub`: the server's rooms (the same that serving.launch_kwargs routes to)."""
    check_concurrency(concurrency)
    presets = presets or preset_labels()
    default_preset = default_preset or next(iter(presets))
    with gr.Blocks(title="specviz: speculative decoding, round by round", fill_width=True,
                   delete_cache=(3600, 3600)) as demo:
        lecture, quiz = _header()
        with gr.Tabs():
            with gr.Tab("Rounds", elem_id="rounds-tab"):
                page = _layout(presets, default_preset, lecture, quiz)
            with gr.Tab("Lab", elem_id="lab-tab"):
                build_lab(page.trace, page.preset, get_engine)  # fed the session's trace and the app's models
            with gr.Tab("Costs", elem_id="costs-tab"):
                build_costs(page.preset, get_engine, page.trace)
        _wire(demo, page, ModelActions(get_engine, list(presets), page.outputs), hub)
    limit_model_runs(demo, concurrency)  # after the Lab wired its comparison: one limit for the whole group
    return demo


# --- layout ------------------------------------------------------------------------------------------------

def _header() -> tuple[gr.Checkbox, gr.Checkbox]:
    """The title and the two switches for a lecture. -> lecture mode, quiz"""
    with gr.Row(elem_id="sv-header", equal_height=True):
        gr.HTML('<a class="sv-skip" href="#sv-nav">Skip to the round</a>'
                '<h1>specviz <span>speculative decoding, one round at a time</span></h1>'
                '<div id="sv-announce" class="sv-sr" aria-live="polite" aria-atomic="true"></div>', elem_id="sv-title")
        lecture = gr.Checkbox(label="Lecture mode", value=False, elem_id="lecture-mode", scale=0, min_width=190)
        quiz = gr.Checkbox(label="Quiz mode", value=False, elem_id="quiz-mode", scale=0, min_width=150)
    return lecture, quiz


def _panels() -> tuple[RoundView, RoomPanel]:
    """The round view's components, placed top to bottom (their values come from round_view.round_view), and the room
    panel right under the round: on the projector the class's answers sit just below it, and in lecture mode the
    round still starts at the top of the screen."""
    empty = empty_view()
    stage = gr.HTML(empty.stage, label="The round", elem_id="stage")
    room = build_room_panel()
    per_pass = gr.Plot(empty.per_pass, label="Tokens per target pass", show_label=False, elem_id="tokens-per-pass")
    summary = gr.HTML(empty.summary, label="Summary", elem_id="summary")
    timeline = gr.Plot(empty.timeline, label="Timeline", show_label=False, elem_id="timeline")
    return RoundView(None, stage, per_pass, summary, timeline), room  # the slider: _layout places it with the nav


def _lecture_tools() -> tuple[gr.Button, gr.Button]:
    """A lecturer's first screen (issue 55, item 6): at 1280x720 a plain visit showed settings alone, Present 1,665 px
    down the page, the room 2,434, and nothing said that P presents. One line above the settings says how to present
    and open a room, with a button for each; lecture mode and a phone leave it out (style.css): there the navigation,
    with its Present, comes first. -> Present, "Open a room…"
    """
    with gr.Row(elem_id="sv-lecture-tools", equal_height=True):
        gr.HTML('<p><b>For a lecture:</b> Present shows the round alone, for a projector; press <kbd>P</kbd> for the '
                'presenter view (outside a text box; <kbd>Esc</kbd> leaves it, <kbd>?</kbd> lists its keys). A room '
                'lets the class follow on their phones and answer in quiz mode.</p>', elem_id="sv-lecture-help",
                padding=False)
        present = gr.Button("Present", elem_id="present-top", scale=0, min_width=120, size="md")
        room = gr.Button("Open a room…", elem_id="to-room", scale=0, min_width=160, size="md")
    return present, room


def _layout(presets: dict[str, str], default_preset: str, lecture: gr.Checkbox, quiz: gr.Checkbox) -> Page:
    trace = gr.State(None)
    present_top, to_room = _lecture_tools()
    with gr.Accordion("Prompt and settings", open=True, elem_id="controls") as controls:
        with gr.Row(equal_height=False):
            with gr.Column(scale=4):
                prompt = gr.Textbox(label="Prompt", value=EXAMPLE_PROMPTS["code"], lines=2, max_lines=6, elem_id="prompt")
                gr.Examples([[text] for text in EXAMPLE_PROMPTS.values()], inputs=[prompt], label="Example prompts",
                            example_labels=[f"{name}: {text}" for name, text in EXAMPLE_PROMPTS.items()])
                # the shipped recordings (examples.EXAMPLES), opened by index; the status says what each shows
                examples = gr.Dataset(
                    components=["textbox"], samples=[[e.title] for e in EXAMPLES.values()], type="index",
                    label="Recorded examples (real runs of the packaged pair: open one, no model needed)",
                    elem_id="recorded-examples", samples_per_page=len(EXAMPLES))
            with gr.Column(scale=1, min_width=250):  # "Download trace (JSON)" on one line
                generate = gr.Button("Generate", variant="primary", elem_id="generate")
                baseline = gr.Button("Baseline", elem_id="baseline")
                download = gr.DownloadButton("Download trace (JSON)", value=None, interactive=False,
                                             elem_id="download-trace", size="md")
                pack = gr.Button("Make a lecture pack", elem_id="make-pack", size="md")
                pack_file = gr.File(label="Lecture pack (trace + quiz)", interactive=False, elem_id="pack-file",
                                    height=70)
                quiz_state = gr.Textbox(visible=False)
        (preset, settings, drafter, drafter_note, adaptive, stop_rule, draft_layers, tree_widths, tree_budget,
         tree_depth) = settings_rows(presets, default_preset)
        with gr.Row(equal_height=True):
            info = gr.HTML(notices.placeholder("Loading models…"), label="Run info", elem_id="run-info")
            upload = gr.File(label="Open a recorded trace (JSON)", file_types=[".json"], type="filepath",
                             elem_id="trace-upload", height=90, scale=0, min_width=280)
    status = gr.HTML("", label="Status", elem_id="status")
    with gr.Row(elem_id="sv-nav", equal_height=True):
        previous = gr.Button("Previous round", elem_id="prev-round", scale=0, min_width=200)
        slider = gr.Slider(1, 2, value=1, step=1, label="Round", info="← → keys step through the rounds",
                           interactive=False, elem_id="round-slider", scale=4)
        next_ = gr.Button("Next round", elem_id="next-round", scale=0, min_width=200)
        play = gr.Button("Play", elem_id="play", scale=0, min_width=110)
        present = gr.Button("Present", elem_id="present", scale=0, min_width=120)
        pace = gr.Slider(0.3, 5, value=1.5, step=0.1, label="Seconds per round", elem_id="pace", scale=1,
                         min_width=190)
    timer = gr.Timer(1.5, active=False)
    panels, room = _panels()
    panels.slider = slider
    return Page(trace=trace, lecture=lecture, quiz=quiz, controls=controls, prompt=prompt, preset=preset,
                settings=settings, drafter=drafter, drafter_note=drafter_note, adaptive=adaptive, stop_rule=stop_rule,
                draft_layers=draft_layers,
                tree_widths=tree_widths, tree_budget=tree_budget, tree_depth=tree_depth, generate=generate,
                baseline=baseline, info=info, status=status,
                download=download, pack=pack, pack_file=pack_file, quiz_state=quiz_state, upload=upload,
                examples=examples, previous=previous, next=next_, play=play, present=present, present_top=present_top,
                to_room=to_room, pace=pace, timer=timer, panels=panels, room=room)


# --- events: all the wiring, in one place -------------------------------------------------------------------

def _wire_drafter_note(p: Page, models: ModelActions) -> None:
    """An untrained drafter says so the moment it is chosen (or the pair changes), not at Generate."""
    for trigger in (p.drafter, p.preset):
        trigger.change(models.drafter_note, [p.drafter, p.preset], [p.drafter_note], queue=False,
                       show_progress="hidden", api_visibility="private")


def _wire(demo: gr.Blocks, p: Page, models: ModelActions, hub: RoomHub) -> None:
    nav, step_view = [p.trace, p.panels.slider, p.lecture], p.panels.step_outputs()
    # Re-rendering records needs no model and no queue. Navigation and Generate take their inputs as sent (preprocess=
    # False) and check them themselves: a bad value from an API client gets a message, not a preprocessing traceback.
    quick = dict(show_progress="hidden", concurrency_limit=None)
    steps = dict(quick, preprocess=False, queue=False)
    loads = dict(show_progress_on=[p.info], concurrency_limit=None)  # EngineCache makes loading safe to share
    one_model_run = dict(show_progress_on=[p.status], concurrency_id=MODEL_RUNS)  # limit: serving.limit_model_runs
    private = dict(api_visibility="private")

    opened = _wire_first_load(demo, p, models, hub)
    wire_room_panel(p.room, p.trace, p.status, hub)
    # After the opening, never beside it: both write the info line (a cached pair's could land first, then be lost)
    opened.then(models.show_model_pair_first, [p.preset], [p.info, p.status], **private, **loads)
    p.preset.change(models.show_model_pair, [p.preset], [p.info, p.status], api_name="load_pair", **loads)
    _wire_drafter_note(p, models)
    # Generate pressed during a run: the first listener stops the running one after its round; the second
    # queues the new run, which starts when the model is free. ("multiple" on both: the page sends every press at
    # once. With the default, "once", a press made while the first press's stop was still on its way (a busy
    # machine) was dropped, and the running run went on. "always_last" would hold the press back until the old run
    # ended, then send both listeners, and the stop could then hit the new run.)
    p.generate.click(models.stop, None, None, api_name="stop", trigger_mode="multiple", **quick)
    # The round first: Generate scrolls the status line to the top, so it and the newest round are in view at
    # 1280×720 while the run streams (folding the settings away would hide Baseline and the downloads too)
    p.generate.click(None, None, None, js="() => { document.getElementById('status')?.scrollIntoView({block: "
                                          "'start'}); }", **private)
    p.generate.click(models.generate, p.inputs_of(models.generate), p.outputs.of("generate"), api_name="generate",
                     preprocess=False, trigger_mode="multiple", **one_model_run)
    p.baseline.click(models.baseline, [p.trace, p.preset], p.outputs.of("baseline"), api_name="baseline",
                     **one_model_run)
    p.upload.upload(models.open_trace, [p.upload, p.lecture, p.preset], p.outputs.of("open_trace"),
                    api_name="open_trace", show_progress="minimal")
    example = p.examples.click(models.open_example, [p.examples, p.lecture], p.outputs.of("open_example"),
                               api_name="open_example", **quick)
    # Stepping: the browser shows the round at once (each event's js, assets/stepping.js), then tells the server, which
    # moves the slider and the chart's mark. Only /show_round is public: the buttons' number is the new round.
    # "multiple": every press steps (Gradio's default drops a press while the one before awaits the server).
    p.previous.click(show_round, nav, step_view, js=STEP_JS[-1], api_name="previous_round", trigger_mode="multiple",
                     **private, **steps)
    p.next.click(show_round, nav, step_view, js=STEP_JS[1], api_name="next_round", trigger_mode="multiple",
                 **private, **steps)
    p.panels.slider.input(show_round, nav, step_view, js=SHOW_JS, api_name="show_round", trigger_mode="always_last",
                          **steps)
    player = Player(p.timer, p.play, p.panels)
    p.play.click(player.toggle, [p.play, *nav], player.outputs(), js=PLAY_JS, **private, **quick)
    p.timer.tick(player.tick, nav, player.outputs(), js=STEP_JS[1], **private, **quick)
    _wire_lecture_tools(p)
    p.pace.change(lambda seconds: gr.Timer(value=seconds), [p.pace], [p.timer], **private, **quick)
    p.lecture.change(None, [p.lecture], None, js="(on) => { document.body.classList.toggle('sv-lecture', on); }")
    p.lecture.change(lecture_mode(p.controls, p.panels), [p.lecture, p.trace, p.panels.slider],
                     [p.controls, p.panels.per_pass, p.panels.timeline], **private, **quick)
    p.quiz.change(None, [p.quiz], None, js="(on) => { window.svQuiz(on); }")
    p.pack.click(lecture_pack, [p.trace, p.quiz_state], [p.pack_file, p.status], api_name="lecture_pack",
                 js="(trace, state) => [trace, window.svQuizState()]", **quick)
    _wire_layout(demo, p, opened, example)


def _wire_first_load(demo: gr.Blocks, p: Page, models: ModelActions, hub: RoomHub):
    """The first load opens what the page's link asks for (app/room_panel.py), else a recorded example, at once, so the
    page is never empty; the model's load then leaves the status line to it. Queued: only a queued event tells the
    page which states changed, so the trace's followers (the Lab's theory, the Costs' α and K) hear of it (#55). It
    reads the settings box as the page opened with it: a setting the example leaves as it was is not written, so a
    prompt typed before the example lands stays (open_linked). -> the event"""
    shown = list(p.outputs.controls.values())
    return demo.load(partial(open_linked, models, hub, p.room), [p.lecture, p.room.link_text, *shown],
                     [*p.outputs.of_open(), p.room.box, p.room.accordion],
                     js=f"(lecture, t, ...shown) => [lecture, {HREF_JS}, ...shown]", show_progress="hidden",
                     concurrency_limit=None, api_visibility="private")


def _wire_lecture_tools(p: Page) -> None:
    """Both Present buttons open the presenter view by one script (PRESENT_JS); "Open a room…" brings the room panel
    into view (assets/first_screen.js). In the browser alone: no server call."""
    for present in (p.present, p.present_top):
        present.click(None, None, None, js=PRESENT_JS, api_visibility="private")
    p.to_room.click(None, None, None, js="() => { window.svToRoom(); }", api_visibility="private")


def _wire_layout(demo: gr.Blocks, p: Page, first_load, example) -> None:
    """Where the page's own state changes the page: the settings folded on a phone, the round brought into view once
    an example or a link has opened it (assets/first_screen.js), and the controls whose setting only applies with
    another enabled or not (app/controls.py)."""
    for opened in (demo.load, p.examples.click, p.upload.upload):
        opened(None, None, None, js=FOLD_JS, api_visibility="private")
    # after the event, when what it opened is on the page: before, the status and the settings above the round
    # still had their old heights
    first_load.then(None, None, None, js="() => { window.svOpenedLink(); }", api_visibility="private")
    example.then(None, None, None, js="() => { window.svOpenedExample(); }", api_visibility="private")
    wire_needs(p.needy(), p.drafter, p.adaptive, p.settings.temperature)

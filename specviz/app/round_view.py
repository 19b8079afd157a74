"""The round view: its panels named once (`RoundView`), and the handlers that show a recorded round.

`RoundView` holds either the panels' components (app/page.py's layout builds one) or their values (`round_view`
returns one), so the order of outputs is written in one place, the dataclass, and a handler returns updates by
component: `round_view(trace, 3).updates(panels)`. Everything here is a pure function of a trace and calls no
model. The stage (stage.py) holds every round of the trace; stepping happens in the browser (assets/stepping.js),
and the server only moves the slider and the tokens-per-pass chart's mark after it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import gradio as gr

from specviz.view import charts
from specviz.view import summary
from specviz.app.inputs import round_number
from specviz.record.quiz_data import QuizState
from specviz.view.stage import stage_html
from specviz.record.trace import Trace

CHART_FONT = {False: 15, True: 22}  # chart font size in px, by lecture mode
HINT = ("Press Generate, or open a recorded trace, to watch speculative decoding round by round: the p and q "
        "bars, the verdicts and the tokens-per-pass chart appear below.")


STEP_NAMES = ("slider", "per_pass")  # what a step to another round changes on the server's side, by RoundView name


@dataclass
class RoundView:
    """The panels that show a trace. To add a panel: add a field at the end (API clients read outputs by
    position), fill it in `round_view` and `empty_view` (from a pure function in stage.py, strip.py, explanation.py or
    charts.py), and place its component in app/page.py's layout; every event that shows a trace then updates it."""

    slider: Any  # the round slider: which round of how many
    stage: Any  # every round, one shown: strip, p/q cards with verdicts, last token, caches, explanation (HTML)
    per_pass: Any  # tokens per target pass, every round, the one on screen marked (plotly)
    summary: Any  # the run's figures and the baseline comparison (HTML)
    timeline: Any  # where the time went: the target alone against the rounds, on one clock (plotly)

    def values(self) -> list:
        """The fields in order: the outputs list, for a RoundView of components."""
        return [getattr(self, f.name) for f in fields(self)]

    def updates(self, panels: "RoundView") -> dict:
        """These values as updates of the components in `panels`, for a handler that returns a dict."""
        return dict(zip(panels.values(), self.values()))

    def step_outputs(self) -> list:
        """What stepping to another round changes on the server's side; the stage itself steps in the browser."""
        return [getattr(self, name) for name in STEP_NAMES]


def empty_view() -> RoundView:
    """The panels before there is a trace. The charts stay empty (None), not empty figures: the browser loads
    plotly (a 4.6 MB script) only for a plotly value, so the page is interactive without it, and it loads
    while the first round runs. Gradio insists on a slider maximum above its minimum, even one that cannot
    move yet. (An update, not a gr.Slider: the layout calls this inside the page, where a component would be
    placed on it.)"""
    return RoundView(gr.update(minimum=1, maximum=2, value=1, interactive=False), stage_html(None, 1, hint=HINT),
                     None, "", None)


def round_view(trace: Trace | None, number: float | None, lecture: bool = False, quiz: QuizState | None = None,
               latest_only: bool = False) -> RoundView:
    """The panels showing round `number` (1-based, clamped) of `trace`. Calls no model. `latest_only`: the
    stage holds only the last round (the frames of a run in progress)."""
    if trace is None or not trace.rounds:
        return empty_view()
    font, n, i = CHART_FONT[bool(lecture)], len(trace.rounds), _index(trace, number)
    return RoundView(slider=_slider(n, i), stage=stage_html(trace, i + 1, quiz, latest_only),
                     per_pass=charts.tokens_per_pass(trace, i, font), summary=summary.summary_html(trace),
                     timeline=charts.timeline(trace, font))


def _slider(n: int, i: int) -> gr.Slider:
    return gr.Slider(minimum=1, maximum=max(n, 2), value=i + 1, interactive=n > 1)


def show_round(trace, number, lecture) -> list:
    """A handler for stepping: the slider and the tokens-per-pass mark at round `number`, which the browser
    has already put on the stage (stepping.js computes it and sends it here). Calls no model."""
    if trace is None or not trace.rounds:
        return [gr.skip(), gr.skip()]
    i = _index(trace, number)
    return [_slider(len(trace.rounds), i), charts.tokens_per_pass(trace, i, CHART_FONT[bool(lecture)])]


def _index(trace: Trace, number) -> int:
    """The 0-based index of round `number` (1-based, clamped to the trace's rounds)."""
    return min(max(round_number(number), 1), len(trace.rounds)) - 1


# The browser side of stepping (assets/stepping.js defines window.sv*): each returns the round now on the stage,
# which the server's handler then receives as the slider's value.
STEP_JS = {delta: f"(trace, number, lecture) => [trace, window.svStep({delta}), lecture]" for delta in (-1, 1)}
SHOW_JS = "(trace, number, lecture) => [trace, window.svShow(number), lecture]"
# Play under reduced motion (the system's setting) takes one step and stays "Play": the server is sent "Pause".
PLAY_JS = ("(label, trace, number, lecture) => window.svReduced() ? ['Pause', trace, window.svStep(1), lecture] : "
           "[label, trace, window.svPlayFrom(label), lecture]")


@dataclass
class Player:
    """Play/Pause: a timer that steps to the next round on each tick (the browser steps, see STEP_JS),
    stopping at the last."""

    timer: gr.Timer
    button: gr.Button
    panels: RoundView

    def toggle(self, label, trace, number, lecture) -> list:
        """Play <-> Pause. (Play from the last round starts again at round 1: PLAY_JS.)"""
        playing = label != "Pause" and trace is not None and bool(trace.rounds)
        return [*self._state(playing), *show_round(trace, number, lecture)]

    def tick(self, trace, number, lecture) -> list:
        """One step of Play, already taken in the browser: Pause turns back into Play at the last round."""
        last = trace is None or round_number(number) >= len(trace.rounds)
        return [*self._state(playing=not last), *show_round(trace, number, lecture)]

    def outputs(self) -> list:
        return [self.timer, self.button, *self.panels.step_outputs()]

    @staticmethod
    def _state(playing: bool) -> list:
        return [gr.Timer(active=playing), gr.Button("Pause" if playing else "Play")]


def lecture_mode(controls: gr.Accordion, panels: RoundView):
    """A handler for the lecture-mode checkbox: fold the controls away and redraw the charts in large type (the
    stage and the page's type follow a class on <body>, set in the browser)."""
    def switch(on, trace, number) -> dict:
        view = round_view(trace, number, on)
        return {controls: gr.Accordion(open=not on), panels.per_pass: view.per_pass, panels.timeline: view.timeline}
    return switch

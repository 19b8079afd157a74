"""The round view: its panels named once (`RoundView`), and the handlers that show a recorded round.

`RoundView` holds either the panels' components (ui.py's layout builds one) or their values (`round_view`
returns one), so the order of outputs is written in one place, the dataclass, and a handler returns updates by
component: `round_view(trace, 3).updates(panels)`. Everything here is a pure function of a trace and calls no
model: stepping through rounds re-renders the record with charts.py and render.py.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import gradio as gr

from . import charts, kvcache, render
from .inputs import round_number
from .trace import Trace

CHART_FONT = {False: 15, True: 22}  # chart font size in px, by lecture mode
HINT = ("Press Generate, or open a recorded trace, to watch speculative decoding round by round: the p and q "
        "bars, the residual and the tokens-per-pass chart appear below.")


@dataclass
class RoundView:
    """The panels that show one round. To add a panel: add a field at the end (API clients read outputs by
    position), fill it in `round_view` and `empty_view` (from a pure function in render.py or charts.py), and
    place its component in ui.py's layout; every event that shows a round then updates it."""

    slider: Any  # the round slider: which round of how many
    strip: Any  # the text so far, then this round's tokens marked by fate (HTML)
    bars: Any  # p and q at each draft position (plotly)
    decisions: Any  # the verdict at each position, written out (HTML)
    residual: Any  # the residual after a rejection, or p for the bonus (plotly)
    explanation: Any  # what happened, in words (HTML)
    per_pass: Any  # tokens per target pass, every round (plotly)
    summary: Any  # the run's figures and the baseline comparison (HTML)
    cache: Any  # the round's KV caches, draft and target, as rows of cells (HTML)
    timeline: Any  # where the time went: the target alone against the rounds, on one clock (plotly)

    def values(self) -> list:
        """The fields in order: the outputs list, for a RoundView of components."""
        return [getattr(self, f.name) for f in fields(self)]

    def updates(self, panels: "RoundView") -> dict:
        """These values as updates of the components in `panels`, for a handler that returns a dict."""
        return dict(zip(panels.values(), self.values()))


def empty_view() -> RoundView:
    """The panels before there is a trace. The charts stay empty (None), not empty figures: the browser loads
    plotly (a 4.6 MB script) only for a plotly value, so the page is interactive without it, and it loads
    while the first round runs. Gradio insists on a slider maximum above its minimum, even one that cannot
    move yet. (An update, not a gr.Slider: the layout calls this inside the page, where a component would be
    placed on it.)"""
    return RoundView(gr.update(minimum=1, maximum=2, value=1, interactive=False), render.placeholder(HINT), None,
                     "", None, "", None, "", "", None)


def round_view(trace: Trace | None, number: float | None, lecture: bool = False) -> RoundView:
    """The panels showing round `number` (1-based, clamped) of `trace`. Calls no model."""
    if trace is None or not trace.rounds:
        return empty_view()
    font, greedy = CHART_FONT[bool(lecture)], trace.settings.get("temperature") == 0
    n = len(trace.rounds)
    i = min(max(round_number(number), 1), n) - 1
    rnd = trace.rounds[i]
    return RoundView(slider=gr.Slider(minimum=1, maximum=max(n, 2), value=i + 1, interactive=n > 1),
                     strip=render.token_strip(trace, i), bars=charts.pq_bars(rnd, font, greedy),
                     decisions=render.decision_row(rnd, greedy), residual=charts.residual_chart(rnd, font),
                     explanation=render.explanation(trace, i), per_pass=charts.tokens_per_pass(trace, i, font),
                     summary=render.summary_html(trace), cache=kvcache.cache_rows(trace, i),
                     timeline=charts.timeline(trace, font))


def step(delta: int):
    """A handler showing the round `delta` away from the one on screen (clamped to the trace)."""
    def show(trace, number, lecture):
        return round_view(trace, round_number(number) + delta, lecture).values()
    return show


@dataclass
class Player:
    """Play/Pause: a timer that shows the next round on each tick, stopping at the last."""

    timer: gr.Timer
    button: gr.Button
    panels: RoundView

    def toggle(self, label, trace, number, lecture) -> dict:
        """Play <-> Pause. Play from the last round starts again at round 1."""
        if label == "Pause" or trace is None or not trace.rounds:
            return self._state(playing=False)
        at_end = round_number(number) >= len(trace.rounds)
        restart = round_view(trace, 1, lecture).updates(self.panels) if at_end else {}
        return {**self._state(playing=True), **restart}

    def tick(self, trace, number, lecture) -> dict:
        """One step of Play: the next round, and Pause turns back into Play at the last."""
        if trace is None or round_number(number) >= len(trace.rounds):
            return self._state(playing=False)
        last = round_number(number) + 1 >= len(trace.rounds)
        return {**self._state(playing=not last), **round_view(trace, round_number(number) + 1, lecture).updates(self.panels)}

    def _state(self, playing: bool) -> dict:
        return {self.timer: gr.Timer(active=playing), self.button: gr.Button("Pause" if playing else "Play")}


def lecture_mode(controls: gr.Accordion, panels: RoundView):
    """A handler for the lecture-mode checkbox: fold the controls away and redraw the charts in large type (the
    page's CSS follows a class on <body>, set in the browser)."""
    def switch(on, trace, number) -> dict:
        return {controls: gr.Accordion(open=not on), **round_view(trace, number, on).updates(panels)}
    return switch

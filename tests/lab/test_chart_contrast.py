"""The Rounds tab's, the Lab's and the Costs tab's figures against WCAG 2.2 AA on their white page (issue 24): every mark a reader must
tell apart from the page (a bar's edge, or its fill where it has none; a line; a marker's edge, or its fill) at 3:1
(1.4.11), and the figure's own text at 4.5:1 (1.4.3). axe-core cannot see inside a chart's SVG; this reads the
figures themselves. (Fills under an edge, and the Costs chart's shaded spread band, are not marks of their own.)"""

from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest

from specviz.lab import charts as lab_charts
from specviz.lab import explorer, joint
from specviz.lab import playground as lab
from specviz.lab.compare import TARGET_ONLY, CompareRow
from specviz.measure import cost_charts, pass_timing, measured
from specviz.view import charts as round_charts
from specviz.view.style import GRAPHIC_CONTRAST, TEXT_CONTRAST, contrast
from tests.helpers import make_trace

NAMED = {"white": "#FFFFFF", "black": "#000000"}


def _hex(color: str) -> str:
    """'#888' -> '#888888'; 'white' -> '#FFFFFF'."""
    color = NAMED.get(color, color)
    return "#" + "".join(2 * c for c in color[1:]) if len(color) == 4 else color


def marks(fig) -> list[tuple[str, str]]:
    """(what, colour) of each mark of a figure that must stand out from the page."""
    found = []
    for t in fig.data:
        what, mode = f"{t.type} {t.name!r}", getattr(t, "mode", None) or ""
        if t.type == "bar":
            found.append((what, t.marker.line.color if t.marker.line.width else t.marker.color))
            continue
        if "lines" in mode and t.line.width != 0:
            found.append((what + " line", t.line.color))
        if "markers" in mode:
            found.append((what + " marker", t.marker.line.color if t.marker.line.width else t.marker.color))
    found += [(f"shape {s.type}", s.line.color) for s in fig.layout.shapes]
    return [(what, color) for what, color in found if color is not None]  # None: the line's colour, already listed


def texts(fig) -> list[tuple[str, str]]:
    found = [("font", fig.layout.font.color)] + [(f"annotation {a.text!r}", a.font.color) for a in fig.layout.annotations]
    return [(what, color) for what, color in found if color is not None]


def figures():
    """Every kind of figure the two tabs draw, with every optional part (a measured point, a crossover) present."""
    pg, ex, point = lab.playground(lab.SEED_EXAMPLE), explorer.explore(0.7, 4, 0.05), measured.measured_point(make_trace())
    rows = [CompareRow(TARGET_ONLY, None, None, 1.0, 50.0, 1.0, 16, 0.3)] + [
        CompareRow(drafter, k, 0.7, 2.0 + k / 10, 80.0, 1.6, 16, 0.2, layers) for k in (2, 4)
        for drafter, layers in (("model", None), ("lookup", None), ("layers", 4), ("layers", 8))]
    tokens = list(range(1, 18)) + list(pass_timing.WIDE)
    profile = pass_timing.CostProfile("cpu", "float32", "d", "t", 16, tokens, [1 + 0.2 * (n - 1) for n in tokens],
                                list(pass_timing.BATCHES), [1, 1.2, 1.6, 2.4, 4.0], [0.1, 0.12, 0.16, 0.24, 0.4])
    trace = make_trace()
    return {"tokens per pass": round_charts.tokens_per_pass(trace, selected=1), "timeline": round_charts.timeline(trace),
            "playground": lab_charts.playground_figure(pg),
            "histogram": lab_charts.histogram_figure(lab.SEED_EXAMPLE, lab.monte_carlo(lab.SEED_EXAMPLE, 1_000)),
            "two positions": lab_charts.joint_figure(joint.two_positions(lab.SEED_EXAMPLE, 1_000)),
            "explorer": lab_charts.explorer_figure(ex, point), "rounds": lab_charts.rounds_figure(ex, point),
            "compare": lab_charts.compare_figure(rows),
            "pass cost": cost_charts.ratio_figure(profile), "batch": cost_charts.batch_figure(profile, 0.8, 4)}


@pytest.mark.parametrize("name", list(figures()))
def test_every_mark_and_text_stands_out_from_the_page(name):
    fig = figures()[name]
    assert marks(fig), "a figure with nothing to check"
    weak = [(what, color, round(contrast(_hex(color), "#FFFFFF"), 2)) for what, color in marks(fig)
            if contrast(_hex(color), "#FFFFFF") < GRAPHIC_CONTRAST]
    faint = [(what, color) for what, color in texts(fig) if contrast(_hex(color), "#FFFFFF") < TEXT_CONTRAST]
    assert weak == [] and faint == []


def _sent(fig) -> dict:
    """What the page's plotly.js is sent, less what reads the same to it: an empty template, empty lists."""
    def strip(v):
        if isinstance(v, dict):
            kept = {k: strip(x) for k, x in v.items() if k != "template"}  # each value stripped once
            return {k: x for k, x in kept.items() if x not in ([], {})}
        return [strip(x) for x in v] if isinstance(v, list) else v
    return strip(json.loads(fig.to_json()))


def every_figure():
    """figures(), and the placeholder a panel shows before any run (it has no marks, so the contrast test skips it)."""
    return {**figures(), "empty": round_charts.empty_figure("no run yet")}


@pytest.mark.parametrize("name", list(every_figure()))
def test_every_figure_is_what_plotlys_check_would_make_of_it(name):
    """Figures skip plotly's check of each property (view/charts.plain_figure: it was most of a chart's time): built
    again with the check on, each sends the same, so no property is misspelt or in a form only the check expands
    (`font_size` for `font: {size}`)."""
    fig = every_figure()[name]
    assert _sent(fig) == _sent(go.Figure(fig.to_dict()))

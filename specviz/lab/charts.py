"""The lab's figures: records from `lab/playground.py` in, plotly Figures out (no gradio).

The colours are the page's one language (style.FATES, P_COLOR, Q_COLOR), each with its second cue: q bars
hatched "/", p an outline in p's colour around what fills it, accepted mass solid ✓, residual mass hatched
"x" ◆, the bonus dotted ★. A colour under 3:1 on white (WCAG 1.4.11: q's light blue, the bonus's orange) is
edged with its darker `edge` on a bar, and drawn in it as a line. Like charts.py, figures are built from plain dicts in one `plain_figure(...)` call
(plotly's update_* helpers and make_subplots cost many times more a chart, felt while dragging a slider:
docs/benchmarks.md, "Timings behind choices in the code").
"""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.drafters import CHAINS
from specviz.view.charts import FONT_SIZE, base_layout, label, plain_figure
from specviz.lab.compare import CompareRow
from specviz.lab.explorer import Explorer
from specviz.measure.measured import MeasuredPoint
from specviz.lab.joint import JointMonteCarlo
from specviz.lab.playground import SAMPLER_LABELS, MonteCarlo, Playground, ToyPair
from specviz.view.style import FATES, GRID, INK, P_COLOR, Q_COLOR, edge, hatch, speed
from specviz.record.trace import ACCEPTED, BONUS, REPLACEMENT

ACCEPTED_NAME = f"{FATES[ACCEPTED].icon} accepted"
RESIDUAL_NAME = f"{FATES[REPLACEMENT].icon} residual"
MEASURED_NAME = "measured (trace)"  # markers carry their shape in the legend already: no icon in the name


def _figure(data: list[dict], layout: dict, title: str, font_size: int, plot_px: int = 320,
            foot_lines: int = 3, head_lines: int = 1) -> go.Figure:
    """A figure with a plot area of plot_px, head_lines of titles above it and foot_lines lines of text (tick
    labels, axis title, legend) below it."""
    head_px, foot_px = int(1.6 * font_size * head_lines) + 40, int(1.5 * font_size * foot_lines) + 24
    base = dict(base_layout(font_size, legend_size=font_size - 1), height=plot_px + head_px + foot_px,
                barmode="group", bargap=0.25, margin=dict(l=80, r=24, t=head_px, b=foot_px),
                title=dict(text=title, x=0, xanchor="left", xref="paper", y=1, yanchor="top", yref="container",
                           pad=dict(t=12, l=4), font=dict(size=font_size + 3)))
    return plain_figure(data, {**base, **layout})


def _prob_axis(top: float, title: str) -> dict:
    return dict(title=dict(text=title), range=[0, 1.15 * top], gridcolor=GRID, zeroline=False)


def _p_outline(x: list[str], p: list[float], text: list[str] | None = None) -> dict:
    """p(x) as an empty bar outlined in p's colour, drawn over the stack that should fill it."""
    return dict(type="bar", x=x, y=p, offsetgroup="p", name="▭ p(x) target", text=text, textposition="outside",
                cliponaxis=False, marker=dict(color="rgba(0,0,0,0)", line=dict(color=P_COLOR, width=4)),
                hovertemplate="%{x}: p = %{y:.3f}<extra></extra>")


def _stacked(x: list[str], bottom: list[float], top: list[float], names: tuple[str, str], what: str) -> list[dict]:
    """Accepted mass (solid) with residual mass (hatched) on top of it, in the p bar's slot."""
    return [dict(type="bar", x=x, y=bottom, offsetgroup="p", name=names[0], marker=dict(color=FATES[ACCEPTED].color),
                 hovertemplate=f"%{{x}}: %{{y:.4f}} accepted {what}<extra></extra>"),
            dict(type="bar", x=x, y=top, base=bottom, offsetgroup="p", name=names[1],
                 marker=dict(color=FATES[REPLACEMENT].color, pattern=hatch("x")),
                 hovertemplate=f"%{{x}}: %{{y:.4f}} from the residual {what}<extra></extra>")]


def playground_figure(pg: Playground, font_size: int = FONT_SIZE) -> go.Figure:
    """q(x) beside p(x) split into accepted proposals (✓) and residual (◆); the two parts sum to p(x)."""
    x = [f"{label(r.token)}<br>keep {r.accept_prob:.3f}" for r in pg.rows]
    accepted = [r.from_accepted for r in pg.rows]
    data = [dict(type="bar", x=x, y=[r.q for r in pg.rows], offsetgroup="q", name="q(x) draft",
                 marker=dict(color=Q_COLOR, pattern=hatch("/"), line=dict(color=edge(Q_COLOR), width=1.5)),
                 hovertemplate="%{x}: q = %{y:.3f}<extra></extra>"),
            *_stacked(x, accepted, [r.from_residual for r in pg.rows],
                      (f"{ACCEPTED_NAME}: q·min(1, p/q)", f"{RESIDUAL_NAME}: (1 − α)·norm(max(0, p − q))"), "mass"),
            _p_outline(x, [r.p for r in pg.rows], [f"p {r.p:.2f}" for r in pg.rows])]
    top = max(max(r.p, r.q) for r in pg.rows)
    return _figure(data, dict(yaxis=_prob_axis(top, "probability")),
                   f"One draft position · α = Σ min(p, q) = {pg.alpha:.3f}", font_size, foot_lines=3)


def histogram_figure(pair: ToyPair, mc: MonteCarlo | None, font_size: int = FONT_SIZE) -> go.Figure:
    """The histogram of N rounds, stacked by how each token arrived, inside p's outline."""
    x = [label(t) for t in pair.tokens]
    data, title, top = [_p_outline(x, list(pair.p))], "Press “Sample N times”", max(pair.p)
    if mc is not None:
        accepted = [a / mc.n for a in mc.accepted_counts]
        data = _stacked(x, accepted, [r / mc.n for r in mc.replaced_counts],
                        (f"{ACCEPTED_NAME} drafts", f"{FATES[REPLACEMENT].icon} after a rejection"), "rounds") + data
        title = (f"{'✓' if mc.faithful else '✗'} {SAMPLER_LABELS[mc.sampler]} · N = {mc.n:,} · "
                 f"TV(histogram, p) = {mc.tv:.3f}")
        top = max(top, *mc.frequencies)
    return _figure(data, dict(yaxis=_prob_axis(top, "share of rounds")), title, font_size, foot_lines=2)


def joint_figure(mc: JointMonteCarlo, font_size: int = FONT_SIZE, top_pairs: int = 10) -> go.Figure:
    """The most likely first-two-token pairs under the target: the histogram of pairs inside p(a, b)'s outline."""
    cells = [(mc.target[a][b], a, b) for a in range(len(mc.tokens)) for b in range(len(mc.tokens))]
    cells = sorted(cells, reverse=True)[:top_pairs]
    x = [f"{label(mc.tokens[a])}<br>{label(mc.tokens[b])}" for _, a, b in cells]
    seen = [mc.counts[a][b] / mc.n for _, a, b in cells]
    data = [dict(type="bar", x=x, y=seen, offsetgroup="p", name="share of runs",
                 marker=dict(color=FATES[ACCEPTED].color), hovertemplate="%{x}: %{y:.4f}<extra></extra>"),
            dict(_p_outline(x, [t for t, _, _ in cells]), name="▭ p(a)·p(b | a) target")]
    top = max(max(seen), cells[0][0])
    title = f"{'✓' if mc.faithful else '✗'} first two tokens · N = {mc.n:,} · TV = {mc.tv:.3f}"
    return _figure(data, dict(yaxis=_prob_axis(top, "share of runs")), title, font_size, foot_lines=3)


def _marker(x: float, y: float, name: str, axes: str, symbol: str, size: int, text: str = "",
            color: str = "white", show: bool = True, where: str = "middle right") -> dict:
    return dict(type="scatter", x=[x], y=[y], mode="markers+text" if text else "markers", name=name,
                showlegend=show, text=[text], textposition=where, xaxis="x" + axes, yaxis="y" + axes,
                marker=dict(symbol=symbol, size=size, color=color, line=dict(color=INK, width=2.5)),
                hovertemplate=f"{name}: K = %{{x}}, %{{y:.2f}}<extra></extra>")


def explorer_figure(ex: Explorer, measured: MeasuredPoint | None = None, font_size: int = FONT_SIZE) -> go.Figure:
    """Expected tokens per pass (left) and speedup (right) against K: the chosen K ringed, the best K marked ▲,
    break-even dashed, and the trace's measured point (■) where there is one."""
    line = dict(color=INK, width=3)
    data = [
        dict(type="scatter", x=ex.ks, y=ex.expected, mode="lines+markers", line=line, name="theory",
             hovertemplate="K = %{x}: E = %{y:.2f}<extra></extra>"),
        dict(type="scatter", x=ex.ks, y=ex.speedups, mode="lines+markers", line=line, showlegend=False,
             xaxis="x2", yaxis="y2", hovertemplate="K = %{x}: %{y:.2f}×<extra></extra>"),
        _marker(ex.k, ex.expected_at_k, f"your K = {ex.k}", "", "circle", 18),
        _marker(ex.k, ex.speedup_at_k, f"your K = {ex.k}", "2", "circle", 18, show=False),
        _marker(ex.best_k, ex.best_speedup, "best K", "2", "triangle-up", 22, f"best K = {ex.best_k}", P_COLOR,
                where="top center"),
    ]
    tops = [max(ex.expected), max(ex.speedups + [1])]
    if measured is not None:
        data.append(_marker(measured.k, measured.tokens_per_pass, MEASURED_NAME, "", "square", 16,
                            f"{measured.tokens_per_pass:.2f}", INK))
        tops[0] = max(tops[0], measured.tokens_per_pass)
        if measured.speedup is not None:
            data.append(_marker(measured.k, measured.speedup, MEASURED_NAME, "2", "square", 16,
                                f"{measured.speedup:.2f}×", INK, show=False))
            tops[1] = max(tops[1], measured.speedup)
    k_axis = dict(title=dict(text="K (draft tokens per round)"), dtick=2 if len(ex.ks) > 10 else 1, gridcolor=GRID)
    # each head in two lines: in one, the two ran into each other where the presenter view enlarges the type
    heads = [("Tokens per target pass<br>E = (1 − α<sup>K+1</sup>) / (1 − α)", 0.0),
             ("Speedup<br>E / (K·c + v)", 0.55)]
    layout = dict(
        xaxis=dict(k_axis, domain=[0, 0.45]), xaxis2=dict(k_axis, domain=[0.55, 1], anchor="y2"),
        yaxis=dict(title=dict(text="tokens"), range=[0, 1.2 * tops[0]], gridcolor=GRID, zeroline=False),
        yaxis2=dict(title=dict(text="× target-only"), range=[0, 1.25 * tops[1]], gridcolor=GRID, zeroline=False,
                    anchor="x2"),
        shapes=[dict(type="line", xref="x2 domain", x0=0, x1=1, yref="y2", y0=1, y1=1,
                     line=dict(color=INK, width=1.5, dash="dash"))],
        annotations=[dict(text=text, x=x0, xref="paper", xanchor="left", y=1.02, yref="paper", yanchor="bottom",
                          showarrow=False, font=dict(size=font_size)) for text, x0 in heads]
        + [dict(text="1× (no gain)", x=1, xref="x2 domain", xanchor="right", y=1, yref="y2", yanchor="top",
                showarrow=False, font=dict(size=font_size - 2))],
    )
    title = f"α = {ex.alpha:.2f}, c = {ex.c:.2f}, v = {ex.v:.2f}: speedup {ex.speedup_at_k:.2f}× at K = {ex.k}"
    return _figure(data, layout, title, font_size, plot_px=340, foot_lines=4, head_lines=3)


def rounds_figure(ex: Explorer, measured: MeasuredPoint | None = None, font_size: int = FONT_SIZE) -> go.Figure:
    """P(a round yields 1 … K+1 tokens): j accepted then a replacement (◆), or all K plus the bonus (★)."""
    sizes = list(range(1, ex.k + 2))
    bonus = FATES[BONUS]
    data = [
        dict(type="bar", x=sizes[:-1], y=ex.round_probs[:-1],
             name=f"{FATES[REPLACEMENT].icon} j accepted, then a replacement: (1 − α)α<sup>j</sup>",
             marker=dict(color=FATES[REPLACEMENT].color, pattern=hatch("x")),
             hovertemplate="%{x} tokens: %{y:.3f}<extra></extra>"),
        dict(type="bar", x=sizes[-1:], y=ex.round_probs[-1:],
             name=f"{bonus.icon} all K accepted + bonus: α<sup>K</sup>",
             marker=dict(color=bonus.color, pattern=hatch("."), line=dict(color=edge(bonus.color), width=1.5)),
             hovertemplate="%{x} tokens: %{y:.3f}<extra></extra>"),
    ]
    top = max(ex.round_probs)
    if measured is not None:
        data.append(dict(type="scatter", x=list(range(1, measured.k + 2)), y=measured.round_probs, mode="markers",
                         name=f"measured (trace, K = {measured.k}, {measured.n_rounds} rounds)",
                         marker=dict(symbol="square", size=16, color=INK),
                         hovertemplate="%{x} tokens: %{y:.3f} of rounds<extra></extra>"))
        top = max(top, *measured.round_probs)
    layout = dict(
        xaxis=dict(title=dict(text="tokens committed by one target pass"), dtick=1, gridcolor=GRID),
        yaxis=_prob_axis(top, "probability"),
        shapes=[dict(type="line", x0=ex.expected_at_k, x1=ex.expected_at_k, yref="paper", y0=0, y1=1,
                     line=dict(color=INK, width=2, dash="dash"))],
        annotations=[dict(text=f"mean E = {ex.expected_at_k:.2f}", x=ex.expected_at_k, xanchor="left", y=1,
                          yref="paper", yanchor="bottom", showarrow=False)],
    )
    return _figure(data, layout, f"Tokens per round at α = {ex.alpha:.2f}, K = {ex.k}", font_size, plot_px=280,
                   foot_lines=3)


# --- drafters compared ----------------------------------------------------------------------------------------

# One line per drafter, each with a colour, a marker and a dash (the marker and dash are the drafter's own), so they
# stay apart on a washed-out projector; self-speculation draws a line per N, its markers told apart by shape.
LINE_COLORS = tuple(map(edge, (Q_COLOR, INK, FATES[BONUS].color)))  # the chain drafters', in the registry's order
LAYER_SYMBOLS = ("diamond", "triangle-up", "x", "star", "hexagon")
SIDE_STEP = 0.12  # K units between drafters' markers at the same K


def _lines(runs: list[CompareRow]) -> list[tuple[str, int | None]]:
    """The (drafter, N) pairs with runs, in the registry's order, self-speculation's N ascending."""
    present = {(r.drafter, r.draft_layers) for r in runs}
    return sorted(present, key=lambda line: (list(CHAINS).index(line[0]), line[1] or 0))


def _style(drafter: str) -> dict:
    spec = CHAINS[drafter]
    return dict(color=LINE_COLORS[list(CHAINS).index(drafter) % len(LINE_COLORS)], symbol=spec.chart_symbol,
                dash=spec.chart_dash)


def _drafter_line(rows: list[CompareRow], line: tuple[str, int | None], field: str, axes: str, show: bool,
                  unit: str, offset: float = 0.0) -> dict:
    """One drafter's line; `offset` moves its markers sideways off K (the hover still says K), so drafters measured
    at the same K sit side by side instead of on top of one another."""
    drafter, n = line
    style = _style(drafter)
    mine = [r for r in rows if (r.drafter, r.draft_layers) == line]
    name = mine[0].label
    symbol = LAYER_SYMBOLS[sorted({r.draft_layers for r in rows if r.draft_layers}).index(n) % len(LAYER_SYMBOLS)] \
        if n else style["symbol"]
    return dict(type="scatter", x=[r.k + offset for r in mine], customdata=[r.k for r in mine],
                y=[getattr(r, field) for r in mine], mode="lines+markers",
                name=name, legendgroup=name, showlegend=show, xaxis="x" + axes, yaxis="y" + axes,
                line=dict(color=style["color"], width=4, dash=style["dash"]),
                marker=dict(symbol=symbol, size=14, color=style["color"], line=dict(color=INK, width=1.5)),
                hovertemplate=f"{label(name)}, K = %{{customdata}}: %{{y:.2f}}{unit}<extra></extra>")


def compare_figure(rows: list[CompareRow], font_size: int = FONT_SIZE) -> go.Figure:
    """Measured speedup (left) and tokens per target pass (right) against K, one line per drafter, with the
    target alone at 1 on both (dashed). Rows may be partial: the lines grow as runs finish."""
    runs = [r for r in rows if r.k is not None]
    lines = _lines(runs)
    offsets = [SIDE_STEP * (i - (len(lines) - 1) / 2) for i in range(len(lines))]
    data = [_drafter_line(runs, line, "speedup", "", True, "×", dx) for line, dx in zip(lines, offsets)]
    data += [_drafter_line(runs, line, "tokens_per_pass", "2", False, " tokens", dx) for line, dx in zip(lines, offsets)]
    ks = sorted({r.k for r in runs}) or [1]
    k_axis = dict(title=dict(text="K (draft tokens per round)"), tickmode="array", tickvals=ks, gridcolor=GRID,
                  range=[min(ks) - 0.8, max(ks) + 0.8])  # one K alone sits in the middle
    tops = [max([r.speedup for r in runs] + [1.0]), max([r.tokens_per_pass for r in runs] + [1.0])]
    one = dict(type="line", x0=0, x1=1, y0=1, y1=1, line=dict(color="#888", width=2, dash="dot"))
    heads = [("Speedup over the target alone (measured)", 0.0), ("Tokens per target pass", 0.55)]
    layout = dict(
        xaxis=dict(k_axis, domain=[0, 0.45]), xaxis2=dict(k_axis, domain=[0.55, 1], anchor="y2"),
        yaxis=dict(title=dict(text="× target alone"), range=[0, 1.2 * tops[0]], gridcolor=GRID, zeroline=False),
        yaxis2=dict(title=dict(text="tokens"), range=[0, 1.2 * tops[1]], gridcolor=GRID, zeroline=False,
                    anchor="x2"),
        shapes=[dict(one, xref="x domain", yref="y"), dict(one, xref="x2 domain", yref="y2")],
        annotations=[dict(text=text, x=x0, xref="paper", xanchor="left", y=1.02, yref="paper", yanchor="bottom",
                          showarrow=False, font=dict(size=font_size)) for text, x0 in heads]
        + [dict(text="target alone: 1×", x=1, xref="x domain", xanchor="right", y=1, yref="y", yanchor="top",
                showarrow=False, font=dict(size=font_size - 2))],
    )
    base = next((r for r in rows if r.k is None), None)
    title = ("Drafters compared" if base is None else
             f"Drafters compared · the target alone: {speed(base.tokens_per_s)} tokens/s in this run")
    return _figure(data, layout, title, font_size, plot_px=320, foot_lines=4, head_lines=2)

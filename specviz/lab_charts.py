"""The lab's figures: records from `lab.py` in, plotly Figures out (no gradio).

Colours follow the page's one language (Okabe-Ito, colour-blind safe), each backed by a second cue for washed-out
projectors: q is orange and hatched, p is a thick blue outline, accepted mass green and solid (✓), residual
mass purple and cross-hatched (◆), the bonus sky blue and dotted (★).
"""

from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .lab import Explorer, MeasuredPoint, MonteCarlo, Playground, SAMPLERS, ToyPair

P_COLOR = "#0072B2"  # target p: blue outline
Q_COLOR = "#E69F00"  # draft q: orange, hatched "/"
ACCEPTED_COLOR = "#009E73"  # accepted: bluish green, solid, ✓
REPLACEMENT_COLOR = "#CC79A7"  # replacement from the residual: reddish purple, hatched "x", ◆
BONUS_COLOR = "#56B4E9"  # bonus: sky blue, dotted, ★
INK = "#222222"  # theory curves and measured points

FONT = dict(family="Inter, Arial, sans-serif", size=18, color=INK)  # readable from the back of a room


def token_label(text: str) -> str:
    """A token as plotly text: leading spaces as '·', newlines as '⏎', HTML escaped. ' Paris' -> '·Paris'."""
    stripped = text.lstrip(" ")
    shown = "·" * (len(text) - len(stripped)) + stripped.replace("\n", "⏎")
    return html.escape(shown)


def _layout(fig: go.Figure, title: str, height: int = 460) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0.01, font=dict(size=22)), font=FONT, height=height, template="plotly_white",
        margin=dict(l=70, r=20, t=110, b=70), barmode="group", bargap=0.25,
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0, font=dict(size=16)),
    )
    return fig


def _p_outline(labels: list[str], p: list[float], text: list[str] | None = None) -> go.Bar:
    """p(x) drawn as an empty bar with a thick blue outline, over the stack that should fill it."""
    return go.Bar(x=labels, y=p, offsetgroup="p", name="▭ p(x) target", marker=dict(
        color="rgba(0,0,0,0)", line=dict(color=P_COLOR, width=4)), text=text, textposition="outside",
        hovertemplate="%{x}: p = %{y:.3f}<extra></extra>", cliponaxis=False)


def playground_figure(pg: Playground) -> go.Figure:
    """q(x) beside p(x) split into accepted proposals (✓) and residual (◆); the two parts sum to p(x)."""
    labels = [f"{token_label(r.token)}<br><sub>keep {r.accept_prob:.3f}</sub>" for r in pg.rows]
    accepted = [r.from_accepted for r in pg.rows]
    fig = go.Figure([
        go.Bar(x=labels, y=[r.q for r in pg.rows], offsetgroup="q", name="q(x) draft",
               marker=dict(color=Q_COLOR, pattern=dict(shape="/", fgcolor="white")),
               hovertemplate="%{x}: q = %{y:.3f}<extra></extra>"),
        go.Bar(x=labels, y=accepted, offsetgroup="p", name="✓ accepted: q·min(1, p/q)",
               marker=dict(color=ACCEPTED_COLOR), hovertemplate="%{x}: accepted part %{y:.3f}<extra></extra>"),
        go.Bar(x=labels, y=[r.from_residual for r in pg.rows], base=accepted, offsetgroup="p",
               name="◆ residual: (1 − α)·norm(max(0, p − q))",
               marker=dict(color=REPLACEMENT_COLOR, pattern=dict(shape="x", fgcolor="white")),
               hovertemplate="%{x}: residual part %{y:.3f}<extra></extra>"),
        _p_outline(labels, [r.p for r in pg.rows], [f"p {r.p:.2f}" for r in pg.rows]),
    ])
    _layout(fig, f"One draft position · α = Σ min(p, q) = {pg.alpha:.3f}")
    fig.update_yaxes(title="probability", range=[0, 1.12 * max(max(r.p, r.q) for r in pg.rows)])
    return fig


def histogram_figure(pair: ToyPair, mc: MonteCarlo | None) -> go.Figure:
    """The empirical histogram of N rounds, stacked by how each token arrived, inside p's outline."""
    labels = [token_label(t) for t in pair.tokens]
    bars = [_p_outline(labels, list(pair.p))]
    if mc is None:
        title = "Press “Sample N times”"
    else:
        accepted = [a / mc.n for a in mc.accepted_counts]
        bars = [
            go.Bar(x=labels, y=accepted, offsetgroup="p", name="✓ accepted drafts", marker=dict(color=ACCEPTED_COLOR),
                   hovertemplate="%{x}: %{y:.4f} accepted<extra></extra>"),
            go.Bar(x=labels, y=[r / mc.n for r in mc.replaced_counts], base=accepted, offsetgroup="p",
                   name="◆ after a rejection", marker=dict(color=REPLACEMENT_COLOR, pattern=dict(shape="x",
                                                                                               fgcolor="white")),
                   hovertemplate="%{x}: %{y:.4f} after a rejection<extra></extra>"),
            *bars,
        ]
        verdict = "✓" if mc.exact_tv == 0 else "✗"
        title = f"{verdict} {SAMPLERS[mc.sampler][0]} · N = {mc.n:,} · TV(histogram, p) = {mc.tv:.3f}"
    fig = _layout(go.Figure(bars), title)
    top = max(list(pair.p) + (mc.frequencies if mc else []))
    fig.update_yaxes(title="share of rounds", range=[0, 1.12 * top])
    return fig


def _k_marker(ex: Explorer, y: float, row: int, col: int, fig: go.Figure, name: str, show: bool) -> None:
    fig.add_trace(go.Scatter(x=[ex.k], y=[y], mode="markers", name=name, showlegend=show,
                             marker=dict(size=18, color="white", line=dict(color=INK, width=3)),
                             hovertemplate=f"K = {ex.k}: %{{y:.2f}}<extra></extra>"), row=row, col=col)


def _measured_marker(fig, x, y, label, row, col, show) -> None:
    fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers+text", name="■ measured (trace)", showlegend=show,
                             text=[label], textposition="middle right", textfont=dict(size=17),
                             marker=dict(symbol="square", size=16, color=INK),
                             hovertemplate=f"measured at K = {x}: %{{y:.2f}}<extra></extra>"), row=row, col=col)


def explorer_figure(ex: Explorer, measured: MeasuredPoint | None = None) -> go.Figure:
    """Expected tokens per pass and speedup against K, the chosen K ringed, the best K starred, and the
    trace's measured point (■) where there is one."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(
        "Tokens per target pass E = (1 − α<sup>K+1</sup>) / (1 − α)", "Speedup E / (K·c + 1)"))
    line = dict(color=INK, width=3)
    fig.add_trace(go.Scatter(x=ex.ks, y=ex.expected, mode="lines+markers", line=line, name="theory",
                             hovertemplate="K = %{x}: E = %{y:.2f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=ex.ks, y=ex.speedups, mode="lines+markers", line=line, showlegend=False,
                             hovertemplate="K = %{x}: %{y:.2f}×<extra></extra>"), row=1, col=2)
    _k_marker(ex, ex.expected_at_k, 1, 1, fig, f"○ your K = {ex.k}", True)
    _k_marker(ex, ex.speedup_at_k, 1, 2, fig, "", False)
    fig.add_trace(go.Scatter(x=[ex.best_k], y=[ex.best_speedup], mode="markers+text", name="★ best K",
                             text=[f"best K = {ex.best_k}"], textposition="top center",
                             marker=dict(symbol="star", size=24, color=BONUS_COLOR, line=dict(color=INK, width=2)),
                             hovertemplate="best K = %{x}: %{y:.2f}×<extra></extra>"), row=1, col=2)
    fig.add_hline(y=1, line=dict(color=INK, width=1, dash="dash"), row=1, col=2,
                  annotation_text="1× (no gain)", annotation_position="bottom right")
    if measured is not None:
        _measured_marker(fig, measured.k, measured.tokens_per_pass, f"{measured.tokens_per_pass:.2f}", 1, 1, True)
        if measured.speedup is not None:
            _measured_marker(fig, measured.k, measured.speedup, f"{measured.speedup:.2f}×", 1, 2, False)
    _layout(fig, f"α = {ex.alpha:.2f}, c = {ex.c:.2f}: speedup {ex.speedup_at_k:.2f}× at K = {ex.k}", height=480)
    fig.update_xaxes(title="K (draft tokens per round)", dtick=2 if len(ex.ks) > 10 else 1)
    fig.update_yaxes(title="tokens", row=1, col=1)
    fig.update_yaxes(title="× target-only", rangemode="tozero", row=1, col=2)
    fig.update_annotations(font=dict(size=18))
    return fig


def rounds_figure(ex: Explorer, measured: MeasuredPoint | None = None) -> go.Figure:
    """P(a round yields 1 … K+1 tokens): j accepted then a replacement (◆), or all K plus the bonus (★)."""
    sizes = list(range(1, ex.k + 2))
    fig = go.Figure([
        go.Bar(x=sizes[:-1], y=ex.round_probs[:-1], name="◆ j accepted, then a replacement: (1 − α)α<sup>j</sup>",
               marker=dict(color=REPLACEMENT_COLOR, pattern=dict(shape="x", fgcolor="white")),
               hovertemplate="%{x} tokens: %{y:.3f}<extra></extra>"),
        go.Bar(x=sizes[-1:], y=ex.round_probs[-1:], name="★ all K accepted + bonus: α<sup>K</sup>",
               marker=dict(color=BONUS_COLOR, pattern=dict(shape=".", fgcolor=INK)),
               hovertemplate="%{x} tokens: %{y:.3f}<extra></extra>"),
    ])
    if measured is not None:
        fig.add_trace(go.Scatter(x=list(range(1, measured.k + 2)), y=measured.round_probs, mode="markers",
                                 name=f"■ measured (trace, K = {measured.k}, {measured.n_rounds} rounds)",
                                 marker=dict(symbol="square", size=16, color=INK),
                                 hovertemplate="%{x} tokens: %{y:.3f} of rounds<extra></extra>"))
    fig.add_vline(x=ex.expected_at_k, line=dict(color=INK, width=2, dash="dash"),
                  annotation_text=f"mean E = {ex.expected_at_k:.2f}", annotation_position="top right",
                  annotation_font=dict(size=17))
    _layout(fig, f"Tokens per round at α = {ex.alpha:.2f}, K = {ex.k}", height=420)
    top = max(ex.round_probs + (measured.round_probs if measured else []))
    fig.update_xaxes(title="tokens committed by one target pass", dtick=1)
    fig.update_yaxes(title="probability", range=[0, 1.15 * top])
    return fig

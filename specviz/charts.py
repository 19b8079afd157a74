"""Trace records -> plotly Figures: p and q per draft position, the residual (or bonus), tokens per pass.

Pure functions (no gradio, no models): a figure is a function of a Round or a Trace and a font size. Colours
and icons come from style.py's colour language. Token text is shown as the tokenizer produced it (`·` for a
space, `⏎` for a newline) and escaped, because plotly reads a few HTML tags inside text.

Figures are built from plain dicts in one `go.Figure(...)` call: plotly's `update_*` helpers, `make_subplots`
and named templates cost ~100 ms per chart, too slow for stepping with ← →; this way a chart takes ~5 ms.
"""

from __future__ import annotations

from html import escape
from itertools import accumulate

import plotly.graph_objects as go

from .style import FATES, FONT, GRID, INK, P_COLOR, Q_COLOR, hatch, num, show, verdict_text
from .theory import expected_tokens_per_pass
from .trace import ACCEPTED, BONUS, DISCARDED, REPLACEMENT, DraftPosition, Round, TokenProb, Trace

TOP_BARS = 6  # candidate tokens drawn per position: enough to see the shape, few enough to read
BAR_PX = 26  # height of one token's group of bars
MAX_TICK = 14  # longest token label on an axis, in characters


def label(text: str) -> str:
    """Token text for a plotly label: whitespace visible, markup escaped. ' <b>' -> '·&lt;b&gt;'."""
    return escape(show(text), quote=False)


def _figure(data: list[dict], layout: dict, font_size: int) -> go.Figure:
    base = dict(template={}, font=dict(size=font_size, color=INK, family=FONT),
                paper_bgcolor="white", plot_bgcolor="white", hoverlabel=dict(font_size=font_size),
                legend=dict(orientation="h", x=0, xanchor="left", yref="container", y=0, yanchor="bottom",
                            font=dict(size=font_size)),  # along the bottom, clear of titles
                barmode="group", bargap=0.22, bargroupgap=0.05)
    return go.Figure(data=data, layout={**base, **layout})


def empty_figure(message: str, font_size: int = 15) -> go.Figure:
    note = dict(text=escape(message, quote=False), x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                font=dict(size=font_size + 2, color="#555"))
    return _figure([], dict(height=140, margin=dict(l=10, r=10, t=10, b=10), annotations=[note],
                            xaxis=dict(visible=False), yaxis=dict(visible=False)), font_size)


def _frame(plot_px: int, head_px: int, font_size: int, label_chars: int) -> dict:
    """Height and margins around a plot area of plot_px: titles above; tick labels of up to label_chars on the
    left; axis title and legend below. Fixed margins, not plotly's automargin: that redraws the chart until
    the margins settle, which made each step cost the browser a second."""
    foot_px = 5 * font_size + 30
    left_px = 16 + int(0.7 * font_size * label_chars)
    return dict(height=plot_px + head_px + foot_px, margin=dict(l=left_px, r=16, t=head_px, b=foot_px))


def _title(text: str, font_size: int) -> dict:
    """A left-aligned title at the top. Plotly places a multi-line title as if it had one line, so the lines
    after the first would push it above the figure: pad it down by their height."""
    extra_lines = text.count("<br>")
    return dict(text=text, x=0, xanchor="left", xref="container", y=1, yanchor="top", yref="container",
                pad=dict(t=12 + int(extra_lines * 1.3 * (font_size + 3)), l=12), font=dict(size=font_size + 3))


def _tick(text: str) -> str:
    """A token as a tick label: visible whitespace, escaped, at most MAX_TICK characters."""
    shown = show(text)
    return escape(shown if len(shown) <= MAX_TICK else shown[:MAX_TICK - 1] + "…", quote=False)


def _unique(labels: list[str]) -> list[str]:
    """Two tokens can look alike (byte pieces); plotly merges equal category names, so tell them apart."""
    seen: dict[str, int] = {}
    out = []
    for text in labels:
        seen[text] = seen.get(text, 0) + 1
        out.append(text if seen[text] == 1 else f"{text} ({seen[text]})")
    return out


def _with(tokens: list[TokenProb], chosen: TokenProb, limit: int) -> list[TokenProb]:
    """The first `limit` tokens, making sure `chosen` is among them (in place of the last one)."""
    top = tokens[:limit]
    if all(t.token_id != chosen.token_id for t in top):
        top = top[:limit - 1] + [chosen]
    return top


def _token_bars(tokens: list[TokenProb], chosen_id: int, icon: str, series, font_size: int,
                axes: tuple[str, str] = ("x", "y"), showlegend: bool = True,
                opacity: float = 1.0) -> tuple[list[dict], dict]:
    """Horizontal grouped bars, one group per token, one bar per (name, values, colour, pattern) in series.
    The chosen token's bars are outlined, numbered, and its label carries `icon`. Returns (traces, y ticks)."""
    names = _unique([_tick(t.text) for t in tokens])
    hit = [t.token_id == chosen_id for t in tokens]
    outline = dict(color=INK, width=[3 if h else 0 for h in hit])
    traces = [dict(type="bar", orientation="h", y=names, x=values, name=name, legendgroup=name,
                   showlegend=showlegend, xaxis=axes[0], yaxis=axes[1], opacity=opacity,
                   marker=dict(color=color, line=outline, pattern=hatch(pattern)),
                   text=[num(v) if h else None for v, h in zip(values, hit)], textposition="outside",
                   cliponaxis=False, constraintext="none", textfont=dict(size=font_size),
                   hovertemplate=f"{name} of %{{y}} = %{{x:.3f}}<extra></extra>")
              for name, values, color, pattern in series]
    ticks = dict(type="category", tickmode="array", tickvals=names, autorange="reversed",  # "1" is a token, not 1
                 ticktext=[f"<b>{icon} {n}</b>" if h else n for n, h in zip(names, hit)])
    return traces, ticks


def _pq_series(tokens: list[TokenProb]) -> list[tuple]:
    return [("q (draft)", [t.q or 0.0 for t in tokens], Q_COLOR, "/"),
            ("p (target)", [t.p for t in tokens], P_COLOR, "")]


def _prob_axis(**extra) -> dict:
    return dict(range=[0, 1.2], tickvals=[0, 0.25, 0.5, 0.75, 1], gridcolor=GRID, zeroline=False, **extra)


# --- p and q at each draft position -------------------------------------------------------------------------

def pq_bars(rnd: Round, font_size: int = 15, greedy: bool = False) -> go.Figure:
    """Per draft position, the top candidate tokens under q (draft) and p (target) side by side; the drafted
    token is outlined and marked ▶; each panel's title writes out its acceptance test."""
    if not rnd.drafts:
        return empty_figure("Nothing was drafted this round (see why in the explanation below).", font_size)
    n = len(rnd.drafts)
    rows = [_with(d.candidates, TokenProb(d.token_id, d.text, d.p, d.q), TOP_BARS) for d in rnd.drafts]
    heights = [BAR_PX * len(tokens) + 10 for tokens in rows]
    gap = 2 * font_size + 30  # room for a panel's two-line title
    plot_px = sum(heights) + gap * (n - 1)
    data, layout, notes, top = [], {}, [], plot_px
    for i, (d, tokens, h) in enumerate(zip(rnd.drafts, rows, heights)):
        suffix = str(i + 1) if i else ""  # plotly names axes x, x2, x3, ...
        x, y = "x" + suffix, "y" + suffix
        traces, ticks = _token_bars(tokens, d.token_id, "▶", _pq_series(tokens), font_size, (x, y), showlegend=i == 0,
                                    opacity=0.4 if d.fate == DISCARDED else 1.0)
        data += traces
        layout["yaxis" + suffix] = dict(domain=[(top - h) / plot_px, top / plot_px], anchor=x, **ticks)
        layout["xaxis" + suffix] = _prob_axis(anchor=y, showticklabels=i == n - 1)
        notes.append(dict(text=_position_title(i, d, greedy), x=0, xref="paper", xanchor="left", y=top / plot_px,
                          yref="paper", yanchor="bottom", showarrow=False, align="left", font=dict(size=font_size)))
        top -= h + gap
    layout["xaxis" + suffix]["title"] = dict(text="probability")
    chars = max(len(show(t.text)) for tokens in rows for t in tokens)
    layout.update(_frame(plot_px, 4 * font_size + 40, font_size, min(chars, MAX_TICK) + 3), annotations=notes,
                  title=_title("q (draft) and p (target) at each draft position", font_size))
    return _figure(data, layout, font_size)


def _position_title(i: int, d: DraftPosition, greedy: bool) -> str:
    s = FATES[d.fate]
    return f"<b>{i + 1}. “{label(d.text)}”  {s.icon} {s.label}</b><br>{escape(verdict_text(d, greedy), quote=False)}"


# --- the residual, or the bonus ----------------------------------------------------------------------------

def residual_chart(rnd: Round, font_size: int = 15) -> go.Figure:
    """After a rejection: normalised max(0, p − q) beside p and q, the sampled replacement outlined.
    After a clean sweep: p at the next position, the bonus token drawn from it outlined."""
    if rnd.next_kind == REPLACEMENT and rnd.residual:
        tokens = _with(rnd.residual, rnd.next_token, TOP_BARS)
        series = _pq_series(tokens) + [("norm(max(0, p − q))", [t.residual or 0.0 for t in tokens],
                                        FATES[REPLACEMENT].color, "x")]
        title = (f"Position {rnd.n_accepted + 1} rejected: the replacement {FATES[REPLACEMENT].icon}<br>"
                 f"is sampled from norm(max(0, p − q))")
        return _chosen_chart(tokens, rnd.next_token, REPLACEMENT, series, title, font_size)
    if rnd.next_kind == BONUS and rnd.bonus_candidates:
        tokens = _with(rnd.bonus_candidates, rnd.next_token, TOP_BARS)
        series = [("p (target)", [t.p for t in tokens], P_COLOR, "")]
        title = (f"All {rnd.k} drafts accepted: the bonus {FATES[BONUS].icon}<br>is drawn from p at position "
                 f"{rnd.k + 1}" if rnd.k else
                 f"Nothing drafted: the target's token {FATES[BONUS].icon}<br>is drawn from p")
        if not rnd.next_kept:
            title = f"All {rnd.k} drafts accepted, ending the text:<br>the bonus {FATES[BONUS].icon} is not kept"
        return _chosen_chart(tokens, rnd.next_token, BONUS, series, title, font_size)
    return empty_figure("This trace did not record the distribution of the round's last token.", font_size)


def _chosen_chart(tokens: list[TokenProb], chosen: TokenProb, fate: str, series, title: str,
                  font_size: int) -> go.Figure:
    data, ticks = _token_bars(tokens, chosen.token_id, FATES[fate].icon, series, font_size)
    bars_px = (BAR_PX // 2 + 6) * len(series) * len(tokens) + 20
    chars = min(max(len(show(t.text)) for t in tokens), MAX_TICK) + 3
    layout = dict(_frame(bars_px, 3 * font_size + 40, font_size, chars), title=_title(title, font_size), yaxis=ticks,
                  xaxis=_prob_axis(title=dict(text="probability")))
    return _figure(data, layout, font_size)


# --- tokens per target pass, over the run ------------------------------------------------------------------

def tokens_per_pass(trace: Trace, selected: int | None = None, font_size: int = 15) -> go.Figure:
    """Stacked bars per round (accepted drafts + the replacement or bonus), the running mean, the expected
    value (1 − α^(K+1)) / (1 − α) from the measured acceptance α, and the K + 1 ceiling.
    `selected` (0-based) shades the round on view."""
    rounds = trace.rounds
    if not rounds or trace.summary is None:
        return empty_figure("Tokens per target pass appear here as rounds complete.", font_size)
    x = [r.index + 1 for r in rounds]
    made = [r.tokens_this_pass for r in rounds]
    accepted = [min(r.n_accepted, t) for r, t in zip(rounds, made)]
    data = [_stack(x, accepted, ACCEPTED, "accepted drafts")]
    for kind in (REPLACEMENT, BONUS):
        data.append(_stack(x, [t - a if r.next_kind == kind else 0 for r, t, a in zip(rounds, made, accepted)],
                           kind, FATES[kind].label))
    # Expected and ceiling from the K each round really drafted (adaptive K, or the last rounds, draft fewer)
    alpha = trace.summary.acceptance_rate
    expected = sum(expected_tokens_per_pass(alpha, r.k) for r in rounds) / len(rounds)
    ceiling = sum(r.k + 1 for r in rounds) / len(rounds)
    k = max(r.k for r in rounds)
    span = [0.5, len(rounds) + 0.5]
    data += [
        dict(type="scatter", x=x, y=[total / i for i, total in enumerate(accumulate(made), 1)], name="running mean",
             mode="lines+markers", line=dict(color=INK, width=3), marker=dict(size=7, symbol="diamond"),
             hovertemplate="mean after round %{x}: %{y:.2f}<extra></extra>"),
        dict(type="scatter", x=span, y=[expected, expected], name=f"expected {expected:.2f}", mode="lines",
             line=dict(color=P_COLOR, width=3, dash="dash"),
             hovertemplate=f"mean over rounds of (1 − α^(k+1)) / (1 − α), α = {alpha:.2f}: {expected:.2f}"
                          "<extra></extra>"),
        dict(type="scatter", x=span, y=[ceiling, ceiling], name=f"ceiling: mean k + 1 = {ceiling:.2f}", mode="lines",
             line=dict(color="#888", width=2, dash="dot"), hoverinfo="skip"),
    ]
    shade = [] if selected is None else [dict(type="rect", xref="x", yref="paper", x0=selected + 0.5,
                                              x1=selected + 1.5, y0=0, y1=1, fillcolor="#000", opacity=0.09,
                                              line=dict(width=0), layer="below")]
    title = (f"Tokens per target pass · mean {trace.summary.tokens_per_pass:.2f} · expected (1 − α<sup>k+1</sup>)"
             f" / (1 − α) = {expected:.2f} at α = {alpha:.2f}, k = drafts in each round (mean {ceiling - 1:.2f})")
    layout = dict(_frame(240, 2 * font_size + 40, font_size, 4), title=_title(title, font_size), barmode="stack",
                  bargap=0.15, shapes=shade,
                  xaxis=dict(title=dict(text="round"), range=span, dtick=1 if len(rounds) <= 32 else None,
                             gridcolor=GRID, zeroline=False),
                  yaxis=dict(title=dict(text="tokens"), range=[0, k + 1.6], dtick=1 if k <= 8 else 2,
                             gridcolor=GRID, zeroline=False))
    return _figure(data, layout, font_size)


def _stack(x: list[int], y: list[int], fate: str, name: str) -> dict:
    s = FATES[fate]
    pattern = {ACCEPTED: "", REPLACEMENT: "x", BONUS: "."}[fate]
    return dict(type="bar", x=x, y=y, name=f"{s.icon} {name}",
                marker=dict(color=s.color, line=dict(color="white", width=1), pattern=hatch(pattern)),
                hovertemplate=f"round %{{x}}: %{{y}} {name}<extra></extra>")


# --- where the time goes: the target alone against speculative decoding ------------------------------------

LANES = ("speculative", "target alone")  # bottom to top


def timeline(trace: Trace, font_size: int = 15) -> go.Figure:
    """Two lanes on one wall-clock axis, from the recorded times: the target alone, one step per token (above),
    and speculative decoding, each round's draft steps then its verify pass (below), with the tokens each round
    committed. Time spent between rounds (recording, the page) is left out of both."""
    if not trace.rounds or trace.summary is None:
        return empty_figure("The timeline appears here once a run has rounds.", font_size)
    starts, data = 0.0, []
    draft, verify, marks = ([], [], []), ([], [], []), ([], [], [])
    for r in trace.rounds:
        for (x, base, text), seconds, what in ((draft, r.draft_time_s, "draft"), (verify, r.verify_time_s, "verify")):
            x.append(seconds)
            base.append(starts)
            text.append(f"round {r.index + 1}: {what} {seconds * 1000:.0f} ms")
            starts += seconds
        marks[0].append(starts), marks[1].append(r.tokens_this_pass), marks[2].append(f"+{r.tokens_this_pass}")
    data.append(_segments(draft, LANES[0], f"draft steps ({trace.draft_model})", Q_COLOR, "/"))
    data.append(_segments(verify, LANES[0], "verify pass (target)", P_COLOR, ""))
    data.append(dict(type="scatter", x=marks[0], y=[LANES[0]] * len(marks[0]), mode="markers", name="tokens committed",
                     marker=dict(symbol="line-ns", size=22, line=dict(width=2, color=INK)), text=marks[2],
                     hovertemplate="%{text} tokens at %{x:.2f} s<extra></extra>"))
    note, alone_s = _baseline_lane(trace, data)
    end = max(starts, alone_s)
    title = (f"Where the time goes: {trace.summary.n_new_tokens} tokens in {starts:.2f} s of rounds" + note)
    layout = dict(_frame(2 * 70, 2 * font_size + 40, font_size, 12), title=_title(title, font_size), barmode="overlay",
                  xaxis=dict(title=dict(text="seconds"), range=[0, end * 1.02], gridcolor=GRID, zeroline=False),
                  yaxis=dict(categoryorder="array", categoryarray=list(LANES), gridcolor=GRID))
    return _figure(data, layout, font_size)


def _segments(columns, lane: str, name: str, color: str, pattern: str) -> dict:
    x, base, text = columns
    return dict(type="bar", orientation="h", x=x, base=base, y=[lane] * len(x), name=name, text=text,
                textposition="none", width=0.6, marker=dict(color=color, line=dict(color="white", width=1),
                                                             pattern=hatch(pattern)),
                hovertemplate="%{text}<extra></extra>")


def _baseline_lane(trace: Trace, data: list) -> tuple[str, float]:
    """Append the target alone's lane (one segment per step) to data. -> the title's note on it, its seconds"""
    b = trace.baseline
    if b is None:
        return " · press Baseline to time the target alone beside it", 0.0
    steps, note = list(b.step_times_s), ""
    if not steps:  # a version-1 trace: its first step and total only
        n = len(b.output_token_ids)
        steps = [b.first_token_time_s] + [(b.total_time_s - b.first_token_time_s) / max(n - 1, 1)] * (n - 1)
        note = " (its steps spread evenly: not recorded)"
    bases = [sum(steps[:i]) for i in range(len(steps))]
    data.append(_segments((steps, bases, [f"token {i + 1}: {s * 1000:.0f} ms" for i, s in enumerate(steps)]),
                          LANES[1], "target step", INK, ""))
    return f" · the target alone: {len(steps)} tokens in {sum(steps):.2f} s{note}", sum(steps)

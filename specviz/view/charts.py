"""Trace records -> plotly Figures: tokens per target pass over a run, and the timeline of a run beside the target
alone. (A round's own p and q bars are HTML: view/cards.py.)

Pure functions (no gradio, no models): a figure is a function of a Trace and a font size. Colours
and icons come from style.py's colour language. Token text is shown as the tokenizer produced it (`·` for a
space, `⏎` for a newline) and escaped, because plotly reads a few HTML tags inside text.

Figures are built from plain dicts in one `go.Figure(...)` call: plotly's `update_*` helpers, `make_subplots`
and named templates cost many times more per chart, too slow for stepping with ← → (the readings:
docs/benchmarks.md, "Timings behind choices in the code").
"""

from __future__ import annotations

from html import escape
from itertools import accumulate

import plotly.graph_objects as go

from specviz.view.cost_words import speculation_off
from specviz.record.quiz_data import most_accepted
from specviz.view.style import FATES, FONT, GRID, INK, P_COLOR, Q_COLOR, e_formula, edge, hatch, show, speed
from specviz.algorithm.theory import expected_tokens_per_pass
from specviz.record.trace import ACCEPTED, BONUS, PLAIN, REPLACEMENT, Trace

FONT_SIZE = 18  # the Lab's and the Costs tab's figures, shown to a room: large enough for the back row


def label(text: str) -> str:
    """Token text for a plotly label: whitespace visible, markup escaped. ' <b>' -> '·&lt;b&gt;'."""
    return escape(show(text), quote=False)


def base_layout(font_size: int, legend_size: int | None = None) -> dict:
    """What every figure's layout starts from (the round view's, the Lab's, the Costs tab's): no template, the
    page's font and ink on white, hover labels at the font size, the legend along the bottom, clear of titles, in
    `legend_size` (the font size unless given). Each figure adds its own size, margins and title."""
    legend_font = dict(size=font_size if legend_size is None else legend_size)
    return dict(template={}, font=dict(size=font_size, color=INK, family=FONT), paper_bgcolor="white",
                plot_bgcolor="white", hoverlabel=dict(font=dict(size=font_size)),
                legend=dict(orientation="h", x=0, xanchor="left", yref="container", y=0, yanchor="bottom",
                            font=legend_font))


def plain_figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain dicts, as given: plotly's check of every property cost 13 of the 13.5 ms a
    tokens-per-pass chart took (two charts for every round streamed), and what plotly.js is sent reads the same
    without it. tests/lab/test_chart_contrast.py builds every kind of figure again with the check on and compares,
    so a misspelt property, or one only the check expands (`font_size` for `font: {size}`), still fails a test."""
    return go.Figure(data=data, layout=layout, _validate=False)


def _figure(data: list[dict], layout: dict, font_size: int) -> go.Figure:
    base = dict(base_layout(font_size), barmode="group", bargap=0.22, bargroupgap=0.05)
    return plain_figure(data, {**base, **layout})


def empty_figure(message: str, font_size: int = 15) -> go.Figure:
    note = dict(text=escape(message, quote=False), x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                font=dict(size=font_size + 2, color="#555"))
    return _figure([], dict(height=140, margin=dict(l=10, r=10, t=10, b=10), annotations=[note],
                            xaxis=dict(visible=False), yaxis=dict(visible=False)), font_size)


def _frame(plot_px: int, head_px: int, font_size: int, label_chars: int) -> dict:
    """Height and margins around a plot area of plot_px: titles above; tick labels of up to label_chars on the
    left; axis title and legend below. Fixed margins, not plotly's automargin: that redraws the chart until
    the margins settle, which made each step slow in the browser (docs/benchmarks.md, "Timings behind choices in
    the code")."""
    foot_px = 5 * font_size + 30
    left_px = 16 + int(0.7 * font_size * label_chars)
    return dict(height=plot_px + head_px + foot_px, margin=dict(l=left_px, r=16, t=head_px, b=foot_px))


def _title(text: str, font_size: int) -> dict:
    """A left-aligned title at the top. Plotly places a multi-line title as if it had one line, so the lines
    after the first would push it above the figure: pad it down by their height."""
    extra_lines = text.count("<br>")
    return dict(text=text, x=0, xanchor="left", xref="container", y=1, yanchor="top", yref="container",
                pad=dict(t=12 + int(extra_lines * 1.3 * (font_size + 3)), l=12), font=dict(size=font_size + 3))


# --- tokens per target pass, over the run ------------------------------------------------------------------

def tokens_per_pass(trace: Trace, selected: int | None = None, font_size: int = 15) -> go.Figure:
    """Stacked bars per round (accepted drafts + the replacement, the bonus or the target's token when nothing was
    drafted), the running mean, the expected
    value (1 − α^(K+1)) / (1 − α) from the measured acceptance α, and the K + 1 ceiling.
    `selected` (0-based) shades the round on view."""
    rounds = trace.rounds
    if not rounds or trace.summary is None:
        return empty_figure("Tokens per target pass appear here as rounds complete.", font_size)
    x = [r.index + 1 for r in rounds]
    made = [r.tokens_this_pass for r in rounds]
    accepted = [min(r.n_accepted, t) for r, t in zip(rounds, made)]
    data = [_stack(x, accepted, ACCEPTED, "accepted drafts")]
    for kind in (REPLACEMENT, BONUS, PLAIN):
        data.append(_stack(x, [t - a if r.last_kind == kind else 0 for r, t, a in zip(rounds, made, accepted)],
                           kind, FATES[kind].label))
    # Expected and ceiling from the K each round really drafted (adaptive K, or the last rounds, draft fewer); a
    # tree round accepts at most its depth, and the chain's formula does not give a tree's expectation
    alpha, tree = round(trace.summary.acceptance_rate, 2), any(r.tree for r in rounds)  # as printed: a student
    #                                                                  redoing E from the α shown gets the line drawn
    reach = [most_accepted(r) for r in rounds]  # the most drafts each round could accept
    expected = sum(expected_tokens_per_pass(alpha, r.k) for r in rounds) / len(rounds)
    ceiling = sum(n + 1 for n in reach) / len(rounds)
    k = max(reach)
    span = [0.5, len(rounds) + 0.5]
    data += [
        dict(type="scatter", x=x, y=[total / i for i, total in enumerate(accumulate(made), 1)], name="running mean",
             mode="lines+markers", line=dict(color=INK, width=3), marker=dict(size=7, symbol="diamond"),
             hovertemplate="mean after round %{x}: %{y:.2f}<extra></extra>"),
        *([] if tree else [dict(
            type="scatter", x=span, y=[expected, expected], name=f"expected {expected:.2f}", mode="lines",
            line=dict(color=P_COLOR, width=3, dash="dash"),
            hovertemplate=f"mean over rounds of {e_formula(alpha, 'k', html=False)}, α = {alpha:.2f}: {expected:.2f}"
                          "<extra></extra>")]),
        dict(type="scatter", x=span, y=[ceiling, ceiling], name=f"ceiling: mean {'depth' if tree else 'k'} + 1 = "
             f"{ceiling:.2f}", mode="lines", line=dict(color="#888", width=2, dash="dot"), hoverinfo="skip"),
    ]
    off = [r.index + 1 for r in rounds if speculation_off(r)]
    if off:  # the cost-aware rule's plain rounds, marked above their bar (a symbol, not a colour alone)
        data.append(dict(type="scatter", x=off, y=[1.35] * len(off), mode="markers", name="speculation off (cost rule)",
                         marker=dict(symbol="x-thin-open", size=11, color=INK, line=dict(width=2, color=INK)),
                         hovertemplate="round %{x}: no draft would have paid; a plain target step<extra></extra>"))
    shade = [] if selected is None else [dict(type="rect", xref="x", yref="paper", x0=selected + 0.5,
                                              x1=selected + 1.5, y0=0, y1=1, fillcolor="#000", opacity=0.09,
                                              line=dict(width=0), layer="below")]
    title = (f"Tokens per target pass · mean {trace.summary.tokens_per_pass:.2f} · expected {e_formula(alpha, 'k')}"
             f" = {expected:.2f} at α = {alpha:.2f}, k = drafts in each round (mean {ceiling - 1:.2f})")
    if off:
        title += f"<br>✕ speculation off in {len(off)} of {len(rounds) - 1} rounds after the first (cost-aware rule)"
    if tree:
        title = (f"Tokens per target pass · mean {trace.summary.tokens_per_pass:.2f} · a draft tree: at most its "
                 f"depth + 1 per pass (mean {ceiling:.2f}); the chain's formula does not apply")
    layout = dict(_frame(240, 2 * font_size + 40, font_size, 4), title=_title(title, font_size), barmode="stack",
                  bargap=0.15, shapes=shade,
                  xaxis=dict(title=dict(text="round"), range=span, dtick=1 if len(rounds) <= 32 else None,
                             gridcolor=GRID, zeroline=False),
                  yaxis=dict(title=dict(text="tokens"), range=[0, k + 1.6], dtick=1 if k <= 8 else 2,
                             gridcolor=GRID, zeroline=False))
    return _figure(data, layout, font_size)


def _stack(x: list[int], y: list[int], fate: str, name: str) -> dict:
    s = FATES[fate]
    pattern = {ACCEPTED: "", REPLACEMENT: "x", BONUS: ".", PLAIN: "-"}[fate]
    return dict(type="bar", x=x, y=y, name=f"{s.icon} {name}",
                marker=dict(color=s.color, line=dict(color=edge(s.color), width=1.5), pattern=hatch(pattern)),
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
    note, alone_s, alone_n = _baseline_lane(trace, data)
    made = trace.summary.n_new_tokens
    title = f"Where the time goes: {made} tokens in {starts:.2f} s of rounds ({speed(made / starts)} tok/s)" + note
    end = max(starts, alone_s)
    if alone_n and alone_n != made:  # two samples of different lengths: equal bars would hide the speedup
        lane, n, seconds = (0, made, starts) if made < alone_n else (1, alone_n, alone_s)
        more = max(made, alone_n) - n
        data.append(_segments(([more * seconds / n], [seconds], [f"{more} more tokens at its rate: not measured"]),
                              LANES[lane], "drawn on at its own rate (not measured)", "#d9d9d9", "."))
        end = max(made, alone_n) * max(starts / made, alone_s / alone_n)
        title += (f"<br>{LANES[lane]} drawn on to {n + more} tokens at its own rate ({more} × {seconds / n:.3f} s, "
                  f"dotted): both lanes then make the same tokens, so their lengths compare as the speeds do")
    layout = dict(_frame(2 * 70, 2 * font_size + 40, font_size, 12), title=_title(title, font_size), barmode="overlay",
                  xaxis=dict(title=dict(text="seconds"), range=[0, end * 1.02], gridcolor=GRID, zeroline=False),
                  yaxis=dict(categoryorder="array", categoryarray=list(LANES), gridcolor=GRID))
    return _figure(data, layout, font_size)


def _segments(columns, lane: str, name: str, color: str, pattern: str) -> dict:
    x, base, text = columns
    return dict(type="bar", orientation="h", x=x, base=base, y=[lane] * len(x), name=name, text=text,
                textposition="none", width=0.6, marker=dict(color=color, line=dict(color=edge(color), width=1.5),
                                                             pattern=hatch(pattern)),
                hovertemplate="%{text}<extra></extra>")


def _baseline_lane(trace: Trace, data: list) -> tuple[str, float, int]:
    """Append the target alone's lane (one segment per step) to data. -> the title's note on it, its seconds, its
    tokens"""
    b = trace.baseline
    if b is None:
        return " · press Baseline to time the target alone beside it", 0.0, 0
    steps, note = list(b.step_times_s), ""
    if not steps:  # a version-1 trace: its first step and total only
        n = len(b.output_token_ids)
        steps = [b.first_token_time_s] + [(b.total_time_s - b.first_token_time_s) / max(n - 1, 1)] * (n - 1)
        note = " (its steps spread evenly: not recorded)"
    bases = [sum(steps[:i]) for i in range(len(steps))]
    data.append(_segments((steps, bases, [f"token {i + 1}: {s * 1000:.0f} ms" for i, s in enumerate(steps)]),
                          LANES[1], "target step", INK, ""))
    alone = sum(steps)
    return (f" · the target alone: {len(steps)} tokens in {alone:.2f} s ({speed(len(steps) / alone)} tok/s){note}", alone,
            len(steps))

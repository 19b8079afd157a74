"""A measured CostProfile -> plotly figures and a readout: what a pass costs against the tokens it reads at
once, and the predicted speedup against batch size. Pure functions (no gradio, no models).
"""

from __future__ import annotations

import math
from html import escape

import plotly.graph_objects as go

from specviz.engine.pass_costs import CONTEXT as SHORT_CONTEXT
from specviz.measure.draft_parts import EAGLE_NAME
from specviz.measure.pass_timing import crossover_batch, crossover_range, speedup_at_batch
from specviz.record.cost_profile import CostProfile
from specviz.view.charts import FONT_SIZE, base_layout, plain_figure
from specviz.view.style import GRAPHIC_CONTRAST, GRID, INK, P_COLOR, Q_COLOR, ink, significant

BATCH_AXIS = list(range(1, 17))  # batch sizes the prediction is drawn for
LINE = ink(Q_COLOR, GRAPHIC_CONTRAST)  # q's blue darkened to 3:1 on white (WCAG 1.4.11), as the page's --sv-q-edge
REFERENCE = "#888888"  # the full-step diagonal, a dotted grey at 3.5:1 on white


def _figure(data: list[dict], layout: dict, title: str, font_size: int) -> go.Figure:
    # the legend at the foot of the figure (base_layout: anchored to the container, not the plot), with room for
    # the tick labels, the axis title and two lines of legend above it: at y = -0.28 of the plot it overlapped the
    # axis title once the legend wrapped
    base = dict(base_layout(font_size, legend_size=font_size - 2), height=460, margin=dict(l=80, r=24, t=70, b=150),
                title=dict(text=title, x=0, xanchor="left", font=dict(size=font_size + 2)))
    return plain_figure(data, {**base, **layout})


def ratio_figure(p: CostProfile, font_size: int = FONT_SIZE) -> go.Figure:
    """t(n)/t(1) for n new tokens of one sequence, and t(b)/t(1) for b sequences of one token each, against
    the tokens one pass reads; the diagonal is what the pass would cost if every token cost a full step."""
    t1 = p.target_s[0]
    most = max(p.tokens[-1], p.batches[-1])
    data = [dict(type="scatter", x=p.tokens, y=[t / t1 for t in p.target_s], mode="lines+markers",
                 name="target, n new tokens of one sequence", line=dict(color=P_COLOR, width=3),
                 hovertemplate="n = %{x}: %{y:.2f} × t(1)<extra></extra>"),
            dict(type="scatter", x=p.batches, y=[t / t1 for t in p.target_batch_s], mode="lines+markers",
                 name="target, b sequences of one token", line=dict(color=INK, width=3, dash="dash"),
                 marker=dict(symbol="square", size=10), hovertemplate="b = %{x}: %{y:.2f} × t(1)<extra></extra>"),
            dict(type="scatter", x=[1, most], y=[1, most], mode="lines", name="if every token cost a full step",
                 line=dict(color=REFERENCE, width=1.5, dash="dot"), hoverinfo="skip")]
    top = max(max(t / t1 for t in p.target_s + p.target_batch_s), 2) * 1.15
    layout = dict(xaxis=dict(title=dict(text="tokens in one pass (n, or b sequences × 1)"), range=[0, most * 1.03],
                             gridcolor=GRID, zeroline=False), yaxis=dict(title=dict(text="pass time ÷ t(1)"), range=[0, top],
                                                         gridcolor=GRID, zeroline=False))
    title = f"What a target pass costs, {_measured(p)} · {escape(p.dtype)} ({p.context}-token cache)"
    return _figure(data, layout, title, font_size)


def batch_figure(p: CostProfile, alpha: float, k: int, font_size: int = FONT_SIZE) -> go.Figure:
    """Predicted speedup against batch size for one α and K, with break-even at 1 and the crossover marked."""
    speedups = [speedup_at_batch(p, alpha, k, b) for b in BATCH_AXIS]
    data = [dict(type="scatter", x=BATCH_AXIS, y=speedups, mode="lines+markers",
                 name=f"α = {alpha:.2f}, K = {k}, c = {significant(p.c, 2)}",
                 line=dict(color=LINE, width=3), hovertemplate="batch %{x}: %{y:.2f}×<extra></extra>")]
    if p.spread:  # a band between the spread's two ends, under the median curve: how sure each point of it is
        band = [dict(type="scatter", x=BATCH_AXIS, y=[speedup_at_batch(p.extreme(favoured), alpha, k, b)
                                                      for b in BATCH_AXIS],
                     mode="lines", line=dict(width=0, color=Q_COLOR), fill="tonexty" if favoured else "none",
                     fillcolor="rgba(86,180,233,0.25)", showlegend=favoured, hoverinfo="skip",
                     name=f"spread: least to most of {p.repeats} timings a point") for favoured in (False, True)]
        data = band + data
    cross = crossover_batch(p, alpha, k)
    if cross is not None and cross <= BATCH_AXIS[-1]:
        data.append(dict(type="scatter", x=[cross], y=[speedups[cross - 1]], mode="markers+text",
                         text=[f"stops paying at batch {_batches(p, alpha, k)}" if cross > 1 else
                               "does not pay even at batch 1"],
                         textposition="top right", name="crossover",
                         marker=dict(symbol="x", size=16, color=INK)))
    top = max(speedups + [1]) * 1.25
    layout = dict(xaxis=dict(title=dict(text="sequences decoded at once (batch size)"), dtick=1, gridcolor=GRID),
                  yaxis=dict(title=dict(text="speedup × target-only"), range=[0, top], gridcolor=GRID,
                             zeroline=False),
                  shapes=[dict(type="line", xref="paper", x0=0, x1=1, y0=1, y1=1,
                               line=dict(color=INK, width=1.5, dash="dash"))])
    return _figure(data, layout, f"Predicted speedup against batch size (costs {_measured(p)})", font_size)


def _measured(p: CostProfile) -> str:
    """'measured on cpu', or for a shipped recording 'recorded 2026-12-02 (cpu)': a recording is never passed off as
    a measurement of the loaded pair."""
    return f"recorded {escape(p.recorded.split(' ')[0])} ({escape(p.device)})" if p.recorded else \
        f"measured on {escape(p.device)}"


def _batches(p: CostProfile, alpha: float, k: int) -> str:
    """The crossover, and its range over the measurement's spread: '11', '11 (9–13)', '11 (9 to beyond 16)'."""
    cross, (low, high) = crossover_batch(p, alpha, k), crossover_range(p, alpha, k)
    if not p.spread or low == high == cross:
        return str(cross)
    ends = [str(b) if b is not None else f"beyond {p.batches[-1]}" for b in (low, high)]
    return f"{cross} ({ends[0]}–{ends[1]})" if high is not None else f"{cross} ({ends[0]} to {ends[1]})"


def _how_sure(p: CostProfile) -> str:
    if not p.spread:
        return "; each pass was timed once, so how sure that is was not measured"
    return (f"; in brackets, the crossover with every pass time at the least or the most of its {p.repeats} "
            f"timings: one timing of a point is noise, the bracket is what these timings cannot tell apart")


def readout(p: CostProfile, alpha: float, k: int, unpriced: str = "") -> str:
    """The measured figures in sentences, each naming the formula it comes from, and whose draft step c is.
    `unpriced`: the drafter of the run α and K came from, where it is not the one c is of and no timing of it
    could price it (no baseline): said beside the prediction, which is then the draft model's, not that run's."""
    cross = crossover_batch(p, alpha, k)
    if cross is None:
        where = f"speculation still pays at batch {p.batches[-1]}, the largest measured"
    elif cross == 1:
        where = "it does not pay even at batch 1 here (predicted speedup below 1)"
    else:
        where = f"speculation stops paying at batch <b>{_batches(p, alpha, k)}</b> (predicted speedup below 1)"
    where += _how_sure(p)
    where_measured = (f"A recording made {escape(p.recorded)} (shipped with the page, not a measurement of this "
                      f"server's pair: “Measure the loaded pair” replaces it), on <b>{escape(p.device)}</b>"
                      if p.recorded else f"Measured on <b>{escape(p.device)}</b>")
    return (f'<div id="cost-readout" style="font-size:20px;line-height:1.5">{where_measured} '
            f"({escape(p.dtype)}, {escape(kernels_said(p))}, {escape(p.target)}, a {p.context}-token cache, in "
            f"{p.seconds:.1f} s): one target "
            f"step t(1) = {p.target_s[0] * 1000:.0f} ms; verifying K = {k} drafts costs v = t({k + 1}) / t(1) = "
            f"<b>{p.v(k):.2f}</b> one-token steps; a draft step of {escape(p.draft)} costs c = "
            f"{significant(p.c, 2)} of one. At batch 1 the predicted speedup is E / (K·c + v) = <b>{speedup_at_batch(p, alpha, k, 1):.2f}×</b> for α = "
            f"{alpha:.2f}. With b sequences at once the verify pass reads b·(K + 1) tokens (its time estimated "
            f"from the one-sequence curve at that many tokens): {where}.{_unpriced(p, unpriced)} {c_sources(p)}</div>"
            f"{parts_readout(p)}")


def _unpriced(p: CostProfile, drafter: str) -> str:
    if not drafter:
        return ""
    return (f" <b>Whose c:</b> α and K are the latest run's, which drafted with {escape(drafter)}, not "
            f"{escape(p.draft)}; with no baseline its own timings give no c, so the prediction above is "
            f"{escape(p.draft)}'s at that α and K (Baseline on the Rounds tab times its drafter).")


def c_sources(p: CostProfile) -> str:
    """Where each figure of c the page gives comes from, said once, here. The draft's step is timed alike in the first
    two (engine/pass_costs.py's draft_step_times) and paid in the third."""
    return (f"Three figures of c, each from its own source: this tab's, above (the draft's step at batch 1 timed as a "
            f"run drafts it, on a {p.context}-token cache); the cost-aware rule's price (the short measurement taken "
            f"when the pair loaded: the same timer on a {SHORT_CONTEXT}-token cache, or this tab's once it has measured "
            f"the loaded pair); and what a run paid (its own timings, beside its price in the summary of a cost-aware "
            f"run with a baseline).")


def kernels_said(p: CostProfile) -> str:
    """'float16-fbgemm kernels (why)': the path the measured passes ran on, and why the pair ran on it."""
    return f"{p.path} kernels" + (f" ({p.kernels_why})" if p.kernels_why else "")


def costs_text(p, alpha: float, k: int) -> str:
    """What `python -m specviz costs` prints: t(n)/t(1), the batch steps, v, c, the predicted speedup per batch at
    (α, K) and what a draft from the target's own state costs, part by part."""
    cross = crossover_batch(p, alpha, k)
    one, more = round(p.t(1) * 1000), round(p.t(k + 1) * 1000)  # v from the printed times, as a student redoes it
    lines = [f"{p.draft} → {p.target} · {p.device} · {p.dtype} · {p.context}-token cache · measured in "
             f"{p.seconds:.1f} s", f"kernels: {kernels_said(p)}",
             "tokens per pass  " + "  ".join(f"{n:>5}" for n in p.tokens),
             "t(n) / t(1)      " + "  ".join(f"{t / p.target_s[0]:>5.2f}" for t in p.target_s),
             "batch            " + "  ".join(f"{b:>5}" for b in p.batches),
             "target step / t1 " + "  ".join(f"{t / p.target_s[0]:>5.2f}" for t in p.target_batch_s),
             f"speedup, α={alpha} K={k} " + "  ".join(f"{speedup_at_batch(p, alpha, k, b):>5.2f}"
                                                   for b in p.batches),
             f"t(1) = {one} ms · t({k + 1}) = {more} ms · v = t({k + 1})/t(1) = {more / max(one, 1):.2f} · c = "
             f"{p.c:.2f} · " + (f"stops paying at batch {cross}" if cross else
                                 f"pays at every batch up to {p.batches[-1]}")]
    if p.parts:  # Medusa heads, the EAGLE-style layer
        lines.append(f"a draft from the target's own state: {parts_line(p.parts)}")
    return "\n".join(lines)


def parts_line(d) -> str:
    """The draft parts in one line of text, as the CLI's `costs` and tools/record_draft_parts print them."""
    return (f"t(1) = {ms(d.target_step_s)} ms · a head's block {ms(d.head_block_s)} ms · the output layer "
            f"{ms(d.output_layer_s)} ms · {d.heads} heads {ms(d.heads_s)} ms · a draft step {ms(d.draft_step_s)} ms · "
            f"an {EAGLE_NAME} {ms(d.eagle_layer_s)} ms (without its output layer)")


def ms(seconds: float) -> str:
    """Milliseconds to 3 significant digits, never in powers of ten: 0.000512 -> '0.512', 0.0302 -> '30.2', 0.204 ->
    '204', 1.234 -> '1234'. Sums and ratios are worked from these printed figures, so each one a student redoes by hand
    comes out as printed."""
    return _fig(seconds * 1000)


def parts_readout(p: CostProfile) -> str:
    """What a draft from the target's own state costs (Medusa heads, an EAGLE-style layer) beside a one-token target
    pass and a draft-model step timed in the same run, each sum and ratio worked from the printed figures; '' where
    the profile has no such measurement."""
    d = p.parts
    if d is None or d.problem():
        return ""
    f = {name: float(ms(getattr(d, name))) for name in ("head_block_s", "output_layer_s", "heads_s", "eagle_layer_s",
                                                         "target_step_s", "draft_step_s")}
    t1 = f["target_step_s"]
    head = float(_fig(f["head_block_s"] + f["output_layer_s"]))  # as printed: each ratio below starts from it
    eagle = float(_fig(f["eagle_layer_s"] + f["output_layer_s"]))
    here = ("" if d.target_step_s == p.target_s[0] else
            "; a run of its own, not the one above: its machine, load and one-token pass may differ, so compare "
            "the parts with its own t(1)")
    return (f'<div id="cost-parts" style="font-size:20px;line-height:1.5;margin-top:0.6em"><b>What a draft from the '
            f"target's own state costs.</b> Measured {escape(d.measured)} (a {d.context}-token cache, medians of "
            f"{d.repeats}{here}), beside a one-token target pass of t(1) = {ms(d.target_step_s)} ms timed in the "
            f"same run. A Medusa head is a block of {d.hidden} × {d.hidden} weights read out through the target's "
            f"own output layer of {d.vocab} × {d.hidden}: one head costs {ms(d.head_block_s)} ms for the block + "
            f"{ms(d.output_layer_s)} ms for the output layer = {_fig(head)} ms, <b>{head / t1:.2f}</b> of t(1); the "
            f"output layer is {100 * f['output_layer_s'] / head:.0f} % of it. All {d.heads} heads from one hidden "
            f"state in one call: {ms(d.heads_s)} ms, {f['heads_s'] / t1:.2f} of t(1) and {f['heads_s'] / head:.2f} "
            f"× one head's (one call: {d.heads} blocks, then the output layer over {d.heads} rows){_fewer(f, head, d.heads)}. "
            f"A draft-model step: {ms(d.draft_step_s)} ms "
            f"({f['draft_step_s'] / t1:.2f} of t(1)). An {EAGLE_NAME} (one decoder layer of the target's shape on "
            f"one new position, random weights): {ms(d.eagle_layer_s)} ms + the output layer "
            f"{ms(d.output_layer_s)} ms = {_fig(eagle)} ms a draft step ({eagle / t1:.2f} of t(1)). Untrained "
            f"heads and a random layer are timed: a part costs the same whatever its weights.{rows_said(d, f)}</div>")


def rows_said(d, f: dict) -> str:
    """The heads' draft over fewer output rows (FR-Spec, engine/readout.py), each ratio from the printed figures,
    with head 1's held-out agreement at that size where heads were trained on the recording's machine; '' where the
    sizes were not timed."""
    if not d.rows:
        return ""
    t1, agreed = f["target_step_s"], d.rows_agreement or [None] * len(d.rows)
    each = [f"{n:,} rows {ms(s)} ms ({float(ms(s)) / t1:.3f} of t(1)"
            + (f", head 1 agreeing {a:.1%} held out)" if a is not None else ")")
            for n, s, a in zip(d.rows, d.rows_heads_s, agreed)]
    return (f" <b>Drafting over fewer rows</b> (FR-Spec: the output layer's rows for the tokens the target uses most; "
            f"q is 0 for every other token, and verification against that q keeps the output exact): all {d.heads} "
            f"heads over {'; '.join(each)}; over all {d.vocab:,}, {ms(d.heads_s)} ms above.")


def _fewer(f: dict, head: float, heads: int) -> str:
    """Why all the heads can cost less than one: their call holds one block per head, so only an output layer
    faster over that many rows than over one row can make it cheaper than one head (seen in bfloat16 on an
    avx512_bf16 CPU, 2026-12-02: the product over one row is the slower kernel there)."""
    if f["heads_s"] >= head:
        return ""
    return (f", less than one head's: with {heads} blocks in it, the output layer over {heads} rows ran faster here "
            f"than over one row")


def _fig(value: float) -> str:
    """A figure to 3 significant digits (all of its whole part), in plain decimals: 30.712 -> '30.7', 0.0000654 ->
    '0.0000654', 1234.5 -> '1234'."""
    if not value > 0:
        return f"{value:.3g}"
    return f"{value:.{max(0, 2 - math.floor(math.log10(value)))}f}"

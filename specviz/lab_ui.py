"""The lab tab: the p/q playground with its Monte Carlo, the α / K / c explorer beside a trace's measurement, and
the drafters compared on the real engine.

`build_lab(trace_state, preset, get_engine)` lays out its components inside the current gr.Blocks context (the app
calls it inside `with gr.Tab("Lab"):`, passing its pair dropdown and its process-wide model loader), then wires
all its events in one place. `demo()` wraps it in a Blocks of its own:

    python -m specviz.lab_ui
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, replace

import gradio as gr

from . import compare, lab, lab_charts
from .engine import RunSettings
from .charts import empty_figure
from .render import FATES, Q_COLOR, token_html
from .trace import ACCEPTED, REPLACEMENT, Trace, expected_tokens_per_pass, load_trace
from .ui import EngineLoader, gpu  # ui imports this module only inside build_demo: no import cycle

DECIMALS = 4  # the editable table shows probabilities to this many places
SAMPLE_SIZES = [100, 1_000, 10_000, 100_000]
TEXT = "font-size:20px;line-height:1.5"
REWRITE_PROMPT = """Rewrite this function with type hints. Reply with the code only.

def count_vowels(text, include_y):
    vowels = "aeiou"
    if include_y:
        vowels += "y"
    count = 0
    for char in text.lower():
        if char in vowels:
            count += 1
    return count
"""  # scalar arguments: the hinted signature is short, and the answer soon copies the body line by line
COMPARE_EXAMPLES = {  # label -> prompt: the answer to the first copies most of its prompt, to the second nothing
    "rewrite: the answer copies the prompt": REWRITE_PROMPT,
    "story: nothing to copy": "Write the opening of a short story about a lighthouse keeper.",
}


# --- HTML (every user-editable or uploaded string goes through html.escape) ------------------------------


def _swatch(color: str, pattern: str = "") -> str:
    """A small square in a legend colour; a hatched pattern (the second cue) where the chart has one."""
    fill = f"repeating-linear-gradient(45deg,{color} 0 4px,#fff 4px 6px)" if pattern else color
    return f'<span style="display:inline-block;width:14px;height:14px;background:{fill};margin-right:4px"></span>'


def playground_html(pg: lab.Playground) -> str:
    """α in large type, then one row per token: q, p, acceptance and the two parts of p(x)."""
    ok, res = FATES[ACCEPTED], FATES[REPLACEMENT]
    head = ["token", f"{_swatch(Q_COLOR, '/')}q(x) draft", "p(x) target", "keep min(1, p/q)",
            f"{_swatch(ok.color)}{ok.icon} accepted q·min(1, p/q)",
            f"{_swatch(res.color, 'x')}{res.icon} residual (1−α)·norm(max(0, p−q))", f"{ok.icon} + {res.icon} = p(x)"]
    cells = "text-align:right;padding:4px 12px;font-variant-numeric:tabular-nums"
    body = "".join(
        f'<tr><td style="padding:4px 12px">{token_html(r.token)}</td>'
        + "".join(f'<td style="{cells}">{v:.3f}</td>'
                  for v in (r.q, r.p, r.accept_prob, r.from_accepted, r.from_residual,
                            r.from_accepted + r.from_residual))
        + "</tr>" for r in pg.rows)
    header = "".join(f'<th style="padding:4px 12px;text-align:left">{h}</th>' for h in head)
    return (f'<div id="lab-alpha-readout" style="font-size:30px;margin:8px 0">α = Σ min(p, q) = '
            f'<b>{pg.alpha:.3f}</b> <span style="font-size:20px">: a drafted token is accepted '
            f'{pg.alpha:.1%} of the time; otherwise the token comes from the residual.</span></div>'
            f'<table style="{TEXT};border-collapse:collapse"><tr>{header}</tr>{body}</table>')


def histogram_html(mc: lab.MonteCarlo) -> str:
    label = html.escape(lab.SAMPLERS[mc.sampler][0])
    lead = (f"N = {mc.n:,} rounds (seed {mc.seed}) in {mc.seconds * 1000:.0f} ms · "
            f"TV(histogram, p) = <b>{mc.tv:.4f}</b> · sampling noise alone ≈ {mc.noise:.4f}")
    if mc.faithful:
        verdict = f"✓ <b>{label}</b>: the histogram fills p's outline; the gap is sampling noise."
    else:
        verdict = (f"✗ <b>{label}</b>: its tokens follow a distribution {mc.exact_tv:.3f} away from p (TV), "
                   "so more samples will not close the gap.")
    return f'<div id="lab-histogram-readout" style="{TEXT}">{verdict}<br>{lead}</div>'


def explorer_html(ex: lab.Explorer) -> str:
    a, k, c = ex.alpha, ex.k, ex.c
    return (f'<div style="{TEXT}">E = (1 − {a:.2f}<sup>{k + 1}</sup>) / (1 − {a:.2f}) = '
            f'<b id="lab-expected" style="font-size:30px">{ex.expected_at_k:.2f}</b> tokens per target pass · '
            f'speedup = {ex.expected_at_k:.2f} / ({k} × {c:.2f} + 1) = '
            f'<b id="lab-speedup" style="font-size:30px">{ex.speedup_at_k:.2f}×</b> · '
            f'▲ best K for this α and c: <b>{ex.best_k}</b> ({ex.best_speedup:.2f}×)</div>')


def trace_html(trace: Trace | None, point: lab.MeasuredPoint | None) -> str:
    if point is None:
        msg = ("No trace yet: generate one in the main view, or upload a trace JSON, to put its measured point "
               "(■) on these charts." if trace is None else "This trace has no rounds to measure.")
        return f'<div style="{TEXT}">{msg}</div>'
    pair = f"{html.escape(trace.draft_model)} → {html.escape(trace.target_model)}"
    if point.c is None:
        cost = "c not measurable (nothing was drafted)"
        theory = ""
    else:
        cost = (f"c = <b>{point.c:.3f}</b> (draft {point.draft_s_per_token * 1000:.1f} ms per token ÷ target pass "
                f"{point.verify_s_per_round * 1000:.1f} ms per round)")
        theory = (f"<br>Theory at this α, K, c: {expected_tokens_per_pass(point.alpha, point.k):.2f} tokens per "
                  f"pass, {lab.speedup(point.alpha, point.k, point.c):.2f}×.")
    measured = (f"{point.speedup:.2f}× over its baseline" if point.speedup is not None
                else "no speedup (the trace has no baseline run)")
    return (f'<div id="lab-trace-readout" style="{TEXT}">■ Trace {pair}: K = {point.k}, {point.n_rounds} rounds · '
            f"α = <b>{point.alpha:.3f}</b> (accepted ÷ examined drafts) · {cost}<br>"
            f"Measured: <b>{point.tokens_per_pass:.2f}</b> tokens per pass, <b>{measured}</b>.{theory}</div>")


def _message(text: str = "") -> str:
    return f'<div style="{TEXT};color:#B00020">⚠ {html.escape(text)}</div>' if text else ""


# --- handlers (plain functions of component values) -------------------------------------------------------


def _table(pair: lab.ToyPair) -> list[list]:
    return [[t, round(q, DECIMALS), round(p, DECIMALS)] for t, q, p in zip(pair.tokens, pair.q, pair.p)]


def _number(value, what: str) -> float:
    if value is None or (isinstance(value, str) and not value.strip()):
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} is not a number: {str(value)[:20]!r}") from None


COLUMNS = ("token", "q", "p")  # the editable table, left to right


def _pair_from_table(rows) -> lab.ToyPair:
    rows = [list(r)[:3] + [None] * (3 - len(r)) for r in (rows or [])]  # extra columns are ignored
    tokens = ["" if r[0] is None else str(r[0]) for r in rows]
    q = [_number(r[1], f"q for {t.strip() or 'a new row'}") for t, r in zip(tokens, rows)]
    p = [_number(r[2], f"p for {t.strip() or 'a new row'}") for t, r in zip(tokens, rows)]
    return lab.pair_from_weights(tokens, p, q)


def _sample(pair: lab.ToyPair, n, sampler: str, seed) -> tuple[str, object]:
    try:
        mc = lab.monte_carlo(pair, int(n), sampler, int(seed or 0))
    except ValueError as e:
        return _message(str(e)), lab_charts.histogram_figure(pair, None)
    return histogram_html(mc), lab_charts.histogram_figure(pair, mc)


def show_pair(pair: lab.ToyPair, n, sampler, seed, message: str = ""):
    """Everything the playground shows for a pair: table, message, readout, chart, and a fresh histogram."""
    pg = lab.playground(pair)
    return (_table(pair), pair, _message(message), playground_html(pg), lab_charts.playground_figure(pg),
            *_sample(pair, n, sampler, seed))


def on_cell_edit(rows, pair: lab.ToyPair, n, sampler, seed, evt: gr.EditData):
    """One cell changed: that value stays, the rest of its column rescales."""
    row, col = evt.index
    try:
        if len(rows or []) != len(pair.tokens):  # rows were added or removed since the last update
            new = _pair_from_table(rows)
        else:
            value = str(evt.value) if col == 0 else _number(evt.value, f"{COLUMNS[col]} for {pair.tokens[row]}")
            new = lab.edit_pair(pair, COLUMNS[col], row, value)
    except ValueError as e:  # keep the last good pair, and say why
        return show_pair(pair, n, sampler, seed, str(e))
    return show_pair(new, n, sampler, seed)


def on_table_input(rows, pair: lab.ToyPair, n, sampler, seed):
    """Rows added or removed: scale each column to sum to 1. (Cell edits arrive through on_cell_edit.)"""
    if len(rows or []) == len(pair.tokens):
        return (gr.skip(),) * 7  # one per output of show_pair
    try:
        return show_pair(_pair_from_table(rows), n, sampler, seed)
    except ValueError as e:
        return show_pair(pair, n, sampler, seed, str(e))


def on_sample(pair: lab.ToyPair, n, sampler, seed):
    """Sample with this seed, then move the seed on so the next press draws fresh rounds."""
    return (*_sample(pair, n, sampler, seed), int(seed or 0) + 1)


def on_explore(alpha, k, c, trace: Trace | None):
    ex = lab.explore(float(alpha), int(k), float(c))
    point = lab.measured_point(trace)
    return (explorer_html(ex), lab_charts.explorer_figure(ex, point), lab_charts.rounds_figure(ex, point),
            trace_html(trace, point))


def on_upload(raw: bytes | None):
    if raw is None:
        return gr.skip(), ""
    try:
        return load_trace(raw), ""
    except ValueError as e:
        return gr.skip(), _message(str(e))


def sliders_from_trace(trace: Trace | None, c_max: float):
    """(α, K, c, message): the explorer's sliders set to what the trace measured, to the sliders' step."""
    point = lab.measured_point(trace)
    if point is None:
        return gr.skip(), gr.skip(), gr.skip(), _message("no trace with rounds to take α, K and c from")
    if point.c is None:
        return round(point.alpha, 2), min(point.k, lab.K_MAX), gr.skip(), _message("this trace drafted nothing")
    note = f"measured c = {point.c:.2f} is off the slider; set to {c_max}" if point.c > c_max else ""
    return round(point.alpha, 2), min(point.k, lab.K_MAX), round(min(point.c, c_max), 2), _message(note)


# --- drafters compared: the one part of the lab that runs the models ---------------------------------------


@gpu
def stream_comparison(engine, prompt: str, settings: RunSettings, ks: tuple[int, ...]):
    """The model-bound part: one CompareRow per finished run (plain data, safe to send to the page)."""
    yield from compare.compare_drafters(engine, prompt, settings, ks)


def comparison_status(rows: list[compare.CompareRow], ks: tuple[int, ...], seconds: float) -> str:
    """Progress while running ("3 of 9 runs … next: prompt lookup at K = 2"), a verdict once done."""
    planned, done = compare.plan(ks), len(rows)
    total = len(planned)
    if done < total:
        drafter, k = planned[done]
        return (f'<div style="{TEXT}">Running… {done} of {total} runs done in {seconds:.0f} s; next: '
                f"{html.escape(compare.LABELS[drafter])} at K = {k}.</div>")
    best = max(rows[1:], key=lambda r: r.speedup)  # rows[0] is the target alone
    return (f'<div style="{TEXT}">✓ {total} runs in {seconds:.0f} s. Fastest: '
            f"<b>{html.escape(best.label)} at K = {best.k}, {best.speedup:.2f}×</b> the target alone "
            f"({best.tokens_per_s:.2f} vs {rows[0].tokens_per_s:.2f} tokens/s), α = {best.acceptance_rate:.2f}, "
            f"{best.tokens_per_pass:.2f} tokens per target pass.</div>")


def compare_handler(get_engine: EngineLoader | None):
    """The Compare button's generator: -> status, table, chart after each finished run."""

    def run(prompt, ks, max_new_tokens, temperature, preset, progress=gr.Progress()):
        try:
            if not isinstance(prompt, str) or not prompt.strip():
                raise ValueError("the prompt is empty: type one, or pick an example above")
            ks = compare.check_ks(ks)
            settings = RunSettings(temperature=_number(temperature, "temperature"),
                                   max_new_tokens=int(_number(max_new_tokens, "max new tokens")))
            if get_engine is None:
                raise ValueError("this page has no models: compare drafters in the app (python app.py)")
            engine = get_engine(preset, lambda fraction, message: progress(fraction, desc=message))
            engine.encode(prompt, replace(settings, k=ks[-1]))  # too long for the context: say so before any run
        except Exception as e:  # a bad value, or a pair that failed to load
            yield _message(_failure(e)), gr.skip(), gr.skip()
            return
        rows, started = [], time.perf_counter()
        try:
            for row in stream_comparison(engine, prompt, settings, ks):
                rows.append(row)
                yield (comparison_status(rows, ks, time.perf_counter() - started),
                       [compare.cells(r) for r in rows], lab_charts.compare_figure(rows))
        except Exception as e:  # a model failure mid-run: the rows so far stay on the page
            done = f"{len(rows)} run{'s' * (len(rows) != 1)}"
            yield _message(f"the comparison stopped after {done}: {_failure(e)}"), gr.skip(), gr.skip()

    return run


def _failure(e: Exception) -> str:
    """Our ValueErrors are written for people; anything else is named by its type."""
    return str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"


# --- layout, then events ----------------------------------------------------------------------------------


def _heading(title: str, text: str) -> None:
    gr.HTML(f"<h2>{title}</h2>")  # HTML, not Markdown: one component type less for every page load to fetch
    gr.HTML(f'<p style="{TEXT}">{text}</p>')


@dataclass
class Lab:
    """The components the app may want to reach."""

    pair: gr.State
    trace: gr.State  # the trace the explorer measures: the app's latest, or an uploaded one
    alpha: gr.Slider
    k: gr.Slider
    c: gr.Slider


def build_lab(trace_state: gr.State | None = None, preset: gr.components.Component | None = None,
              get_engine: EngineLoader | None = None) -> Lab:
    """The lab's three sections. `trace_state`: the app's trace, measured by the explorer. `preset` (the app's
    pair dropdown) and `get_engine(preset, progress)` (its process-wide loader) feed the drafter comparison;
    without them the comparison says it has no models."""
    pair0, trace0 = lab.SEED_EXAMPLE, trace_state.value if trace_state is not None else None
    sampling0 = (10_000, "correct", 0)  # N, sampler, seed
    table0, _, _, readout0, pg_plot0, hist_readout0, hist_plot0 = show_pair(pair0, *sampling0)
    alpha0, k0, c0 = 0.7, 4, 0.05  # the worked quiz: 2.77 tokens per pass, 2.31x
    ex_readout0, curves0, rounds0, trace_readout0 = on_explore(alpha0, k0, c0, trace0)
    sampler_choices = [(label, key) for key, (label, _) in lab.SAMPLERS.items()]

    with gr.Column(elem_id="lab-playground"):
        _heading("1 · The p/q playground: one draft position, exactly",
                 "Edit q (draft) and p (target): the value you type stays and the rest of its column rescales to sum "
                 "to 1. A draft x ~ q is kept with probability min(1, p(x)/q(x)); otherwise the token is drawn from "
                 "the residual norm(max(0, p − q)). The two routes add up to exactly p.")
        with gr.Row():
            presets = {name: gr.Button(name) for name in lab.PRESETS}
        table = gr.Dataframe(value=table0, headers=["token", "q (draft)", "p (target)"],
                             datatype=["str", "number", "number"], type="array", interactive=True,
                             label="vocabulary: 4 to 8 tokens (rows can be added and removed)",
                             elem_id="lab-table")
        message = gr.HTML(elem_id="lab-message")
        readout = gr.HTML(readout0, elem_id="lab-playground-readout")
        pg_plot = gr.Plot(pg_plot0, show_label=False, elem_id="lab-playground-plot")
        send_alpha = gr.Button("Use this α in the explorer ↓")

        gr.HTML("<h3>Sample N rounds and compare with p</h3>")
        with gr.Row():
            n = gr.Radio([(f"{size:,}", size) for size in SAMPLE_SIZES], value=sampling0[0], label="N rounds")
            sampler = gr.Radio(sampler_choices, value=sampling0[1], label="sampler", elem_id="lab-sampler")
            seed = gr.Number(sampling0[2], precision=0, minimum=0, label="seed", elem_id="lab-seed")
        sample = gr.Button("Sample N times", variant="primary", elem_id="lab-sample")
        hist_readout = gr.HTML(hist_readout0, elem_id="lab-histogram-text")
        hist_plot = gr.Plot(hist_plot0, show_label=False, elem_id="lab-histogram")

    with gr.Column(elem_id="lab-explorer"):
        _heading("2 · The α / K / c explorer",
                 "α: the chance a draft token is accepted. K: draft tokens per round. c: the cost of one draft step "
                 "over one target pass. Each round costs K·c + 1 target passes and yields 1 … K+1 tokens.")
        with gr.Row():
            alpha = gr.Slider(0, 1, alpha0, step=0.01, label="α (acceptance rate)", elem_id="lab-alpha")
            k = gr.Slider(1, lab.K_MAX, k0, step=1, label="K (draft tokens per round)", elem_id="lab-k")
            c = gr.Slider(0, 1, c0, step=0.01, label="c (draft step / target pass)", elem_id="lab-c")
        ex_readout = gr.HTML(ex_readout0, elem_id="lab-explorer-readout")
        curves = gr.Plot(curves0, show_label=False, elem_id="lab-explorer-curves")
        rounds = gr.Plot(rounds0, show_label=False, elem_id="lab-explorer-rounds")
        gr.HTML("<h3>Theory beside measurement</h3>")
        with gr.Row():
            upload = gr.File(label="Upload a trace JSON", file_types=[".json"], type="binary", elem_id="lab-upload")
            with gr.Column():
                from_trace = gr.Button("Set α, K, c from the trace")
                trace_message = gr.HTML(elem_id="lab-trace-message")
        trace_readout = gr.HTML(trace_readout0, elem_id="lab-trace")

    with gr.Column(elem_id="lab-compare"):
        _heading("3 · Drafters compared",
                 "The real engine, once per drafter and K on one prompt, beside the target alone timed in the same "
                 "call. <b>Draft model</b>: the small model proposes K tokens. <b>Prompt lookup</b>: no second "
                 "model; it copies the K tokens that followed the latest earlier occurrence of the text's last few "
                 "tokens (from the prompt or the output so far). Its q is a point mass, so a copied token x is "
                 "accepted with probability p(x): the output still follows the target exactly. It shines where the "
                 "answer repeats the prompt. On a 2-core CPU the packaged pair takes 10–15 s a run: the default "
                 "K = 1, 2, 4, 8 (9 runs with the baseline) took about 1.5 minutes at 32 new tokens, 2 to 2.5 at 48.")
        cmp_prompt = gr.Textbox(REWRITE_PROMPT, label="Prompt", lines=4, max_lines=16, elem_id="lab-compare-prompt")
        gr.Examples([[text] for text in COMPARE_EXAMPLES.values()], inputs=[cmp_prompt], label="Example prompts",
                    example_labels=list(COMPARE_EXAMPLES))
        with gr.Row():
            cmp_ks = gr.CheckboxGroup(list(compare.ALL_KS), value=list(compare.DEFAULT_KS), elem_id="lab-compare-ks",
                                      label="K values (each adds one run per drafter)")
            cmp_tokens = gr.Slider(4, 128, 32, step=4, label="Max new tokens", elem_id="lab-compare-tokens")
            cmp_temperature = gr.Slider(0, 1.5, 0, step=0.05, label="Temperature (0 = greedy; seed 0)",
                                        elem_id="lab-compare-temperature")
        with gr.Row():
            cmp_run = gr.Button("Compare drafters", variant="primary", elem_id="lab-compare-run")
            cmp_stop = gr.Button("Stop", elem_id="lab-compare-stop")
        cmp_status = gr.HTML(elem_id="lab-compare-status")
        cmp_table = gr.Dataframe(headers=list(compare.HEADERS), datatype="str", type="array", interactive=False,
                                 label="runs, in the order they were made", elem_id="lab-compare-table")
        cmp_plot = gr.Plot(empty_figure("Press “Compare drafters”: a line per drafter grows as its runs finish.",
                                        lab_charts.FONT_SIZE), show_label=False, elem_id="lab-compare-chart")

    pair = gr.State(pair0)
    trace = gr.State(trace0)
    preset = preset if preset is not None else gr.State(None)  # standalone: a loader may not need a preset

    # events, all in one place; the lab's events are page-internal, hidden from the public API
    quiet = dict(api_visibility="private")
    pair_outputs = [table, pair, message, readout, pg_plot, hist_readout, hist_plot]
    sampling = [n, sampler, seed]
    table.edit(on_cell_edit, [table, pair, *sampling], pair_outputs, **quiet)
    table.input(on_table_input, [table, pair, *sampling], pair_outputs, **quiet)
    for name, button in presets.items():
        button.click(lambda *s, p=lab.PRESETS[name]: show_pair(p, *s), sampling, pair_outputs, **quiet)
    sample.click(on_sample, [pair, *sampling], [hist_readout, hist_plot, seed], **quiet)
    gr.on([n.change, sampler.change], _sample, [pair, *sampling], [hist_readout, hist_plot], **quiet)
    send_alpha.click(lambda p: round(lab.overlap(p.p, p.q), 2), pair, alpha, **quiet)

    gr.on([alpha.change, k.change, c.change, trace.change], on_explore, [alpha, k, c, trace],
          [ex_readout, curves, rounds, trace_readout], trigger_mode="always_last", **quiet)
    upload.upload(on_upload, upload, [trace, trace_message], **quiet)
    if trace_state is not None:
        trace_state.change(lambda t: t, trace_state, trace, trigger_mode="always_last", **quiet)
        upload.clear(lambda t: (t, ""), trace_state, [trace, trace_message], **quiet)
    else:
        upload.clear(lambda: (None, ""), None, [trace, trace_message], **quiet)
    from_trace.click(lambda t: sliders_from_trace(t, c.maximum), trace, [alpha, k, c, trace_message], **quiet)

    # the comparison is public (api_name) and queues with the app's Generate: one model run at a time
    comparing = cmp_run.click(compare_handler(get_engine), [cmp_prompt, cmp_ks, cmp_tokens, cmp_temperature, preset],
                              [cmp_status, cmp_table, cmp_plot], api_name="compare_drafters",
                              show_progress_on=[cmp_status], concurrency_id="model", concurrency_limit=1)
    stopped = _message("stopped: the runs so far stay in the table (a run in progress finishes first)")
    cmp_stop.click(lambda: stopped, None, cmp_status, cancels=[comparing], **quiet)
    return Lab(pair, trace, alpha, k, c)


def demo(get_engine: EngineLoader | None = None, preset: str | None = None) -> gr.Blocks:
    """The lab on its own page (for tests and for working on it); without `get_engine` the comparison has no
    models and says so."""
    with gr.Blocks(title="specviz lab") as blocks:
        gr.HTML("<h1>specviz lab: speculative decoding by hand</h1>")
        build_lab(None, gr.State(preset), get_engine)
    return blocks


if __name__ == "__main__":
    from .models import DEFAULT_PRESET
    from .ui import default_engine_loader, launch_kwargs  # the page's theme, palette and CSS; the packaged pair

    demo(default_engine_loader, DEFAULT_PRESET).launch(**launch_kwargs())

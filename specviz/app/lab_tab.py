"""The Lab tab: the p/q playground with its Monte Carlo, the α / K / c explorer beside a trace's measurement, and
the drafters compared on the real engine.

`build_lab(trace_state, preset, get_engine)` lays out its three parts inside the current gr.Blocks context (the
app calls it inside `with gr.Tab("Lab"):`, passing its trace, its pair dropdown and its process-wide model
loader); each part wires its own events, which are page-internal except the comparison (`compare_drafters`); its
sections are laid out in app/lab_layout.py.
`demo()` wraps it in a page of its own:

    python -m specviz.app.lab_tab
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import gradio as gr

from specviz.lab import compare
from specviz.lab import explorer
from specviz.measure import measured
from specviz.lab import joint
from specviz.lab import playground
from specviz.lab import charts as lab_charts
from specviz.view.charts import FONT_SIZE, empty_figure
from specviz.engine import RunSettings
from specviz.app.errors import message_of, refused_by_zerogpu
from specviz.lab.readouts import (RESTART, REVEAL, TREE_NOTE, card_html, card_steps, comparison_status, covered_html,
                         exactness_html, explorer_html, histogram_html, joint_html, playground_html,
                         trace_html, warning_html)
from specviz.settings.bounds import MAX_K, check_prompt_given
from specviz.app.inputs import setting
from specviz.app.sections import panes, section
from specviz.app.lab_layout import (compare_prompt_section, compare_runs_section, explorer_charts_section,
                                    explorer_terms_section, sampling_section, theory_section, toy_pair_section)
from specviz.app.serving import MODEL_RUNS, EngineLoader, engine_ref, stream_comparison
from specviz.record.stats import drafted_a_tree
from specviz.record.trace import Trace
from specviz.record.load import load_trace

DECIMALS = 4  # the editable table shows probabilities to this many places
COLUMNS = ("token", "q", "p")  # the editable table, left to right
PRIVATE = dict(api_visibility="private")  # the Lab's events, but the comparison, are page-internal
CARD_STEPS = len(card_steps(explorer.QUESTION))
COVERED = "Covered until the card above is fully revealed, or a slider moves"


# --- handlers (plain functions of component values) -------------------------------------------------------


def _table(pair: playground.ToyPair) -> list[list]:
    return [[t, round(q, DECIMALS), round(p, DECIMALS)] for t, q, p in zip(pair.tokens, pair.q, pair.p)]


def _number(value, what: str) -> float:
    if value is None or (isinstance(value, str) and not value.strip()):
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} is not a number: {str(value)[:20]!r}") from None



def _pair_from_table(rows) -> playground.ToyPair:
    rows = [list(r)[:3] + [None] * (3 - len(r)) for r in (rows or [])]  # extra columns are ignored
    tokens = ["" if r[0] is None else str(r[0]) for r in rows]
    q = [_number(r[1], f"q for {t.strip() or 'a new row'}") for t, r in zip(tokens, rows)]
    p = [_number(r[2], f"p for {t.strip() or 'a new row'}") for t, r in zip(tokens, rows)]
    return playground.pair_from_weights(tokens, p, q)


def _sample(pair: playground.ToyPair, n, sampler: str, seed) -> tuple[str, object]:
    try:
        mc = playground.monte_carlo(pair, int(n), sampler, int(seed or 0))
    except ValueError as e:
        return warning_html(str(e)), lab_charts.histogram_figure(pair, None)
    return histogram_html(mc), lab_charts.histogram_figure(pair, mc)


def show_toy_pair(pair: playground.ToyPair, n, sampler, seed, message: str = ""):
    """Everything the playground shows for a pair: table, message, readout, chart, a fresh histogram, and why
    the output is exactly p with its numbers."""
    pg = playground.playground(pair)
    return (_table(pair), pair, warning_html(message), playground_html(pg), lab_charts.playground_figure(pg),
            *_sample(pair, n, sampler, seed), exactness_html(pg))


def on_two_positions(pair: playground.ToyPair, n, sampler, seed):
    """The first two tokens of N runs against the target's joint distribution."""
    try:
        mc = joint.two_positions(pair, int(_number(n, "N")), sampler, int(_number(seed, "seed")))
    except ValueError as e:
        return warning_html(str(e)), gr.skip()
    return joint_html(mc), lab_charts.joint_figure(mc)


def on_cell_edit(rows, pair: playground.ToyPair, n, sampler, seed, evt: gr.EditData):
    """One cell changed: that value stays, the rest of its column rescales."""
    row, col = evt.index
    try:
        if len(rows or []) != len(pair.tokens):  # rows were added or removed since the last update
            new = _pair_from_table(rows)
        else:
            value = str(evt.value) if col == 0 else _number(evt.value, f"{COLUMNS[col]} for {pair.tokens[row]}")
            new = playground.edit_pair(pair, COLUMNS[col], row, value)
    except ValueError as e:  # keep the last good pair, and say why
        return show_toy_pair(pair, n, sampler, seed, str(e))
    return show_toy_pair(new, n, sampler, seed)


def on_table_input(rows, pair: playground.ToyPair, n, sampler, seed):
    """Rows added or removed: scale each column to sum to 1. (Cell edits arrive through on_cell_edit.)"""
    if len(rows or []) == len(pair.tokens):
        return gr.skip()  # every output as it is
    try:
        return show_toy_pair(_pair_from_table(rows), n, sampler, seed)
    except ValueError as e:
        return show_toy_pair(pair, n, sampler, seed, str(e))


def on_sample(pair: playground.ToyPair, n, sampler, seed):
    """Sample with this seed, then move the seed on so the next press draws fresh rounds."""
    return (*_sample(pair, n, sampler, seed), int(seed or 0) + 1)


def on_explore(alpha, k, c, v, trace: Trace | None, revealed: bool):
    """The readout, both charts and the trace's readout; the first three covered while the sliders sit at the
    card's question and the card is not fully revealed (they would give its answer away)."""
    try:
        ex = explorer.explore(_number(alpha, "α"), int(_number(k, "K")), _number(c, "c"), _number(v, "v"))
    except ValueError as e:  # a value no slider offers (an API client, a typed number): say so, keep the rest
        return warning_html(str(e)), gr.skip(), gr.skip(), gr.skip()
    point = measured.measured_point(trace)
    if explorer.QUESTION.asks(ex) and not revealed:
        cover = empty_figure(COVERED, FONT_SIZE)
        return covered_html(explorer.QUESTION), cover, cover, trace_html(trace, point)
    return (explorer_html(ex), lab_charts.explorer_figure(ex, point), lab_charts.rounds_figure(ex, point),
            trace_html(trace, point))


def on_reveal(shown):
    """One more step of the card; past the last, the card says it is fully revealed. -> shown, card, revealed"""
    shown = min(int(shown or 0) + 1, CARD_STEPS + 1)
    return shown, card_html(explorer.QUESTION, shown), shown >= CARD_STEPS


def on_restart():
    return 0, card_html(explorer.QUESTION, 0), False


def on_upload(raw: bytes | None):
    if raw is None:
        return gr.skip(), ""
    try:
        return load_trace(raw), ""
    except ValueError as e:
        return gr.skip(), warning_html(str(e))


def sliders_from_trace(trace: Trace | None, c_max: float, v_max: float):
    """(α, K, c, v, message): the explorer's sliders set to what the trace measured, to the sliders' step."""
    point = measured.measured_point(trace)
    if point is None:
        return *[gr.skip()] * 4, warning_html(TREE_NOTE if trace and trace.rounds and
                                              drafted_a_tree(trace) else
                                              "no trace with rounds to take α, K, c and v from")
    alpha, k = round(point.alpha, 2), min(point.k, MAX_K)
    if point.c is None:
        return alpha, k, gr.skip(), gr.skip(), warning_html("this trace drafted nothing")
    notes = [f"measured c = {point.c:.2f} is off the slider; set to {c_max}"] * (point.c > c_max)
    v = gr.skip()
    if point.v is None:
        notes.append("v stays as it is: the trace has no baseline to measure a one-token step")
    else:
        v = round(min(max(point.v, 0.5), v_max), 2)
        notes += [f"measured v = {point.v:.2f} is off the slider; set to {v}"] * (v != round(point.v, 2))
    return alpha, k, round(min(point.c, c_max), 2), v, warning_html("; ".join(notes))


# --- drafters compared: the one part of the lab that runs the models ---------------------------------------


def compare_handler(get_engine: EngineLoader | None):
    """The Compare button's generator: -> status, table, chart after each finished run."""

    def run(prompt, ks, max_new_tokens, temperature, preset, fractions=(0.5,), progress=gr.Progress()):
        try:
            check_prompt_given(prompt)
            ks = compare.check_ks(ks)
            # the request contract, within the page's bounds, as Generate asks (K and the drafter vary per run)
            settings = RunSettings(temperature=setting(temperature, "temperature"),
                                   max_new_tokens=setting(max_new_tokens, "max_new_tokens"))
            if get_engine is None:
                raise ValueError("this page has no models: compare drafters in the app (python app.py)")
            engine = get_engine(preset, lambda fraction, text: progress(fraction, desc=text))
            engine.encode(prompt, replace(settings, k=ks[-1]))  # too long for the context: say so before any run
            layers = compare.layer_counts(engine, [float(f) for f in fractions or ()]) or (0,)
            drafters, notes = compare.runnable(engine)  # heads not trained yet: left out, and the page says how
        except Exception as e:  # a bad value, or a pair that failed to load
            yield warning_html(message_of(e)), gr.skip(), gr.skip()
            return
        rows, started = [], time.perf_counter()
        try:
            for row in stream_comparison(engine_ref(get_engine, preset), prompt, settings, ks, layers, drafters):
                rows.append(row)
                yield (comparison_status(rows, ks, time.perf_counter() - started, layers, drafters, tuple(notes)),
                       [compare.cells(r) for r in rows], lab_charts.compare_figure(rows))
        except Exception as e:  # a model failure mid-run, or ZeroGPU's refusal: the rows so far stay on the page
            done = f"{len(rows)} run{'s' * (len(rows) != 1)}"
            what = "did not run" if refused_by_zerogpu(e) else f"stopped after {done}"
            yield warning_html(f"the comparison {what}: {message_of(e)}"), gr.skip(), gr.skip()

    return run


# --- layout and events, one section at a time --------------------------------------------------------------


@dataclass
class Lab:
    """The components the app may want to reach."""

    pair: gr.State
    trace: gr.State  # the trace the explorer measures: the app's latest, or an uploaded one
    alpha: gr.Slider
    k: gr.Slider
    c: gr.Slider
    v: gr.Slider


def _playground_section() -> tuple[gr.State, gr.Button]:
    """1: one draft position with an editable toy pair, why its output is exactly p, and N rounds sampled against p.
    -> (pair, send α)"""
    pair0, sampling0 = playground.SEED_EXAMPLE, (10_000, "correct", 0)  # N, sampler, seed
    table0, _, _, readout0, pg_plot0, hist_readout0, hist_plot0, exact0 = show_toy_pair(pair0, *sampling0)
    toy_pairs, table, note, readout, pg_plot = toy_pair_section(table0, readout0, pg_plot0)
    with section():  # its title is the identities' own heading (readouts.exactness_html)
        exactness = gr.HTML(exact0, elem_id="lab-exactness-lines")
        send_alpha = gr.Button("Use this α in the explorer ↓")
    n, sampler, seed, sample, hist_readout, hist_plot = sampling_section(sampling0, hist_readout0, hist_plot0)
    pair = gr.State(pair0)

    shown = [table, pair, note, readout, pg_plot, hist_readout, hist_plot, exactness]
    sampling = [n, sampler, seed]
    table.edit(on_cell_edit, [table, pair, *sampling], shown, **PRIVATE)
    table.input(on_table_input, [table, pair, *sampling], shown, **PRIVATE)
    for name, button in toy_pairs.items():
        button.click(lambda *s, toy=playground.TOY_PAIRS[name]: show_toy_pair(toy, *s), sampling, shown, **PRIVATE)
    sample.click(on_sample, [pair, *sampling], [hist_readout, hist_plot, seed], **PRIVATE)
    gr.on([n.change, sampler.change], _sample, [pair, *sampling], [hist_readout, hist_plot], **PRIVATE)
    _two_positions_section(pair, n, seed)
    return pair, send_alpha


def _two_positions_section(pair: gr.State, n: gr.Radio, seed: gr.Number) -> None:
    """The first two tokens together: the sequential case, with a bug that only shows there."""
    with section():
        gr.HTML("<h3>Two positions: the first two tokens together</h3><p style=\"font-size:20px\">Position 2's p and "
                "q depend on the first token (the pair's p and q rotated by its place in the table), as in a real "
                "text. A round drafts two tokens and tests them in turn; after a rejection at position 1, the next "
                "round gives the second token. Correct sampling matches the target's joint p(a)·p(b | a).</p>")
        with panes():
            with gr.Column():
                sampler = gr.Radio([(label, key) for key, label in joint.JOINT_SAMPLER_LABELS.items()],
                                   value="correct", label="sampler", elem_id="lab-joint-sampler")
                run = gr.Button("Sample the first two tokens N times", variant="primary", elem_id="lab-joint-run")
                readout = gr.HTML(elem_id="lab-joint-text")
            plot = gr.Plot(None, show_label=False, elem_id="lab-joint")
    run.click(on_two_positions, [pair, n, sampler, seed], [readout, plot], **PRIVATE)
    pair.change(lambda: ("", None), None, [readout, plot], **PRIVATE)  # a new pair: nothing until pressed


def _card_section() -> gr.State:
    """The "test yourself" card, one step per press. Its buttons are real buttons, so Tab reaches them and Enter or
    space presses them; a clicker's → / PageDown need the page's stepping.js (or the presenter view's sections.js).
    -> revealed (every step shown)"""
    with section():  # its title is the card's own heading (readouts.card_html)
        card = gr.HTML(card_html(explorer.QUESTION, 0), elem_id="lab-card-box")
        with gr.Row():
            reveal = gr.Button(REVEAL, variant="primary", scale=0, min_width=240, elem_id="lab-card-reveal")
            restart = gr.Button(RESTART, scale=0, min_width=160, elem_id="lab-card-restart")
    shown, revealed = gr.State(0), gr.State(False)
    # "multiple": every press counts, however quickly a clicker sends them (the default drops presses while busy)
    reveal.click(on_reveal, shown, [shown, card, revealed], trigger_mode="multiple", **PRIVATE)
    restart.click(on_restart, None, [shown, card, revealed], **PRIVATE)
    return revealed


def _explorer_section(trace_state: gr.State | None) -> tuple[gr.State, gr.Slider, gr.Slider, gr.Slider, gr.Slider]:
    """2: the card, then α, K, c and v against tokens per pass and speedup, with a trace's measured point.
    -> trace, α, K, c, v"""
    trace0 = trace_state.value if trace_state is not None else None
    q = explorer.QUESTION  # the sliders open at the card's question, covered until it is revealed
    alpha0, k0, c0, v0 = q.alpha, q.k, q.c, 1.0
    ex_readout0, curves0, rounds0, trace_readout0 = on_explore(alpha0, k0, c0, v0, trace0, False)
    explorer_terms_section()
    revealed = _card_section()
    alpha, k, c, v, ex_readout, curves, rounds = explorer_charts_section(alpha0, k0, c0, v0, ex_readout0, curves0,
                                                                         rounds0)
    upload, from_trace, trace_message, trace_readout = theory_section(trace_readout0)
    trace = gr.State(trace0)

    gr.on([alpha.change, k.change, c.change, v.change, trace.change, revealed.change], on_explore,
          [alpha, k, c, v, trace, revealed], [ex_readout, curves, rounds, trace_readout], trigger_mode="always_last",
          **PRIVATE)
    upload.upload(on_upload, upload, [trace, trace_message], **PRIVATE)
    if trace_state is not None:  # the app's latest trace, until a file is uploaded here
        trace_state.change(lambda t: t, trace_state, trace, trigger_mode="always_last", **PRIVATE)
        upload.clear(lambda t: (t, ""), trace_state, [trace, trace_message], **PRIVATE)
    else:
        upload.clear(lambda: (None, ""), None, [trace, trace_message], **PRIVATE)
    from_trace.click(lambda t: sliders_from_trace(t, c.maximum, v.maximum), trace, [alpha, k, c, v, trace_message],
                     **PRIVATE)
    return trace, alpha, k, c, v


def _compare_section(preset, get_engine: EngineLoader | None) -> None:
    """3: the real engine once per drafter and K, beside the target alone. Its one public event."""
    prompt = compare_prompt_section()
    ks, layers, tokens, temperature, run, stop, status, table, chart = compare_runs_section()

    # public (api_name), and queued with the app's Generate: the model runs share one limit (serving)
    comparing = run.click(compare_handler(get_engine), [prompt, ks, tokens, temperature, preset, layers],
                          [status, table, chart], api_name="compare_drafters", show_progress_on=[status],
                          concurrency_id=MODEL_RUNS, concurrency_limit=1)
    stopped = warning_html("stopped: the runs so far stay in the table (a run in progress finishes first)")
    stop.click(lambda: stopped, None, status, cancels=[comparing], **PRIVATE)


def build_lab(trace_state: gr.State | None = None, preset: gr.components.Component | None = None,
              get_engine: EngineLoader | None = None) -> Lab:
    """The Lab's three parts, each of one or more sections (app/sections.py: a screen each in the presenter
    view). `trace_state`: the app's trace, measured by the explorer. `preset` (the app's pair dropdown) and
    `get_engine(preset, progress)` (its process-wide loader) feed the drafter comparison; without them the comparison
    says it has no models."""
    with gr.Column(elem_id="lab-playground"):
        pair, send_alpha = _playground_section()
    with gr.Column(elem_id="lab-explorer"):
        trace, alpha, k, c, v = _explorer_section(trace_state)
    with gr.Column(elem_id="lab-compare"):
        _compare_section(preset if preset is not None else gr.State(None), get_engine)
    send_alpha.click(lambda toy: round(playground.overlap(toy.p, toy.q), 2), pair, alpha, **PRIVATE)
    return Lab(pair, trace, alpha, k, c, v)


def demo(get_engine: EngineLoader | None = None, preset: str | None = None) -> gr.Blocks:
    """The lab on its own page (for tests and for working on it); without `get_engine` the comparison has no
    models and says so."""
    with gr.Blocks(title="specviz lab") as blocks:
        gr.HTML("<h1>specviz lab: speculative decoding by hand</h1>")
        build_lab(None, gr.State(preset), get_engine)
    return blocks


if __name__ == "__main__":
    from specviz.models.pairs import DEFAULT_PRESET
    from specviz.app.pair_cache import default_engine_loader
    from specviz.app.serving import launch_kwargs  # the page's theme, palette and CSS; the packaged pair

    demo(default_engine_loader, DEFAULT_PRESET).launch(**launch_kwargs())

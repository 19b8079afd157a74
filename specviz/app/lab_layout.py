"""The Lab's sections laid out: each function below builds one or two sections of the Lab (app/sections.py: a screen
each in the presenter view) from the values they open with and returns their components; app/lab_tab.py wires their
events.
"""

from __future__ import annotations

import gradio as gr

from specviz.app.sections import panes, section
from specviz.lab import compare, playground
from specviz.lab.readouts import heading_html
from specviz.settings.bounds import MAX_K
from specviz.settings.prompts import COMPARE_PROMPTS, REWRITE_PROMPT
from specviz.view.charts import FONT_SIZE, empty_figure

SAMPLE_SIZES = [100, 1_000, 10_000, 100_000]  # the N rounds the playground samples, to choose from


def toy_pair_section(table0, readout0, pg_plot0) -> tuple:
    """The playground's first two sections: the toy pairs, the editable table and its readout; then its chart.
    -> toy pair buttons by name, table, note, readout, chart"""
    with section():
        gr.HTML(heading_html(
            "1 · The p/q playground: one draft position, exactly",
            "Edit q (draft) and p (target): the value you type stays and the rest of its column rescales to sum to 1. "
            "A draft x ~ q is kept with probability min(1, p(x)/q(x)); otherwise the token is drawn from the residual "
            "norm(max(0, p − q)). The two routes add up to exactly p."))
        with gr.Row():
            toy_pairs = {name: gr.Button(name) for name in playground.TOY_PAIRS}
        with panes():
            with gr.Column():
                table = gr.Dataframe(value=table0, headers=["token", "q (draft)", "p (target)"],
                                     datatype=["str", "number", "number"], type="array", interactive=True,
                                     label="vocabulary: 4 to 8 tokens (rows can be added and removed)",
                                     elem_id="lab-table")
                note = gr.HTML(elem_id="lab-message")
            readout = gr.HTML(readout0, elem_id="lab-playground-readout")
    with section():  # the chart a screen of its own: beside the tables it had a fifth of one
        gr.HTML("<h3>The two routes, stacked up to p</h3>")
        pg_plot = gr.Plot(pg_plot0, show_label=False, elem_id="lab-playground-plot")
    return toy_pairs, table, note, readout, pg_plot


def sampling_section(sampling0: tuple, hist_readout0, hist_plot0) -> tuple:
    """N rounds sampled against p: its settings, button, readout and histogram.
    -> N, sampler, seed, sample button, readout, histogram"""
    with section():
        gr.HTML("<h3>Sample N rounds and compare with p</h3>")
        with panes():
            with gr.Column():
                with gr.Row():
                    n = gr.Radio([(f"{size:,}", size) for size in SAMPLE_SIZES], value=sampling0[0],
                                 label="N rounds")
                    sampler = gr.Radio([(label, key) for key, label in playground.SAMPLER_LABELS.items()],
                                       value=sampling0[1], label="sampler", elem_id="lab-sampler")
                    seed = gr.Number(sampling0[2], precision=0, minimum=0, label="seed", elem_id="lab-seed")
                sample = gr.Button("Sample N times", variant="primary", elem_id="lab-sample")
                hist_readout = gr.HTML(hist_readout0, elem_id="lab-histogram-text")
            hist_plot = gr.Plot(hist_plot0, show_label=False, elem_id="lab-histogram")
    return n, sampler, seed, sample, hist_readout, hist_plot


def explorer_charts_section(alpha0, k0, c0, v0, ex_readout0, curves0, rounds0) -> tuple:
    """The explorer's sliders and readout over its two charts. -> α, K, c, v, readout, curves, rounds"""
    with section():
        gr.HTML("<h3>Move α, K, c and v: tokens per pass and the speedup</h3>")
        with gr.Row():
            alpha = gr.Slider(0, 1, alpha0, step=0.01, label="α (acceptance rate)", elem_id="lab-alpha")
            k = gr.Slider(1, MAX_K, k0, step=1, label="K (draft tokens per round)", elem_id="lab-k")
            c = gr.Slider(0, 1, c0, step=0.01, label="c (draft step / one-token target step)", elem_id="lab-c")
            v = gr.Slider(0.5, 3, v0, step=0.01, label="v (verify pass / one-token target step; 1 = ideal)",
                          elem_id="lab-v")
        ex_readout = gr.HTML(ex_readout0, elem_id="lab-explorer-readout")
        with panes():  # on a projector the two charts side by side: one above the other, each had a third of it
            curves = gr.Plot(curves0, show_label=False, elem_id="lab-explorer-curves")
            rounds = gr.Plot(rounds0, show_label=False, elem_id="lab-explorer-rounds")
    return alpha, k, c, v, ex_readout, curves, rounds


def compare_prompt_section() -> gr.Textbox:
    """The comparison's first section: what it compares, and the prompt. -> prompt"""
    with section():
        gr.HTML(heading_html(
            "3 · Drafters compared",
            "The real engine, once per drafter and K on one prompt, beside the target alone timed in the same call. "
            "<b>Draft model</b>: the small model proposes K tokens. <b>Prompt lookup</b>: no second model; it copies "
            "the K tokens that followed the latest earlier occurrence of the text's last few tokens (from the prompt "
            "or the output so far). Its q is a point mass, so a copied token x is accepted with probability p(x): the "
            "output still follows the target exactly. It shines where the answer repeats the prompt. <b>The "
            "target's first layers</b> (self-speculation): the target's own first N layers, its final norm and LM "
            "head draft, so one model sits in memory; a model not trained to exit early (Qwen2.5 is not) agrees with "
            "itself rarely at small N, which is why Medusa, EAGLE, multi-token prediction and LayerSkip train their "
            f"draft heads or layers. The default K values ({', '.join(map(str, compare.DEFAULT_KS))}) make "
            f"{len(compare.plan(compare.DEFAULT_KS))} runs, the target alone's included, each taking seconds on a "
            "2-core CPU: the status below times the runs as they finish and says what the rest should take (dated "
            "tokens/s: docs/benchmarks.md, “Drafters compared”)."))
        prompt = gr.Textbox(REWRITE_PROMPT, label="Prompt", lines=4, max_lines=16, elem_id="lab-compare-prompt")
        gr.Examples([[text] for text in COMPARE_PROMPTS.values()], inputs=[prompt], label="Example prompts",
                    example_labels=list(COMPARE_PROMPTS))
    return prompt


def compare_runs_section() -> tuple:
    """The comparison's settings and buttons beside its table and chart. -> Ks, layer shares, max new tokens,
    temperature, run, stop, status, table, chart"""
    with section():
        gr.HTML("<h3>Run the comparison</h3>")
        with panes():
            with gr.Column():
                with gr.Row():
                    ks = gr.CheckboxGroup(list(compare.ALL_KS), value=list(compare.DEFAULT_KS),
                                          elem_id="lab-compare-ks", label="K values (each adds one run per drafter)")
                    layers = gr.CheckboxGroup([("¼", 0.25), ("½", 0.5), ("¾", 0.75)], value=[0.5],
                                              elem_id="lab-compare-layers", label="Self-speculation: the target's "
                                              "first layers, this share of them (a run per share and K)")
                    tokens = gr.Slider(4, 128, 32, step=4, label="Max new tokens", elem_id="lab-compare-tokens")
                    temperature = gr.Slider(0, 1.5, 0, step=0.05, label="Temperature (0 = greedy; seed 0)",
                                            elem_id="lab-compare-temperature")
                with gr.Row():
                    run = gr.Button("Compare drafters", variant="primary", elem_id="lab-compare-run")
                    stop = gr.Button("Stop", elem_id="lab-compare-stop")
                status = gr.HTML(label="Comparison status", elem_id="lab-compare-status")
            with gr.Column():
                table = gr.Dataframe(headers=list(compare.HEADERS), datatype="str", type="array", interactive=False,
                                     label="Runs, in the order they were made", elem_id="lab-compare-table")
                waiting = "Press “Compare drafters”: a line per drafter grows as its runs finish."
                chart = gr.Plot(empty_figure(waiting, FONT_SIZE), label="Speedup and tokens per pass against K",
                                show_label=False, elem_id="lab-compare-chart")
    return ks, layers, tokens, temperature, run, stop, status, table, chart


def explorer_terms_section() -> None:
    """The explorer's title and its terms: α, K, c and v, and the speedup they give."""
    with section():
        gr.HTML(heading_html(
            "2 · The α / K / c / v explorer",
            "α: the chance a draft token is accepted. K: draft tokens per round. c: one draft step, and v: the "
            "target's verify pass over K + 1 tokens, each measured in one-token target steps. A round costs K·c + v "
            "steps and yields 1 … K+1 tokens, so the speedup is E / (K·c + v). v = 1 is the memory-bound ideal, "
            "where reading the weights dominates and checking K tokens costs one step; the curves take one v for "
            "every K."))


def theory_section(trace_readout0: str) -> tuple:
    """A trace's measured α, K, c and v beside the theory. -> upload, "set from the trace", its message, readout"""
    with section():
        gr.HTML("<h3>Theory beside measurement</h3>")
        with gr.Row():
            upload = gr.File(label="Upload a trace JSON", file_types=[".json"], type="binary", elem_id="lab-upload")
            with gr.Column():
                from_trace = gr.Button("Set α, K, c, v from the trace")
                trace_message = gr.HTML(elem_id="lab-trace-message")
        trace_readout = gr.HTML(trace_readout0, elem_id="lab-trace")
    return upload, from_trace, trace_message, trace_readout

"""The Costs tab: what checking K drafts costs, measured on the loaded pair, where a busy server's
batch makes speculation stop paying, as predicted, and as served (app/busy_server.py), and last llama.cpp beside
specviz as recorded (measure/peer_table.py), in sections (app/sections.py: a screen each in the presenter view).
Layout first, then its events; the measurement runs in the model-run group with Generate (one limit for all), is
cached per pair for the process, and shows progress.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from specviz.drafters import DEFAULT
from specviz.measure import cost_charts
from specviz.measure.measured import measured_point
from specviz.record.stats import drafted_a_tree
from specviz.measure.recorded_costs import recorded_costs
from specviz.measure.peer_recording import PeerRecording, recorded_peers
from specviz.measure.peer_table import peer_table, peer_words
from specviz.app.busy_server import build_busy_server
from specviz.app.errors import message_of
from specviz.app.sections import panes, section
from specviz.lab.readouts import heading_html, warning_html
from specviz.settings.bounds import MAX_K, Bound
from specviz.view import notices
from specviz.app.serving import MODEL_RUNS, CostCache, EngineLoader, Step, engine_ref, measure_pair_costs

EXPLAIN = (
    "To produce one token, a decoding step reads every weight of the model from memory. Where that read costs more "
    "than the arithmetic, a pass over n tokens (K drafts + 1) costs little more than a pass over one, and checking "
    "K drafts in one pass pays. The saving lasts only while reading dominates. Once a pass holds enough tokens — "
    "many drafts, or many sequences decoded at once by a busy server, where each verify pass reads b·(K + 1) tokens "
    "— the arithmetic sets the time and extra tokens cost nearly full steps. How soon that comes depends on the "
    "device: a small CPU's arithmetic fills within a few tokens, a data-centre GPU's far later. The numbers below "
    "are measured on the device that runs this page, and say which, and what v, the verify pass in one-token steps, "
    "is there.")
NO_GPU = "No GPU projection has been run for this project yet: the curves here are of a CPU only."
LIVE_TAKES = "A live measurement takes tens of seconds on a 2-core CPU."
OPENING = (0.8, 4)  # α and K as the tab opens
PEERS_EXPLAIN = (
    "llama.cpp, the engine most people run a GGUF file with, on the same files as specviz, its turns interleaved with "
    "specviz's in one run of the benchmark: its target alone and its own speculative decoding beside specviz's target "
    "alone, K = 4 and the cost-aware rule.")


def measure_handler(get_engine: EngineLoader | None, cache: CostCache):
    """-> profile, status. Cached per pair; `again` measures anew."""
    def measure(preset, again, progress=gr.Progress()):
        try:
            if get_engine is None:
                raise ValueError("this page has no models to measure")
            profile = None if again else cache.get(preset)
            if profile is None:
                profile = _measure(get_engine, preset, progress)
                cache.put(preset, profile)
                said = f"Measured {profile.target} in {profile.seconds:.0f} s."
            else:
                said = f"Measured earlier in this process ({profile.seconds:.0f} s); tick “measure again” to redo it."
            # The cost-aware stop rule prices its drafts with this fuller measurement from now on (it had the short
            # one taken when the pair loaded): the next Generate's summary names it
            get_engine(preset, lambda *_: None).pass_costs = profile
        except Exception as e:  # a pair that failed to load, out of memory
            return gr.skip(), warning_html(message_of(e))
        return profile, notices.tab_status(said, done=True)
    return measure


def _measure(get_engine: EngineLoader, preset: str, progress):
    """Load the pair here, outside any GPU call (on ZeroGPU a load belongs to the start), then measure it in one,
    passing its steps on to the progress bar."""
    get_engine(preset, lambda fraction, text: progress(fraction, desc=text))
    for item in measure_pair_costs(engine_ref(get_engine, preset)):
        if not isinstance(item, Step):
            return item
        progress(item.fraction, desc=item.text)
    raise RuntimeError("the measurement ended without a result")


def first_status(recorded) -> str:
    """What the tab says before a live measurement: the recording it draws (date, machine, dtype), or that none is
    shipped."""
    if recorded is None:
        said = "No recorded measurement could be read: press “Measure the loaded pair”."
    else:
        said = (f"Drawn from a recorded measurement of {recorded.target} ({recorded.dtype}), made {recorded.recorded}: "
                f"not this server's pair. “Measure the loaded pair” measures it live and replaces it.")
    return notices.tab_status(f"{said} {NO_GPU} {LIVE_TAKES}")


@dataclass(frozen=True)
class RunDrafter:
    """The latest run's drafter where it is not the draft model a measurement's c is of (Medusa heads, prompt lookup,
    the target's own layers): its name, and its c from the run's own timings (a draft step ÷ a step of the target
    alone, measure/measured.py), None where the run has no baseline to give that step."""

    name: str
    c: float | None


def show_costs(profile, alpha, k, drafter: RunDrafter | None = None):
    """-> readout, ratio chart, batch chart for the measured profile at this α and K, the batch prediction priced
    with the latest run's own drafter where it has its own c (after Medusa heads, c 0.026, not the draft model's 0.3:
    that mix once said "does not pay even at batch 1" of a run that paid 1.13×), and saying whose c it is else."""
    if profile is None:
        return notices.tab_waiting("Press “Measure the loaded pair”."), None, None
    try:
        alpha, k = Bound(0, 1).check(alpha, "α"), Bound(1, MAX_K, whole=True).check(k, "K")
    except ValueError as e:  # a value no slider offers (an API client): say so, keep the charts
        return warning_html(str(e)), gr.skip(), gr.skip()
    unpriced = ""
    if drafter is not None and drafter.c is not None:
        profile = profile.drafting_with(f"{drafter.name} (the latest run's drafter; c from its own timings)", drafter.c)
    elif drafter is not None:
        unpriced = drafter.name
    return (cost_charts.readout(profile, alpha, k, unpriced), cost_charts.ratio_figure(profile),
            cost_charts.batch_figure(profile, alpha, k))


def from_trace(trace):
    """The session's latest run sets α and K (its acceptance rate, its K), and its drafter where that is not the draft
    model (RunDrafter). -> α, K, drafter"""
    if trace is None or trace.summary is None or not trace.rounds:
        return gr.skip(), gr.skip(), gr.skip()
    drafter = None
    if trace.settings.get("drafter", DEFAULT.key) != DEFAULT.key and not drafted_a_tree(trace):  # a tree's nodes:
        point = measured_point(trace)  # the draft model's steps
        drafter = RunDrafter(trace.draft_model, point.steady.c if point and point.steady else None)
    return round(trace.summary.acceptance_rate, 2), min(int(trace.settings.get("k", 4)), MAX_K), drafter


def _costs_layout(recorded) -> tuple:
    """The tab's three sections: why a pass over K + 1 tokens costs about one (the t(n) curve, with the measure
    button); the speedup against batch size at α and K (the crossover); the measured figures in sentences.
    -> α, K, measure, again, status, readout, ratio chart, batch chart"""
    first = show_costs(recorded, *OPENING)  # before a live measurement: the shipped recording, marked as one
    with section():
        gr.HTML(heading_html("What checking K drafts costs, measured — and when it stops paying", EXPLAIN))
        with panes():
            with gr.Column():
                measure = gr.Button("Measure the loaded pair", variant="primary", elem_id="cost-measure")
                again = gr.Checkbox(False, label="measure again", elem_id="cost-again")
                status = gr.HTML(first_status(recorded), label="Measurement status", elem_id="cost-status")
            ratio_plot = gr.Plot(first[1], label="Pass time against tokens per pass", show_label=False,
                                 elem_id="cost-ratio")
    with section():
        gr.HTML("<h3>A busy server: the speedup against batch size</h3>")
        with gr.Row():
            alpha = gr.Slider(0, 1, OPENING[0], step=0.01,
                              label="α (acceptance rate; the latest run's, once there is one)", elem_id="cost-alpha")
            k = gr.Slider(1, MAX_K, OPENING[1], step=1, label="K (draft tokens per round)", elem_id="cost-k")
        batch_plot = gr.Plot(first[2], label="Speedup against batch size", show_label=False, elem_id="cost-batch")
    with section():
        gr.HTML("<h3>The measured figures</h3>")
        readout = gr.HTML(first[0], label="Measured figures", elem_id="cost-readout-box")
    return alpha, k, measure, again, status, readout, ratio_plot, batch_plot


def peers_view(recorded: PeerRecording | None) -> tuple[str, str]:
    """-> the section's notice and table for the recording of llama.cpp beside specviz (measure/peer_recording.py);
    where none could be read, a notice that says so and no table."""
    return notices.tab_status(peer_words(recorded)), "" if recorded is None else peer_table(recorded)


def build_peers() -> None:
    """The last section: llama.cpp beside specviz, recorded (nothing runs live: no events)."""
    status, table = peers_view(recorded_peers())
    with section():
        gr.HTML(heading_html("Beside llama.cpp (recorded)", PEERS_EXPLAIN))
        gr.HTML(status, label="llama.cpp recording", elem_id="peers-status")
        gr.HTML(table, label="llama.cpp beside specviz", elem_id="peers-table")


def build_costs(preset, get_engine: EngineLoader | None, trace_state: gr.State | None = None,
                cache: CostCache | None = None) -> None:
    recorded = recorded_costs()
    cache = cache or CostCache()
    alpha, k, measure, again, status, readout, ratio_plot, batch_plot = _costs_layout(recorded)
    build_busy_server(preset, get_engine, cache)  # its own section, after the predicted crossover: the measured one
    build_peers()
    profile, drafter = gr.State(recorded), gr.State(None)

    measure.click(measure_handler(get_engine, cache), [preset, again], [profile, status],
                  api_name="measure_costs", show_progress_on=[status], concurrency_id=MODEL_RUNS, concurrency_limit=1)
    gr.on([profile.change, alpha.change, k.change, drafter.change], show_costs, [profile, alpha, k, drafter],
          [readout, ratio_plot, batch_plot], trigger_mode="always_last", api_visibility="private")
    if trace_state is not None:
        trace_state.change(from_trace, trace_state, [alpha, k, drafter], api_visibility="private")

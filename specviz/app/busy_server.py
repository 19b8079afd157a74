"""The Costs tab's "A busy server, measured" sections (its chart and controls, then its table): several users served at once by one batch (engine/batched.py),
the target alone against the cost-aware rule for a batch, each user's tokens per second against the server's
(measure/serve_chart.py). It opens on the shipped recording; "Serve users live" runs it on the loaded pair, bounded
(at most LIVE_MOST users, LIVE_S seconds), with progress, in the model-run group (a second person waits in the
queue), and Stop ends it after the round in progress. Layout first, then its events.
"""

from __future__ import annotations

import gradio as gr

from specviz.app.errors import message_of
from specviz.app.serving import LIVE_STOPS, MODEL_RUNS, CostCache, EngineLoader, LiveStops, Step, engine_ref, serve_live
from specviz.app.sections import panes, section
from specviz.lab.readouts import heading_html, warning_html
from specviz.measure import closed_loop
from specviz.measure.serve_chart import recorded_serve, serve_figure, serve_table
from specviz.settings.bounds import Bound
from specviz.view import notices

LIVE_MOST = 8  # users a live run may serve at once on the page
LIVE_S = 60  # seconds after which a live run stops (a CPU's minute; the recording shows more)
LIVE_RULES = ("target", "cost")
LIVE_KINDS = ("code", "story")
EXPLAIN = (
    "Here the server is real: several users' requests decoded together by one batch, each user's text exactly what "
    "the target alone would give them. With one user, drafting makes each pass yield more tokens while the pass "
    "costs about the same. With more users the verify pass reads every user's drafts, B·(K + 1) positions, and "
    "turns into arithmetic: the cost-aware rule then prices each round for the whole batch, Σ E(K) / (K·c + v), "
    "c and v read off the batch's own rounds as it serves (the Costs tab's measurement until it has some), and "
    "drafts less, and past the crossover not at all. Each point is one number of users at once.")


def live_users(most) -> tuple[int, ...]:
    """The numbers of users a live run serves in turn: 1, then doubling up to `most` (and `most` itself)."""
    most = Bound(1, LIVE_MOST, whole=True).check(most, "users at most")
    users = [n for n in (1, 2, 4, 8) if n <= most]
    return tuple(users + ([most] if most not in users else []))


def first_view(recorded: dict | None):
    """-> figure, table, status before a live run: the recording's, or a sentence that there is none."""
    if recorded is None:
        return None, "", notices.tab_status("No recording could be read: press “Serve users live”.")
    status = notices.tab_status(f"Drawn from a recording made {recorded['recorded']}: not this server. “Serve users "
                                f"live” serves the loaded pair here, at most {LIVE_MOST} users and {LIVE_S} s.")
    return (serve_figure(closed_loop.lines(recorded["runs"]), recorded["machine"]),
            serve_table(recorded["runs"], recorded["plan"], recorded["machine"], recorded["predicted"],
                        recorded["greedy_same"]), status)


def live_handler(get_engine: EngineLoader | None, cache: CostCache, stops: LiveStops = LIVE_STOPS):
    """-> figure, table, status of a live run on the loaded pair."""
    def live(preset, most, tokens, request: gr.Request, progress=gr.Progress()):
        session = getattr(request, "session_hash", None) or "api"
        try:
            if get_engine is None:
                raise ValueError("this page has no models to serve")
            plan = closed_loop.Plan(users=live_users(most), rules=LIVE_RULES, kinds=LIVE_KINDS, turns=1,
                                    max_new_tokens=Bound(8, 48, whole=True).check(tokens, "new tokens"),
                                    seconds=LIVE_S)
            engine = get_engine(preset, lambda fraction, text: progress(fraction, desc=text))
            profile = _prices(engine, cache.get(preset))
            stop = stops.start(session)
            try:
                runs = _serve(get_engine, preset, plan, profile, session, progress)
            finally:
                stops.end(session)
        except Exception as e:  # out of bounds, a pair that failed to load, out of memory
            return gr.skip(), gr.skip(), warning_html(message_of(e))
        if not runs:
            return gr.skip(), gr.skip(), warning_html("Stopped before a number of users was served in full: "
                                                      "nothing to draw.")
        machine = f"{engine.target_name} on this server"
        said = (f"Served live: {', '.join(map(str, plan.users))} users at once, {plan.max_new_tokens} new tokens "
                f"each{'; stopped early' if stop.is_set() else ''}. The cost rule priced by its rounds' own clock, "
                f"from {profile.source}.")
        return (serve_figure(closed_loop.lines(runs), machine),
                serve_table(runs, plan, machine, closed_loop.predicted_crossovers(runs, profile),
                            closed_loop.greedy_same(runs) if plan.temperature == 0 else None),
                notices.tab_status(said, done=True))
    return live


def _prices(engine, measured):
    """The cost rule's prices: the Costs tab's measurement of this pair where it has one, else the short one taken
    when the pair loaded."""
    if measured is not None and measured.problem(engine.device, engine.dtype, engine.target_name,
                                                 getattr(engine, "kernels", "")) is None:
        return measured
    return engine.pass_costs or engine.measure_pass_costs()


def _serve(get_engine, preset, plan, profile, session, progress):
    for item in serve_live(engine_ref(get_engine, preset), plan, profile, LIVE_S, session):
        if not isinstance(item, Step):
            return item
        progress(item.fraction, desc=item.text)
    raise RuntimeError("the live run ended without a result")


def stop_handler(stops: LiveStops = LIVE_STOPS):
    def stop(request: gr.Request):
        said = ("Stopping after the round in progress." if stops.stop(getattr(request, "session_hash", None) or "api")
                else "No live run of yours is going.")
        return notices.tab_status(said)
    return stop


def build_busy_server(preset, get_engine: EngineLoader | None, cache: CostCache) -> None:
    """The section and its events."""
    recorded = recorded_serve()
    figure, table, status = first_view(recorded)
    with section():
        gr.HTML(heading_html("A busy server, measured: many users at once", EXPLAIN))
        with panes():
            with gr.Column():
                most = gr.Slider(1, LIVE_MOST, 4, step=1, label="users at most", elem_id="serve-users")
                tokens = gr.Slider(8, 48, 32, step=8, label="new tokens a user", elem_id="serve-tokens")
                with gr.Row():
                    go = gr.Button("Serve users live", variant="primary", elem_id="serve-live")
                    stop = gr.Button("Stop", elem_id="serve-stop")
                said = gr.HTML(status, label="Busy server status", elem_id="serve-status")
            plot = gr.Plot(figure, label="Each user's tokens/s against the server's", show_label=False,
                           elem_id="serve-chart")
    with section():  # a screen of its own in the presenter view: a table of every users count and rule
        gr.HTML("<h3>A busy server: the measured figures</h3>")
        readout = gr.HTML(table, label="Busy server figures", elem_id="serve-table")
    stops = LIVE_STOPS
    go.click(live_handler(get_engine, cache, stops), [preset, most, tokens], [plot, readout, said],
             api_name="serve_live", show_progress_on=[said], concurrency_id=MODEL_RUNS, concurrency_limit=1)
    stop.click(stop_handler(stops), None, said, api_name="serve_stop", queue=False)

"""What a step to another round costs the server (a script, not collected by pytest; it was a test that asserted
nothing): the round view's handler (`app/round_view.show_round`) with the JSON of its outputs, the slider and the
chart's mark (the browser draws the round itself), on the recorded Qwen trace (tests/fixtures/qwen_coder_fib.json, 7
rounds); then the same step through the API, with gradio_client, on the app served in this process on the tiny
random-weight pair after a 32-token Generate.

    python -m tools.measure_a_step

Prints the server's median and most (its first step, which warms up, left out of the most) and the client's median.
"""
import argparse
import statistics
import time

from tools.screenshot_lecture import TRACE
from tools.screenshots import tiny_engine

STEPS = [2, 3, 4, 5, 6, 7, 1] * 3  # every round of the recorded trace, three times over
API_STEPS = 10


def server_steps() -> list[float]:
    """Seconds of each step in the server: the handler and its outputs made JSON, as Gradio sends them."""
    import gradio as gr

    from specviz.app import round_view
    from specviz.record.load import load_trace

    trace = load_trace(TRACE.read_bytes())
    plot, html = gr.Plot(render=False), gr.HTML(render=False)
    times = []
    for number in STEPS:
        started = time.perf_counter()
        for out in round_view.show_round(trace, number, False)[1:]:
            (plot if hasattr(out, "to_json") else html).postprocess(out)
        times.append(time.perf_counter() - started)
    return times


def api_steps() -> list[float]:
    """Seconds of each step through /show_round, at the client, after a Generate on the tiny pair."""
    from gradio_client import Client

    from harness.browser import serve
    from harness.endpoints import generate_frames, value

    engine = tiny_engine()
    demo, url = serve(lambda preset, progress: engine, {"tiny": "Tiny random pair"}, "tiny")
    try:
        client = Client(url, verbose=False)
        final, _ = generate_frames(client, max_new_tokens=32)
        n = value(final["slider"])
        times = []
        for i in range(API_STEPS):
            started = time.perf_counter()
            client.predict(1 + i % (n - 1), False, api_name="/show_round")
            times.append(time.perf_counter() - started)
        return times
    finally:
        demo.close()


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    server, api = server_steps(), api_steps()
    print(f"a step: server {statistics.median(server) * 1000:.0f} ms median (max {max(server[1:]) * 1000:.0f} ms); "
          f"via gradio_client {statistics.median(api) * 1000:.0f} ms median")


if __name__ == "__main__":
    main()

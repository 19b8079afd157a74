"""Measure the app's issue-3 performance goals on the real pair (a script, not collected by pytest).

    python -m tools.measure_app

Prints: time until the page is interactive after the server is up (headless Chromium), the same for a bare
Gradio page (one button, one load event: the floor Gradio itself sets on this machine), a 48-token Generate of the
code prompt in the page from the click to the summary on screen (the page's own settings: K, adaptive K's rule,
the kernels the app chose), and tokens/s of Generate through the app (wall clock at the client) vs the engine alone.
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPEATS = 5
PROMPT = "Write a Python function that returns the n-th Fibonacci number."


def interactive_times(browser, url: str, info_text: str, n: int = 3) -> list[float]:
    """Seconds from navigation (a fresh browser context: nothing cached) until Generate is enabled and the
    model info has arrived from the server."""
    from harness.browser import AppPage

    times = []
    for _ in range(n):
        page = AppPage(browser, url, info=info_text, viewport=None)  # the browser's default viewport
        times.append(page.ready_s)
        page.close()
    return times


def click_to_summary(browser, url: str, n: int = 5) -> list[float]:
    """Seconds from the click on Generate (the code prompt, 48 new tokens, the page's other settings as they open)
    to the run's summary on screen ("Done", the last round shown), each in a fresh tab."""
    from harness.browser import AppPage

    times = []
    for _ in range(n):
        page = AppPage(browser, url, info="target", viewport=None)
        page.page.fill("#prompt textarea", PROMPT)
        page.set_number("max-new-tokens", 48)
        t0 = time.perf_counter()
        page.page.click("#generate")
        page.wait_match("#status", r"Done: \d+ rounds")
        page.wait_nonempty("#summary")
        times.append(time.perf_counter() - t0)
        page.close()
    return times


def bare_gradio_page():
    import gradio as gr

    with gr.Blocks() as bare:
        gr.Button("Generate", elem_id="generate")
        info = gr.HTML("", elem_id="run-info")
        bare.load(lambda: "target", None, info)
    return bare


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()

    from gradio_client import Client
    from playwright.sync_api import sync_playwright

    from harness.browser import launch_browser, serve_demo
    from specviz.app import pair_cache, serving
    from specviz.app import page as ui
    from specviz.engine import RunSettings
    from specviz.models.pairs import DEFAULT_PRESET

    engine = pair_cache.default_engine_loader(DEFAULT_PRESET)
    engine.warm_up()
    demo = ui.build_demo()
    url = serve_demo(demo, **serving.launch_kwargs())
    try:
        with sync_playwright() as pw:
            browser = launch_browser(pw)
            times = interactive_times(browser, url, "target", n=5)
            generate = click_to_summary(browser, url)
            bare = bare_gradio_page()
            bare_times = interactive_times(browser, serve_demo(bare), "target", n=5)
            bare.close()
            browser.close()
        print(f"page interactive after goto: {', '.join(f'{t:.2f}' for t in times)} s (median "
              f"{statistics.median(times):.2f}); a bare Gradio page: {', '.join(f'{t:.2f}' for t in bare_times)} s "
              f"(median {statistics.median(bare_times):.2f})")
        print(f"a 48-token Generate of the code prompt, click to summary: {', '.join(f'{t:.1f}' for t in generate)} s "
              f"(median {statistics.median(generate):.1f}) on {engine.kernels} kernels")

        client = Client(url, verbose=False)
        args = dict(prompt=PROMPT, preset=DEFAULT_PRESET, k=4, temperature=0, top_p=1, top_k=0, seed=0,
                    max_new_tokens=48, lecture=False)
        app_walls, engine_walls = [], []
        for rep in range(REPEATS):  # interleaved, so a slow minute on a shared machine hits both sides alike
            t0 = time.perf_counter()
            client.predict(**args, api_name="/generate")
            app_walls.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            trace = engine.run(PROMPT, RunSettings(k=4, temperature=0, max_new_tokens=48))
            engine_walls.append(time.perf_counter() - t0)
            print(f"  run {rep + 1}: via app {app_walls[-1]:.2f} s, engine alone {engine_walls[-1]:.2f} s",
                  flush=True)
        n = trace.summary.n_new_tokens  # greedy: every run makes the same tokens
        app_s, engine_s = statistics.median(app_walls), statistics.median(engine_walls)
        print(f"generate via app: {n / app_s:.2f} tok/s; engine alone: {n / engine_s:.2f} tok/s (medians of "
              f"{REPEATS}); app/engine {engine_s / app_s:.2f}")
    finally:
        demo.close()


if __name__ == "__main__":
    main()

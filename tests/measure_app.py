"""Measure the app's issue-3 performance goals on the real pair (a script, not collected by pytest).

    PYTHONPATH=. python tests/measure_app.py

Prints: time until the page is interactive after the server is up (headless Chromium), and tokens/s of Generate through the app (wall clock at the client) vs the engine alone.
"""
import os
import socket
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from gradio_client import Client  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from specviz import ui  # noqa: E402
from specviz.engine import RunSettings  # noqa: E402
from specviz.models import DEFAULT_PRESET  # noqa: E402

PROMPT = "Write a Python function that returns the n-th Fibonacci number."
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


engine = ui.default_engine_loader(DEFAULT_PRESET)
engine.warm_up()
demo = ui.build_demo()
port = free_port()
demo.launch(server_port=port, prevent_thread_lock=True, **ui.launch_kwargs())
url = f"http://127.0.0.1:{port}/"
try:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        times = []
        for _ in range(3):
            page = browser.new_page()
            t0 = time.perf_counter()
            page.goto(url)
            page.wait_for_selector("#generate:not([disabled])")
            page.wait_for_function("document.querySelector('#run-info')?.textContent.includes('target')")
            times.append(time.perf_counter() - t0)
            page.close()
        browser.close()
    print(f"page interactive after goto: {', '.join(f'{t:.2f}' for t in times)} s")

    client = Client(url, verbose=False)
    args = dict(prompt=PROMPT, preset=DEFAULT_PRESET, k=4, temperature=0, top_p=1, top_k=0, seed=0,
                max_new_tokens=48, lecture=False)
    for rep in range(2):
        t0 = time.perf_counter()
        client.predict(**args, api_name="/generate")
        app_wall = time.perf_counter() - t0
        t0 = time.perf_counter()
        trace = engine.run(PROMPT, RunSettings(k=4, temperature=0, max_new_tokens=48))
        direct_wall = time.perf_counter() - t0
        n = trace.summary.n_new_tokens
        print(f"generate via app: {n / app_wall:.2f} tok/s (wall {app_wall:.2f} s); engine alone: "
              f"{n / direct_wall:.2f} tok/s (wall {direct_wall:.2f} s); app/engine {direct_wall / app_wall:.2f}")
finally:
    demo.close()

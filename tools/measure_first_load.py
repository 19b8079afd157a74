"""A new user's first start, measured: `python app.py` with an empty model cache (so it prepares the packaged pair,
minutes of joining, checking and converting), and a browser opening the page as soon as the server answers.

    python -m tools.measure_first_load [--runs 3] [--keep-cache DIR]

Prints, per run, the seconds from navigation until the stage shows the first recorded round ("Round 1 of …"), and
whether the models were still preparing then (the cache's completion marker not yet written). Each run starts the
app afresh with a new empty cache, so every run is a true first start. The goal (issue 13) is 5 s.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAD = "#stage .sv-round:not([hidden]) .sv-round-head"


def wait_for_server(url: str, app: subprocess.Popen, timeout: float = 120) -> float:
    """Seconds until the server answers HTTP (the app prints nothing useful to wait on)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if app.poll() is not None:
            raise SystemExit(f"the app exited with {app.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2).read(1)
            return time.perf_counter() - started
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"no answer from {url} in {timeout} s")


def preparing(cache: Path) -> bool:
    """Whether the packaged pair is still being prepared: not both models' folders carry their ready marker."""
    return len(list(cache.glob("*/specviz-ready.json"))) < 2


def one_run(port: int, cache: Path) -> tuple[float, float, bool]:
    from playwright.sync_api import sync_playwright

    from harness.browser import Page, launch_browser

    env = {**os.environ, "SPECVIZ_CACHE": str(cache), "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    app = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/"
        server_s = wait_for_server(url, app)
        with sync_playwright() as pw:
            browser = launch_browser(pw)
            tab = Page(browser, url, viewport=(1280, 720))
            _, seen_ms = tab.wait_js("(s) => { const t = document.querySelector(s)?.textContent ?? '';"
                                     " return t.includes('Round 1 of') ? [t, performance.now()] : null; }", HEAD)
            still = preparing(cache)
            browser.close()
        return server_s, seen_ms / 1000, still
    finally:
        app.terminate()
        app.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=7871)
    a = parser.parse_args()
    for run in range(a.runs):
        cache = Path(tempfile.mkdtemp(prefix="specviz-first-start-"))
        try:
            server_s, shown_s, still = one_run(a.port, cache)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        print(f"run {run + 1}: server up {server_s:.1f} s after start; first recorded round shown {shown_s:.2f} s "
              f"after navigation; models {'still preparing' if still else 'READY (not a first-start measurement)'}",
              flush=True)


if __name__ == "__main__":
    main()

"""What the browser tests and the scripts in tools/ share: headless Debian Chromium, a free loopback port, a Gradio
demo served in this process, and a browser tab with waits (a plain module, not a test file and not a fixture).

Imported as `harness.browser`: by the test files, and by the scripts in tools/ (run from the repository root as
`python -m tools.NAME`).

Every wait polls every 50 ms (streamed updates can be shorter than playwright's default polling) and returns the
value it saw true, so a test asserts on exactly what it waited for, never on a second, later read. Text waits read
`textContent` unless told otherwise: no layout, and forcing one while plotly draws slows the page down.
"""

from __future__ import annotations

import os
import random
import socket
import time
from pathlib import Path

from specviz.settings.defaults import TEMPERATURE as DEFAULT_TEMPERATURE

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # before gradio is imported: no version check, no telemetry

CHROMIUM = "/usr/bin/chromium"  # Debian's; never `playwright install`
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "tests" / "artifacts"  # screenshots (gitignored)
TIMEOUT_MS = 60_000  # generous: the suite runs on 2 busy cores, and a wait ends as soon as its condition holds
POLL_MS = 50
NAV = ("prev-round", "next-round")

# Run in every tab before the page's own scripts: keep every resource timing entry (the browser keeps 250 by
# default, and Gradio alone fetches ~90 modules), and record the id of every clicked element (or its closest
# ancestor with one), so a test can tell that a key press clicked nothing, without waiting for a redraw.
INIT_SCRIPT = """
performance.setResourceTimingBufferSize(100000);
window.__clicks = [];
document.addEventListener("click", (event) => {
  const host = event.target.closest ? event.target.closest("[id]") : null;
  window.__clicks.push(host ? host.id : "");
}, true);
"""


PORTS_PER_WORKER = 2000  # under pytest-xdist each worker takes its ports from a range of its own


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now. Under pytest-xdist, from the worker's own range below the kernel's
    ephemeral ports (gw0: 20000-21999, gw1: 22000-23999, …), so two workers never pick the same one between
    choosing it and binding it; elsewhere, one the kernel picks."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    base = 20000 + int(worker[2:]) * PORTS_PER_WORKER
    start = random.randrange(PORTS_PER_WORKER)  # a new start each call: a port just closed may linger in TIME_WAIT
    for i in range(PORTS_PER_WORKER):
        port = base + (start + i) % PORTS_PER_WORKER
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port in {base}-{base + PORTS_PER_WORKER - 1}")


def launch_browser(playwright):
    """Headless Debian Chromium from a started `sync_playwright()`."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)


def serve_demo(demo, **launch_kwargs) -> str:
    """Launch a built Gradio demo on a free loopback port in this process (close it with `demo.close()`) -> url."""
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                            **launch_kwargs)
    return url


def serve(get_engine, presets: dict[str, str], preset: str, **build_kwargs):
    """The app (`ui.build_demo`) with its theme, CSS and keys, served in this process -> (demo, url)."""
    from specviz.app import serving
    from specviz.app import page as ui

    demo = ui.build_demo(get_engine, presets, preset, **build_kwargs)
    return demo, serve_demo(demo, **serving.launch_kwargs())


class Page:
    """A browser tab on a served page, with the waits and reads the tests share. `ready_s`: seconds from
    navigation until `wait_ready` returned."""

    def __init__(self, browser, url: str, dialogs: list | None = None, *,
                 viewport: tuple[int, int] | None = (1500, 1000), timeout_ms: int = TIMEOUT_MS):
        self.dialogs = [] if dialogs is None else dialogs  # the message of every alert/confirm/prompt, dismissed
        size = {"viewport": {"width": viewport[0], "height": viewport[1]}} if viewport else {}  # None: the default
        self.page = browser.new_page(**size)
        self.page.set_default_timeout(timeout_ms)
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.add_init_script(INIT_SCRIPT)
        started = time.perf_counter()
        self.page.goto(url)
        self.wait_ready()
        self.ready_s = time.perf_counter() - started

    def wait_ready(self) -> None:
        """Wait until the page is interactive (here: loaded; subclasses say more)."""

    def close(self) -> None:
        self.page.close()

    # --- reads (for what a test has already waited for, or for negative checks) ---

    def text(self, selector: str) -> str:
        return self.page.evaluate("(s) => document.querySelector(s)?.textContent ?? ''", selector)

    def clicks(self) -> list[str]:
        """Ids of the elements clicked so far in this document (see INIT_SCRIPT), in order."""
        return self.page.evaluate("() => window.__clicks.slice()")

    def plotly_loaded(self) -> bool:
        """Whether the browser fetched Gradio's plotly renderer (a 4.6 MB script, loaded for the first figure)."""
        return self.page.evaluate("() => performance.getEntriesByType('resource')"
                                  ".some(e => e.name.includes('PlotlyPlot'))")

    def settle(self, ms: int = 500) -> None:
        """A fixed pause: only before a negative check (that something did *not* happen)."""
        self.page.wait_for_timeout(ms)

    # --- waits: each returns what it saw ---

    def wait_js(self, expression: str, arg=None):
        """Wait until the JS function `expression` (called with `arg`) returns something truthy; -> its value."""
        return self.page.wait_for_function(expression, arg=arg, polling=POLL_MS).json_value()

    def wait_text(self, selector: str, *parts: str) -> str:
        """Wait until the element's textContent contains every one of `parts`; -> that text."""
        return self.wait_js("([s, parts]) => { const t = document.querySelector(s)?.textContent ?? '';"
                            " return parts.every(p => t.includes(p)) ? [t] : null; }", [selector, list(parts)])[0]

    def wait_match(self, selector: str, *patterns: str, inner: bool = False) -> str:
        """Wait until the element's text (textContent, or innerText with `inner`) matches every JS regex in
        `patterns` (so "a|b" waits for either); -> that text."""
        return self.wait_js("([s, patterns, inner]) => { const e = document.querySelector(s); if (!e) return null;"
                            " const t = inner ? e.innerText : e.textContent;"
                            " return patterns.every(p => new RegExp(p).test(t)) ? [t] : null; }",
                            [selector, list(patterns), inner])[0]

    def wait_nonempty(self, selector: str) -> str:
        """Wait until the element shows some text (not only white space); -> that text."""
        return self.wait_js("(s) => { const t = document.querySelector(s)?.textContent ?? '';"
                            " return t.trim() ? [t] : null; }", selector)[0]

    def wait_count(self, selector: str, n: int, *, at_least: bool = False) -> int:
        """Wait until exactly `n` (or, with `at_least`, n or more) elements match `selector`; -> the count."""
        return self.wait_js("([s, n, least]) => { const c = document.querySelectorAll(s).length;"
                            " return (least ? c >= n : c === n) ? [c] : null; }", [selector, n, at_least])[0]

    def wait_plotly_loaded(self) -> None:
        self.wait_js("() => performance.getEntriesByType('resource').some(e => e.name.includes('PlotlyPlot'))")

    def screenshot(self, name: str, selector: str | None = None) -> None:
        """The full page (or one element) as tests/artifacts/<name>."""
        ARTIFACTS.mkdir(exist_ok=True)
        target = self.page.locator(selector) if selector else self.page
        kwargs = {} if selector else {"full_page": True}
        target.screenshot(path=str(ARTIFACTS / name), **kwargs)


class AppPage(Page):
    """A tab on the specviz app: interactive once Generate is enabled, the info line names the loaded pair and the
    first recorded example is open."""

    def __init__(self, browser, url: str, dialogs: list | None = None, *, info: str = "draft", **kwargs):
        self.info = info
        super().__init__(browser, url, dialogs, **kwargs)

    def wait_ready(self) -> None:
        self.page.wait_for_selector("#generate:not([disabled])")
        self.wait_text("#run-info", self.info)
        self.wait_text("#status", "Recorded example")  # the page's first load opened one: it lands before a Generate

    def set_number(self, elem_id: str, value) -> None:
        box = self.page.locator(f"#{elem_id} input[type=number]")
        box.fill(str(value))
        box.press("Tab")

    def generate(self, prompt: str, max_new_tokens: int = 24, temperature: float = DEFAULT_TEMPERATURE) -> int:
        """Generate (once per tab: it waits for the first "Done") and wait until the strip shows the last round;
        -> the number of rounds, as the status line reports it. The temperature is set too, since the settings box
        shows the opened example's (the first, greedy) until it is changed: by default, the one default."""
        self.page.fill("#prompt textarea", prompt)
        self.set_number("max-new-tokens", max_new_tokens)
        self.set_number("temperature", temperature)
        self.page.click("#generate")
        done = self.wait_match("#status", r"Done: \d+ rounds")
        n = int(done.split("Done: ")[1].split()[0])
        self.wait_text("#stage .sv-round:not([hidden]) .sv-round-head", f"Round {n} of {n}")
        return n

    def round_shown(self) -> int:
        return int(self.text("#stage .sv-round:not([hidden]) .sv-round-head").split()[1])

    def wait_round(self, number: int) -> str:
        return self.wait_text("#stage .sv-round:not([hidden]) .sv-round-head", f"Round {number} of")

    def nav_clicks(self) -> int:
        """How many clicks Previous/Next round got so far (from the page, from a test, or from the ← → keys)."""
        return sum(1 for c in self.clicks() if c in NAV)

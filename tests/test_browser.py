"""The app in a real browser: headless Debian Chromium against the demo served in this process.

Tiny random-weight models make generation instant; one test (marked `real`) runs the packaged Qwen pair.
Skips when /usr/bin/chromium is absent. Screenshots go to tests/artifacts/ (gitignored).
Waits read `textContent` (no layout) and poll every 50 ms: streamed updates can be shorter than playwright's
default polling, and forcing a layout while plotly draws slows the page down.
"""

import os
import socket
import time
from pathlib import Path

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"  # before gradio is imported: no version check, no telemetry

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).parent / "artifacts"
FIXTURE = Path(__file__).parent / "fixtures" / "qwen_coder_fib.json"
XSS = "<img src=x onerror=alert(1)>"
PANELS = ["#token-strip", "#pq-bars", "#residual", "#tokens-per-pass", "#round-explanation"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # gradio's own deprecations
]
sync_api = pytest.importorskip("playwright.sync_api")

from specviz.trace import load_trace  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(get_engine, presets: dict[str, str], preset: str):
    from specviz import ui

    demo = ui.build_demo(get_engine, presets, preset)
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                            quiet=True, **ui.launch_kwargs())
    return demo, url


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def url(tiny_pair, tokenizer):
    from specviz.engine import Engine

    draft, target = tiny_pair
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    demo, url = serve(lambda preset, progress: engine, {"tiny": "Tiny random pair"}, "tiny")
    yield url
    demo.close()


class Page:
    """A browser tab on the app, with the waits and reads the tests share."""

    def __init__(self, browser, url: str, dialogs: list):
        self.page = browser.new_page(viewport={"width": 1500, "height": 1000})
        self.page.set_default_timeout(60_000)
        self.page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        started = time.perf_counter()
        self.page.goto(url)
        self.page.wait_for_selector("#generate:not([disabled])")
        self.wait_text("#run-info", "draft")  # the page has loaded its pair: it is interactive
        self.ready_s = time.perf_counter() - started

    def text(self, selector: str) -> str:
        return self.page.evaluate("(s) => document.querySelector(s)?.textContent ?? ''", selector)

    def wait_text(self, selector: str, part: str) -> str:
        self.page.wait_for_function("([s, t]) => (document.querySelector(s)?.textContent ?? '').includes(t)",
                                    arg=[selector, part], polling=50)
        return self.text(selector)

    def set_number(self, elem_id: str, value) -> None:
        box = self.page.locator(f"#{elem_id} input[type=number]")
        box.fill(str(value))
        box.press("Tab")

    def generate(self, prompt: str, max_new_tokens: int = 24) -> int:
        """Generate and wait for the end; returns the number of rounds."""
        self.page.fill("#prompt textarea", prompt)
        self.set_number("max-new-tokens", max_new_tokens)
        self.page.click("#generate")
        self.wait_text("#status", "Done")
        head = self.wait_text("#token-strip", "Round ")
        return int(head.split(" of ")[1].split()[0])

    def plotly_loaded(self) -> bool:
        """Whether the browser fetched Gradio's plotly renderer (a 4.6 MB script, loaded for the first figure)."""
        return self.page.evaluate("() => performance.getEntriesByType('resource')"
                                  ".some(e => e.name.includes('PlotlyPlot'))")

    def round_shown(self) -> int:
        return int(self.text("#token-strip .sv-round-head").split()[1])

    def wait_round(self, number: int) -> None:
        self.wait_text("#token-strip .sv-round-head", f"Round {number} of")

    def screenshot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / name), full_page=True)


@pytest.fixture
def dialogs():
    return []


@pytest.fixture
def page(browser, url, dialogs):
    tab = Page(browser, url, dialogs)
    yield tab
    tab.page.close()


def test_generate_then_step_with_buttons_and_keys(page, capsys):
    assert not page.plotly_loaded()  # interactive without plotly: the charts are empty until a trace exists
    n = page.generate("def fib(n):")
    assert page.plotly_loaded()
    assert n >= 4 and page.round_shown() == n
    for panel in PANELS:  # every panel drew something
        assert page.text(panel).strip(), panel
    assert "q (draft)" in page.text("#pq-bars") and "min(1," in page.text("#pq-bars")
    assert "expected" in page.text("#tokens-per-pass") and "running mean" in page.text("#tokens-per-pass")
    assert page.page.locator("#pq-bars .js-plotly-plot").count() == 1

    page.page.click("#prev-round")
    page.wait_round(n - 1)
    page.page.click("#token-strip")  # focus out of any field: arrows now step rounds
    started = time.perf_counter()
    page.page.keyboard.press("ArrowLeft")
    page.wait_round(n - 2)
    step_s = time.perf_counter() - started
    page.page.keyboard.press("ArrowRight")
    page.wait_round(n - 1)
    page.page.click("#next-round")
    page.wait_round(n)

    page.page.click("#prompt textarea")  # while typing, arrows move the cursor, not the rounds
    page.page.keyboard.press("ArrowLeft")
    time.sleep(0.5)
    assert page.round_shown() == n

    page.page.click("#prev-round")
    page.wait_round(n - 1)
    rnd_text = page.text("#round-explanation")
    assert f"Round {n - 1}." in rnd_text and "target pass" in rnd_text
    decisions = page.text("#decisions")
    assert "→ accept" in decisions or "→ reject" in decisions or "nothing drafted" in decisions
    assert "p (target)" in page.text("#residual")
    assert "acceptance α" in page.text("#summary")
    page.screenshot("specviz-rounds.png")

    with page.page.expect_download() as download:
        page.page.click("#download-trace")
    saved = load_trace(Path(download.value.path()).read_bytes())
    assert len(saved.rounds) == n and saved.prompt == "def fib(n):"
    with capsys.disabled():
        print(f"\n[measure] page interactive {page.ready_s:.2f} s after the server was up; "
              f"← key to redrawn strip {step_s * 1000:.0f} ms")


def test_the_strip_marks_fates_with_icons(page):
    from specviz.render import FATES

    page.generate("def fib(n):")
    chips = page.page.eval_on_selector_all(
        "#token-strip .sv-text .sv-tok", "els => els.map(e => [e.className, e.querySelector('.sv-icon').textContent])")
    assert len(chips) >= 2
    for classes, icon in chips:  # "sv-tok sv-accepted" carries ✓, and so on
        assert icon == FATES[classes.split()[1].removeprefix("sv-")].icon
    legend = page.page.locator("#token-strip .sv-legend .sv-icon").all_inner_texts()
    assert legend == [style.icon for style in FATES.values()]


def test_a_script_in_the_prompt_renders_as_text(page, dialogs):
    page.generate(XSS, max_new_tokens=8)
    assert XSS in page.text("#token-strip .sv-prompt")
    assert page.page.locator("#token-strip img").count() == 0
    time.sleep(0.3)
    assert dialogs == []  # no alert() ran


def test_open_a_recorded_trace_and_step_it(page):
    page.page.set_input_files("#trace-upload input[type=file]", str(FIXTURE))
    page.wait_text("#status", "Opened a trace of 7 rounds")
    page.wait_round(1)
    assert "recorded on" in page.text("#run-info") and "Qwen2.5-Coder-1.5B-Instruct" in page.text("#run-info")
    page.page.click("#next-round")
    page.wait_round(2)  # all four drafts accepted, then a bonus
    assert "bonus" in page.text("#residual") and "★" in page.text("#token-strip")
    page.page.click("#token-strip")
    page.page.keyboard.press("ArrowRight")
    page.wait_round(3)
    strip = page.text("#token-strip .sv-text")
    assert "⏎" in strip and "·fibonacci" in strip  # a newline token, a leading-space token
    page.page.click("#lab-tab-button")  # on the Lab tab the arrow keys leave the rounds alone
    page.page.keyboard.press("ArrowRight")
    page.page.click("#rounds-tab-button")
    page.page.wait_for_timeout(300)
    assert page.round_shown() == 3
    page.screenshot("specviz-recorded-trace.png")


def test_a_malformed_upload_shows_a_message(page, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    page.page.set_input_files("#trace-upload input[type=file]", str(bad))
    assert "not a specviz trace" in page.wait_text("#status", "not a specviz trace")


def test_lecture_mode_enlarges_and_collapses(page):
    page.page.set_input_files("#trace-upload input[type=file]", str(FIXTURE))
    page.wait_round(1)
    page.page.click("#lecture-mode input[type=checkbox]")
    page.page.wait_for_function("() => document.body.classList.contains('sv-lecture')", polling=50)
    size = page.page.evaluate("(s) => parseFloat(getComputedStyle(document.querySelector(s)).fontSize)",
                              "#token-strip .sv-text")
    body = page.page.evaluate("() => parseFloat(getComputedStyle(document.body).fontSize)")
    assert size >= 28 and body >= 20
    page.page.wait_for_function("() => !document.querySelector('#prompt')?.checkVisibility()", polling=50)
    page.page.click("#token-strip")
    page.page.keyboard.press("ArrowRight")  # keyboard-only navigation still works
    page.wait_round(2)
    page.page.wait_for_timeout(300)
    page.screenshot("specviz-lecture.png")


def test_play_advances_by_itself(page):
    page.page.set_input_files("#trace-upload input[type=file]", str(FIXTURE))
    page.wait_round(1)
    page.set_number("pace", 0.3)
    page.page.click("#play")
    page.wait_text("#play", "Pause")
    page.wait_round(7)  # it runs to the last round, then stops
    page.wait_text("#play", "Play")


@pytest.mark.real
@pytest.mark.timeout(600)
def test_real_pair_generates_in_the_browser(browser, dialogs, capsys):
    """The packaged Qwen2.5-Coder 0.5B -> 1.5B pair, 16 new tokens, greedy, then the baseline."""
    from specviz.ui import EngineCache

    started = time.perf_counter()
    demo, url = serve(EngineCache(), {"qwen2.5-coder-0.5b-1.5b-offline": "Qwen2.5-Coder 0.5B → 1.5B"},
                      "qwen2.5-coder-0.5b-1.5b-offline")
    try:
        page = Page(browser, url, dialogs)  # waits until the pair is loaded (the info line names it)
        loaded_s = time.perf_counter() - started
        assert "Qwen2.5-Coder-1.5B-Instruct" in page.text("#run-info")
        page.set_number("temperature", 0)
        n = page.generate("Write a Python function that returns the n-th Fibonacci number.", max_new_tokens=16)
        assert n >= 2 and "Round" in page.text("#token-strip")
        page.page.click("#baseline")
        summary = page.wait_text("#summary", "vs target alone")
        assert "identical" in summary or "differ" in summary
        page.page.click("#prev-round")
        page.wait_round(n - 1)
        page.screenshot("specviz-real-pair.png")
        with capsys.disabled():
            print(f"\n[measure] real pair: page ready with models loaded {loaded_s:.1f} s after start")
    finally:
        demo.close()

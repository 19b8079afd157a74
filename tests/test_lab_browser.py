"""The lab in a real browser: headless Debian Chromium against `lab_ui.demo()` served in this process.

Skips when /usr/bin/chromium is absent. Screenshots go to tests/artifacts/ (gitignored).
"""

import os
import re
from pathlib import Path

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"  # before gradio is imported: no version check, no telemetry

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).parent / "artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:gradio.queueing"),  # gradio's own use of pandas 3
]
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def page(tiny_pair, tokenizer):
    from specviz import lab_ui
    from specviz.engine import Engine
    from specviz.ui import launch_kwargs  # the page's theme and CSS, as the lab is seen inside the app

    engine = Engine(*tiny_pair, tokenizer, "tiny-draft", "tiny-target")  # for the drafter comparison
    demo = lab_ui.demo(lambda preset, progress: engine, "tiny")
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **launch_kwargs())
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(30_000)
            page.goto(url)
            page.wait_for_selector("#lab-histogram .js-plotly-plot")
            yield page
            browser.close()
    finally:
        demo.close()


def text(page, selector: str) -> str:
    return page.inner_text(selector)


def wait_text(page, selector: str, pattern: str) -> str:
    """Wait until the element's text matches the regex, and return that text."""
    page.wait_for_function("([s, p]) => new RegExp(p).test(document.querySelector(s)?.innerText ?? '')",
                           arg=[selector, pattern], polling=50)
    return text(page, selector)


def test_every_view_renders_with_the_worked_examples(page):
    for view in ("#lab-playground", "#lab-histogram", "#lab-explorer"):
        assert page.locator(f"{view} .js-plotly-plot").count() >= 1, view
    assert page.locator("#lab-explorer .js-plotly-plot").count() == 2  # curves and tokens per round
    readout = text(page, "#lab-playground-readout")
    assert "0.700" in readout and "0.667" in readout  # α and the acceptance of " Paris"
    assert text(page, "#lab-expected") == "2.77" and text(page, "#lab-speedup") == "2.31×"
    assert "✓" in text(page, "#lab-histogram-text")


def test_moving_alpha_changes_expected_tokens(page):
    box = page.locator("#lab-alpha input[type=number]")
    box.fill("0.9")
    box.press("Enter")
    assert wait_text(page, "#lab-expected", r"^4\.10$")  # (1 − 0.9^5) / 0.1 = 4.0951
    slider = page.locator("#lab-k input[type=range]")
    slider.focus()
    slider.press("ArrowRight")  # K 4 -> 5
    assert wait_text(page, "#lab-expected", r"^4\.69$")  # (1 − 0.9^6) / 0.1 = 4.6856
    assert "K = 5" in page.locator("#lab-explorer-rounds .gtitle").text_content()


def test_editing_p_renormalises_and_accepts_paris(page):
    page.locator('#lab-table [data-testid="cell-0-2"]').dblclick()  # p(" Paris")
    page.keyboard.press("Control+A")
    page.keyboard.type("0.95")
    page.keyboard.press("Enter")
    readout = wait_text(page, "#lab-playground-readout", r"α = Σ min\(p, q\) = 0\.950")
    paris = next(line for line in readout.splitlines() if "Paris" in line).split()
    assert paris[1:4] == ["0.900", "0.950", "1.000"]  # q, p, and now always accepted
    assert sum(float(line.split()[2]) for line in readout.splitlines()[2:]) == pytest.approx(1, abs=0.005)
    page.locator('#lab-table [data-testid="cell-1-0"]').dblclick()  # rename " London" to markup
    page.keyboard.press("Control+A")
    page.keyboard.type("<b>Lyon")
    page.keyboard.press("Enter")
    assert "<b>Lyon" in wait_text(page, "#lab-playground-readout", "Lyon")  # shown as typed, never as markup
    page.wait_for_function("[...document.querySelectorAll('#lab-playground-plot .xtick text')]"
                           ".some(t => t.textContent.startsWith('<b>Lyon'))", polling=50)
    page.get_by_role("button", name="q(Paris) 0.9, p(Paris) 0.6").click()  # back to the seed example
    wait_text(page, "#lab-playground-readout", r"= 0\.700")


def test_sampling_and_the_wrong_sampler(page):
    page.get_by_label("100,000").check()  # re-samples at once, with the same seed
    wait_text(page, "#lab-histogram-text", r"N = 100,000 rounds \(seed 0\)")
    page.locator("#lab-sample").click()
    page.wait_for_function("document.querySelector('#lab-seed input').value === '1'", polling=50)
    readout = wait_text(page, "#lab-histogram-text", r"N = 100,000 rounds \(seed 0\)")
    assert "✓" in readout  # then the seed moves on, so the next press draws fresh rounds
    assert float(re.search(r"TV\(histogram, p\) = ([0-9.]+)", readout).group(1)) < 0.01
    # p's outline plus the two stacked parts, per token (waited for: plotly redraws the plot on each update)
    page.wait_for_function("document.querySelectorAll('#lab-histogram .js-plotly-plot g.point').length >= 15",
                           polling=50)
    page.get_by_label("wrong: resample from p").check()
    readout = wait_text(page, "#lab-histogram-text", r"✗")
    assert float(re.search(r"TV\(histogram, p\) = ([0-9.]+)", readout).group(1)) > 0.1
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#lab-playground").screenshot(path=str(ARTIFACTS / "lab-playground-wrong-sampler.png"))
    page.get_by_label("correct: residual max(0, p − q)").check()
    wait_text(page, "#lab-histogram-text", r"✓")


def test_upload_a_trace_and_take_its_point(page, tmp_path):
    from test_lab import make_trace

    upload = page.locator("#lab-upload input[type=file]")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    upload.set_input_files(str(bad))
    assert "not a specviz trace" in wait_text(page, "#lab-trace-message", "trace")
    page.locator("#lab-upload button[aria-label='Clear']").first.click()

    good = tmp_path / "run.trace.json"
    good.write_text(make_trace().to_json())
    upload.set_input_files(str(good))
    readout = wait_text(page, "#lab-trace", r"■ Trace")
    assert "&lt;" not in readout and "<i>draft</i>" in readout  # escaped once: shown as typed, never as markup
    assert "c = 0.300" in readout and "2.00×" in readout
    page.get_by_role("button", name="Set α, K, c from the trace").click()
    wait_text(page, "#lab-expected", r"^3\.57$")  # α = 0.83, K = 4: (1 − 0.83^5) / 0.17 = 3.565
    assert page.input_value("#lab-c input[type=number]") == "0.3"
    assert page.locator("#lab-explorer-curves .legendtext", has_text="measured").count() == 1
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#lab-explorer").screenshot(path=str(ARTIFACTS / "lab-explorer-with-trace.png"))
    page.screenshot(path=str(ARTIFACTS / "lab.png"), full_page=True)


def test_compare_drafters_fills_the_table(page):
    section = page.locator("#lab-compare")
    section.scroll_into_view_if_needed()
    assert section.locator("#lab-compare-chart .js-plotly-plot").count() == 1
    page.locator("#lab-compare-run").click()  # the rewrite example is longer than the tiny models' 256 positions
    assert "context" in wait_text(page, "#lab-compare-status", "⚠")
    page.locator("#lab-compare-prompt textarea").fill("")
    page.locator("#lab-compare-run").click()
    assert "prompt is empty" in wait_text(page, "#lab-compare-status", "prompt is empty")

    section.get_by_text("story: nothing to copy").click()  # the example fills the prompt
    page.wait_for_function("document.querySelector('#lab-compare-prompt textarea').value.includes('lighthouse')",
                           polling=50)
    for k in ("4", "8"):  # keep K = 1 and 2 of the default 1, 2, 4, 8
        page.locator("#lab-compare-ks").get_by_label(k, exact=True).uncheck()
    tokens = page.locator("#lab-compare-tokens input[type=number]")
    tokens.fill("8")
    tokens.press("Enter")
    page.locator("#lab-compare-run").click()
    status = wait_text(page, "#lab-compare-status", "✓ 5 runs")
    assert "Fastest:" in status and "×" in status
    drafters = [text(page, f'#lab-compare-table [data-testid="cell-{i}-0"]').strip() for i in range(5)]
    assert drafters == ["target only", "draft model", "prompt lookup", "draft model", "prompt lookup"]
    assert text(page, '#lab-compare-table [data-testid="cell-0-5"]').strip() == "1.00×"  # the target alone
    page.wait_for_function("document.querySelectorAll('#lab-compare-chart .legendtext').length === 2", polling=50)
    assert {t.strip() for t in page.locator("#lab-compare-chart .legendtext").all_text_contents()} == \
        {"draft model", "prompt lookup"}
    ARTIFACTS.mkdir(exist_ok=True)
    section.screenshot(path=str(ARTIFACTS / "lab-compare.png"))

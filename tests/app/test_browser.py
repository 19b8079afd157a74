"""The app in a real browser: headless Debian Chromium against the demo served in this process.

Tiny random-weight models make generation instant; the packaged Qwen pair in the browser: test_browser_real_pair.py.
Skips when /usr/bin/chromium is absent. Screenshots go to tests/artifacts/ (gitignored).
Every check waits for its condition (harness/browser.py's waits poll every 50 ms and return what they saw): streamed
frames, plotly's lazily loaded renderer and its drawing land in no fixed order after the status says "Done".
Only negative checks (a key press that must not step) use a short fixed pause, each beside a positive check of
the same kind that proves it could fail.
"""

import time
from pathlib import Path

import pytest

from harness.browser import AppPage
from tests.helpers import BROWSER, FIXTURE

XSS = "<img src=x onerror=alert(1)>"
SHOWN = "#stage .sv-round:not([hidden])"  # the round on the stage
PANELS = [f"{SHOWN} .sv-strip", f"{SHOWN} .sv-cards", f"{SHOWN} .sv-last", "#tokens-per-pass", f"{SHOWN} .sv-explain"]

pytestmark = BROWSER
sync_api = pytest.importorskip("playwright.sync_api")

from specviz.record.load import load_trace


@pytest.fixture
def dialogs():
    return []


@pytest.fixture
def page(browser, url, dialogs):
    tab = AppPage(browser, url, dialogs)
    yield tab
    tab.close()


def test_generate_then_step_with_buttons_and_keys(page, capsys):
    # The page opened the first recorded example by itself (AppPage waited for it): its charts draw with no Generate.
    page.wait_plotly_loaded()
    page.wait_count("#tokens-per-pass .js-plotly-plot", 1)
    n = page.generate("def fib(n):")
    page.wait_plotly_loaded()
    assert n >= 4 and page.round_shown() == n  # generate() waited for "Round n of n", n from the status line
    page.wait_count("#stage .sv-round", n)  # every round is on the stage, one shown
    page.wait_count("#stage .sv-round:not([hidden])", 1)
    for panel in PANELS:  # every panel drew something
        page.wait_nonempty(panel)
    page.wait_text(f"{SHOWN} .sv-cards", "q (draft)", "p (target)", "min(1,")
    page.wait_text("#tokens-per-pass", "expected", "running mean")
    page.wait_count("#tokens-per-pass .js-plotly-plot", 1)

    page.page.click("#prev-round")
    page.wait_round(n - 1)
    page.page.click(f"{SHOWN} .sv-strip")  # focus out of any field: arrows now step rounds
    clicks = page.nav_clicks()
    started = time.perf_counter()
    page.page.keyboard.press("ArrowLeft")
    assert page.nav_clicks() == clicks + 1  # the key clicked Previous (so the count below can see a key's click)
    page.wait_round(n - 2)
    step_s = time.perf_counter() - started
    page.page.keyboard.press("ArrowRight")
    page.wait_round(n - 1)
    page.page.click("#next-round")
    page.wait_round(n)

    page.page.click("#prompt textarea")  # while typing, arrows move the cursor, not the rounds
    page.wait_js("() => document.activeElement?.closest('#prompt') != null")
    clicks = page.nav_clicks()
    page.page.keyboard.press("ArrowLeft")
    assert page.nav_clicks() == clicks  # the key handler ran during press(): it clicked nothing
    page.settle(500)
    assert page.round_shown() == n

    page.page.click("#prev-round")
    page.wait_round(n - 1)
    page.wait_text(f"{SHOWN} .sv-explain", f"Round {n - 1}.", "target pass")
    page.wait_match(f"{SHOWN} .sv-cards", "→ accept|→ reject|Nothing was drafted")
    page.wait_text(f"{SHOWN} .sv-last", "p (target)")
    page.wait_text("#summary", "acceptance α")
    page.screenshot("specviz-rounds.png")

    with page.page.expect_download() as download:
        page.page.click("#download-trace")
    saved = load_trace(Path(download.value.path()).read_bytes())
    assert len(saved.rounds) == n and saved.prompt == "def fib(n):"
    with capsys.disabled():
        print(f"\n[measure] page interactive {page.ready_s:.2f} s after the server was up; "
              f"← key to redrawn strip {step_s * 1000:.0f} ms")


def test_the_strip_marks_fates_with_icons(page):
    from specviz.view.style import FATES

    page.generate("def fib(n):")  # waited for the last round's strip
    chips = page.page.eval_on_selector_all(
        f"{SHOWN} .sv-text .sv-tok", "els => els.map(e => [e.className, e.querySelector('.sv-icon').textContent])")
    assert len(chips) >= 2
    for classes, icon in chips:  # "sv-tok sv-accepted" carries ✓, and so on
        assert icon == FATES[classes.split()[1].removeprefix("sv-")].icon
    legend = page.page.locator(f"{SHOWN} .sv-legend .sv-icon").all_inner_texts()
    assert legend == [style.icon for style in FATES.values()]


def test_a_script_in_the_prompt_renders_as_text(page, dialogs):
    page.generate(XSS, max_new_tokens=8)
    page.wait_text(f"{SHOWN} .sv-prompt", XSS)
    for panel in PANELS:  # every view of the run has drawn before looking for the payload's markup
        page.wait_nonempty(panel)
    assert page.page.locator("#stage img").count() == 0
    assert page.page.locator('img[src="x"]').count() == 0  # nowhere on the page
    page.settle(300)
    assert dialogs == []  # no alert() ran
    page.page.evaluate("() => alert('probe')")  # and one would have been seen (evaluate returns once dismissed)
    assert dialogs == ["probe"]


def test_open_a_recorded_trace_and_step_it(page):
    page.page.set_input_files("#trace-upload input[type=file]", str(FIXTURE))
    page.wait_text("#status", "Opened a trace of 7 rounds")
    page.wait_round(1)
    page.wait_text("#run-info", "recorded on", "Qwen2.5-Coder-1.5B-Instruct")
    page.page.click("#next-round")
    page.wait_round(2)  # all four drafts accepted, then a bonus
    page.wait_text(f"{SHOWN} .sv-last", "bonus")
    page.wait_text(f"{SHOWN} .sv-strip", "★")
    page.page.click(f"{SHOWN} .sv-strip")
    page.page.keyboard.press("ArrowRight")
    page.wait_round(3)
    page.wait_text(f"{SHOWN} .sv-text", "⏎", "·fibonacci")  # a newline token, a leading-space token
    page.page.click("#lab-tab-button")  # on the Lab tab the arrow keys leave the rounds alone
    page.page.wait_for_selector("#next-round", state="hidden")
    clicks = page.nav_clicks()
    page.page.keyboard.press("ArrowRight")
    assert page.nav_clicks() == clicks  # the key handler ran during press(): it clicked nothing
    page.page.click("#rounds-tab-button")
    page.page.wait_for_selector("#next-round", state="visible")
    page.settle(300)
    assert page.round_shown() == 3
    page.page.keyboard.press("ArrowRight")  # back on the rounds, the same key steps again
    page.wait_round(4)
    page.screenshot("specviz-recorded-trace.png")


def test_a_malformed_upload_shows_a_message(page, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    page.page.set_input_files("#trace-upload input[type=file]", str(bad))
    page.wait_text("#status", "not a specviz trace")


def test_lecture_mode_enlarges_and_collapses(page):
    page.page.set_input_files("#trace-upload input[type=file]", str(FIXTURE))
    page.wait_round(1)
    page.page.click("#lecture-mode input[type=checkbox]")
    page.wait_js("() => document.body.classList.contains('sv-lecture')")
    font = "(s) => parseFloat(getComputedStyle(document.querySelector(s)).fontSize)"
    page.wait_js(f"() => ({font})('{SHOWN} .sv-text') >= 28 && ({font})('body') >= 20")
    page.wait_js("() => !document.querySelector('#prompt')?.checkVisibility()")
    page.page.click(f"{SHOWN} .sv-strip")
    page.page.keyboard.press("ArrowRight")  # keyboard-only navigation still works
    page.wait_round(2)
    page.settle(300)  # let the charts finish redrawing for the screenshot
    page.screenshot("specviz-lecture.png")


def test_play_advances_by_itself(page):
    page.page.set_input_files("#trace-upload input[type=file]", str(FIXTURE))
    page.wait_round(1)
    page.set_number("pace", 0.3)
    page.page.click("#play")
    page.wait_text("#play", "Pause")
    page.wait_round(7)  # it runs to the last round, then stops
    page.wait_text("#play", "Play")


def test_the_round_view_shows_the_caches_and_the_timeline(page):
    n = page.generate("def fib(n):")
    page.wait_text(f"{SHOWN} .sv-cache", "KV caches this round", "draft", "target", "kept", "cropped")
    page.wait_count(f"{SHOWN} .sv-cache .sv-cell-new", 2, at_least=True)
    page.wait_text("#summary", "time to first token", "decode speed")
    page.wait_text("#timeline", "Where the time goes", "press Baseline")
    page.page.click("#prev-round")
    page.wait_round(n - 1)
    page.wait_text(f"{SHOWN} .sv-cache", "The target's pass wrote")
    page.page.click("#baseline")
    page.wait_text("#timeline", "the target alone:", "target step")
    page.wait_text("#summary", " vs ", "decode speed")
    page.screenshot("specviz-caches-timeline.png")


def test_the_costs_tab_measures_the_pair_and_draws_both_charts(page, monkeypatch):
    from specviz.measure import pass_timing

    real = pass_timing.measure_costs  # the tiny pair on a small grid: seconds, not the packaged pair's half minute
    monkeypatch.setattr(pass_timing, "measure_costs", lambda engine, progress=None: real(
        engine, context=32, tokens=(1, 2, 3, 5, 9, 17, 32), batches=(1, 2, 4, 8, 16), repeats=1, progress=progress))
    page.page.click("#costs-tab-button")
    page.page.check("#cost-again input")  # anew: another test of this server (the axe check) may have measured
    page.page.click("#cost-measure")
    page.wait_text("#cost-status", "Measured tiny-target")
    page.wait_text("#cost-readout", "Measured on", "v = t(5) / t(1)", "speedup is E / (K·c + v)",
                   "Three figures of c, each from its own source")  # issue 55, item 4: each c's source, said once
    page.wait_text("#cost-parts", "What a draft from the target's own state costs", "for the output layer",
                   "A draft-model step", "EAGLE-style layer")
    page.wait_count("#cost-ratio .js-plotly-plot", 1)
    page.wait_count("#cost-batch .js-plotly-plot", 1)
    slider = page.page.locator("#cost-k input[type=number]")
    slider.fill("8")
    slider.press("Enter")
    page.wait_text("#cost-readout", "v = t(9) / t(1)")
    page.page.uncheck("#cost-again input")
    page.page.click("#cost-measure")  # measured once per pair: the second press reads the cache
    page.wait_text("#cost-status", "Measured earlier")
    page.screenshot("specviz-costs.png")

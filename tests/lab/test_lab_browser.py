"""The lab in a real browser: headless Debian Chromium against `lab_ui.demo()` served in this process.

Skips when /usr/bin/chromium is absent. Screenshots go to tests/artifacts/ (gitignored).
One server for the module, a fresh tab for each test (so no test depends on what another left on the page), and
every check waits for its condition: plotly redraws a figure some time after the text beside it has changed.
"""

import re

import pytest

from harness.browser import Page, serve_demo
from tests.helpers import BROWSER

pytestmark = BROWSER
sync_api = pytest.importorskip("playwright.sync_api")


class LabPage(Page):
    """A tab on the lab: ready once the histogram of the worked example has been drawn. Text waits read
    `innerText` (the readouts are checked line by line)."""

    def wait_ready(self) -> None:
        self.wait_count("#lab-histogram .js-plotly-plot", 1, at_least=True)

    def wait_text(self, selector: str, *patterns: str) -> str:
        """Wait until the element's innerText matches every JS regex in `patterns`; -> that text."""
        return self.wait_match(selector, *patterns, inner=True)

    def edit_cell(self, selector: str, text: str) -> None:
        """Type `text` into a table cell in place of its value: double-click opens the cell's editor; select-all and
        typing wait until that editor has the focus (pressed earlier, they missed it and the text was appended to
        the old value), and Enter is pressed once the editor holds exactly `text`."""
        self.page.locator(selector).dblclick()
        focused = "() => { const e = document.activeElement; return !!e && ['INPUT', 'TEXTAREA'].includes(e.tagName)" \
                  " && !!e.closest('#lab-table'); }"
        self.wait_js(focused)
        self.page.keyboard.press("Control+A")
        self.page.keyboard.type(text)
        self.wait_js("(t) => document.activeElement?.value === t", text)
        self.page.keyboard.press("Enter")

    def wait_rows(self, selector: str, pattern: str) -> list[list[str]]:
        """Wait until the element's text matches the JS regex `pattern`; -> the cells of its table's data rows
        (read from the cells: the component's progress line, "processing | 0.2s", may sit above the table)."""
        return self.wait_js("([s, p]) => { const e = document.querySelector(s);"
                            " if (!e || !new RegExp(p).test(e.textContent)) return null;"
                            " return [...e.querySelectorAll('table tr')].filter(tr => tr.querySelector('td'))"
                            ".map(tr => [...tr.cells].map(c => c.innerText.trim())); }", [selector, pattern])


@pytest.fixture(scope="module")
def lab_url(tiny_pair, tokenizer):
    """The Lab alone (`lab_ui.demo()`), served in this process for the module."""
    from specviz.app import lab_tab as lab_ui
    from specviz.engine import Engine
    from specviz.app.serving import launch_kwargs  # the page's theme and CSS, as the lab is seen inside the app

    engine = Engine(*tiny_pair, tokenizer, "tiny-draft", "tiny-target")  # for the drafter comparison
    demo = lab_ui.demo(lambda preset, progress: engine, "tiny")
    try:
        yield serve_demo(demo, **launch_kwargs())
    finally:
        demo.close()


@pytest.fixture
def lab(browser, lab_url):
    tab = LabPage(browser, lab_url, viewport=(1400, 1000))
    yield tab
    tab.close()


def test_every_view_renders_with_the_worked_examples(lab):
    for view in ("#lab-playground", "#lab-histogram", "#lab-explorer"):
        lab.wait_count(f"{view} .js-plotly-plot", 1, at_least=True)
    lab.wait_count("#lab-explorer .js-plotly-plot", 2)  # curves and tokens per round, covered at the card's question
    lab.wait_text("#lab-playground-readout", r"0\.700", r"0\.667")  # α and the acceptance of " Paris"
    lab.wait_text("#lab-explorer-readout", "covered until the card above is fully revealed")
    lab.wait_text("#lab-histogram-text", "✓")


def test_moving_alpha_changes_expected_tokens(lab):
    page = lab.page
    lab.wait_text("#lab-explorer-readout", "covered")  # the card's question first, so the waits below see a change
    box = page.locator("#lab-alpha input[type=number]")
    box.fill("0.9")
    box.press("Enter")
    lab.wait_text("#lab-expected", r"^4\.10$")  # (1 − 0.9^5) / 0.1 = 4.0951
    slider = page.locator("#lab-k input[type=range]")
    slider.focus()
    slider.press("ArrowRight")  # K 4 -> 5
    lab.wait_text("#lab-expected", r"^4\.69$")  # (1 − 0.9^6) / 0.1 = 4.6856
    lab.wait_js("() => (document.querySelector('#lab-explorer-rounds .gtitle')?.textContent ?? '').includes('K = 5')")


def test_editing_p_renormalises_and_accepts_paris(lab):
    page = lab.page
    lab.wait_text("#lab-playground-readout", r"= 0\.700")  # the seed example
    lab.edit_cell('#lab-table [data-testid="cell-0-2"]', "0.95")  # p(" Paris")
    rows = lab.wait_rows("#lab-playground-readout", r"α = Σ min\(p, q\) = 0\.950")  # token, q, p, keep, ...
    paris = next(row for row in rows if "Paris" in row[0])
    assert paris[1:4] == ["0.900", "0.950", "1.000"]  # q, p, and now always accepted
    assert len(rows) == 5 and sum(float(row[2]) for row in rows) == pytest.approx(1, abs=0.005)
    lab.edit_cell('#lab-table [data-testid="cell-1-0"]', "<b>Lyon")  # rename " London" to markup
    lab.wait_text("#lab-playground-readout", "<b>Lyon")  # shown as typed, never as markup
    lab.wait_js("() => [...document.querySelectorAll('#lab-playground-plot .xtick text')]"
                ".some(t => t.textContent.startsWith('<b>Lyon'))")
    page.get_by_role("button", name="q(Paris) 0.9, p(Paris) 0.6").click()  # back to the seed example
    lab.wait_text("#lab-playground-readout", r"= 0\.700")


def tv(readout: str) -> float:
    """The readout's TV(histogram, p): "TV(histogram, p) = 0.0031", or "TV(histogram, p) = ½ Σ|…| = 0.0031"."""
    found = re.search(r"TV\(histogram, p\)(?: = [^=·]+)? = ([0-9.]+)", readout)
    assert found, readout
    return float(found.group(1))


def test_sampling_and_the_wrong_sampler(lab):
    page = lab.page
    page.get_by_label("100,000").check()  # re-samples at once, with the same seed
    lab.wait_text("#lab-histogram-text", r"N = 100,000 rounds \(seed 0\)")
    page.locator("#lab-sample").click()
    lab.wait_js("() => document.querySelector('#lab-seed input').value === '1'")
    # then the seed moves on, so the next press draws fresh rounds
    readout = lab.wait_text("#lab-histogram-text", r"N = 100,000 rounds \(seed 0\)", "✓")
    assert tv(readout) < 0.01
    # p's outline plus the two stacked parts, per token (waited for: plotly redraws the plot on each update)
    lab.wait_count("#lab-histogram .js-plotly-plot g.point", 15, at_least=True)
    page.get_by_label("wrong: resample from p").check()
    readout = lab.wait_text("#lab-histogram-text", "✗")
    assert tv(readout) > 0.1
    lab.screenshot("lab-playground-wrong-sampler.png", "#lab-playground")
    page.get_by_label("correct: residual max(0, p − q)").check()
    lab.wait_text("#lab-histogram-text", "✓")


def test_upload_a_trace_and_take_its_point(lab, tmp_path):
    from tests.helpers import make_trace

    page = lab.page
    upload = page.locator("#lab-upload input[type=file]")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    upload.set_input_files(str(bad))
    lab.wait_text("#lab-trace-message", "not a specviz trace")
    page.locator("#lab-upload button[aria-label='Clear']").first.click()

    good = tmp_path / "run.trace.json"
    good.write_text(make_trace().to_json())
    upload.set_input_files(str(good))
    # c and v of the rounds after the first, each step against the baseline's one-token step
    readout = lab.wait_text("#lab-trace", r"■ Trace", "<i>draft</i>", r"c = 0\.189", r"v = 0\.63", r"2\.00×")
    assert "&lt;" not in readout  # escaped once: shown as typed, never as markup
    page.get_by_role("button", name="Set α, K, c, v from the trace").click()
    lab.wait_text("#lab-expected", r"^3\.57$")  # α = 0.83, K = 4: (1 − 0.83^5) / 0.17 = 3.565
    lab.wait_js("() => document.querySelector('#lab-c input[type=number]').value === '0.19'"
                " && document.querySelector('#lab-v input[type=number]').value === '0.63'")
    lab.wait_js("() => [...document.querySelectorAll('#lab-explorer-curves .legendtext')]"
                ".filter(t => t.textContent.includes('measured')).length === 1")
    lab.screenshot("lab-explorer-with-trace.png", "#lab-explorer")
    lab.screenshot("lab.png")


def test_compare_drafters_fills_the_table(lab):
    page = lab.page
    section = page.locator("#lab-compare")
    section.scroll_into_view_if_needed()
    lab.wait_count("#lab-compare #lab-compare-chart .js-plotly-plot", 1)
    page.locator("#lab-compare-run").click()  # the rewrite example is longer than the tiny models' 256 positions
    lab.wait_text("#lab-compare-status", "⚠", "context")
    page.locator("#lab-compare-prompt textarea").fill("")
    page.locator("#lab-compare-run").click()
    lab.wait_text("#lab-compare-status", "prompt is empty")

    section.get_by_text("story: nothing to copy").click()  # the example fills the prompt
    lab.wait_js("() => document.querySelector('#lab-compare-prompt textarea').value.includes('lighthouse')")
    for k in ("4", "8"):  # keep K = 1 and 2 of the default 1, 2, 4, 8
        page.locator("#lab-compare-ks").get_by_label(k, exact=True).uncheck()
    tokens = page.locator("#lab-compare-tokens input[type=number]")
    tokens.fill("8")
    tokens.press("Enter")
    page.locator("#lab-compare-run").click()
    lab.wait_text("#lab-compare-status", "✓ 7 runs", "Fastest:", "×")
    cells = "(n) => [...Array(n).keys()].map(i => document.querySelector(" \
            "`#lab-compare-table [data-testid=\"cell-${i}-0\"]`)?.innerText.trim() ?? '')"
    layers = "the target's first 1 layer"  # self-speculation at ½ of the tiny target's 2 layers
    expected = ["target only", "draft model", "prompt lookup", layers, "draft model", "prompt lookup", layers]
    lab.wait_js(f"(want) => JSON.stringify(({cells})(want.length)) === JSON.stringify(want)", expected)
    lab.wait_js("() => document.querySelector('#lab-compare-table [data-testid=\"cell-0-5\"]')"
                "?.innerText.trim() === '1.00×'")  # the target alone
    legend = lab.wait_js("() => { const t = [...document.querySelectorAll('#lab-compare-chart .legendtext')]"
                         ".map(e => e.textContent.trim()); return t.length === 3 ? t : null; }")
    assert set(legend) == {"draft model", "prompt lookup", layers}
    lab.screenshot("lab-compare.png", "#lab-compare")


def test_v_enters_the_speedup_and_two_positions_are_sampled(lab):
    page = lab.page
    lab.wait_text("#lab-explorer-readout", "covered")  # at the card's question
    lab.wait_text("#lab-exactness-lines", "Why the output is exactly p", r"0\.600 = min\(0\.600, 0\.900\)")
    box = page.locator("#lab-v input[type=number]")
    box.fill("1.5")
    box.press("Enter")
    lab.wait_text("#lab-explorer-readout", r"\(4 × 0\.05 \+ 1\.50\)")
    lab.wait_text("#lab-speedup", r"^1\.63×$")  # 2.7731 / (4 × 0.05 + 1.5) = 1.631: v moved, the cover is off
    page.click("#lab-joint-run")
    lab.wait_text("#lab-joint-text", "✓", "first token|joint")
    lab.wait_count("#lab-joint .js-plotly-plot", 1)
    page.get_by_label("wrong: one draw r for both positions").check()
    page.click("#lab-joint-run")
    lab.wait_text("#lab-joint-text", "✗", r"0\.180 away")
    lab.screenshot("lab-two-positions.png", "#lab-playground")


# What each step of the card uncovers, in order (α = 0.7, K = 4, c = 0.05, 30 tokens/s; test_lab.py derives them
# from theory.py): P(n) for n = 1 … 5, E, E − 1, K·c + v, the speedup, tokens/s.
CARD = [["0.300", "0.210", "0.147", "0.103", "0.240"], ["2.77"], ["1.77"], ["1.20"], ["2.31×"], ["69.3 tokens/s"]]


def wait_card(lab: LabPage, shown: int, status: str) -> str:
    """Wait until the card shows exactly `shown` steps, their numbers in order, and a status with `status`."""
    numbers = [re.escape(n) for step in CARD[:shown] for n in step]
    return lab.wait_js("([n, order, status]) => { const card = document.querySelector('#lab-card');"
                       " if (!card || card.querySelectorAll('li').length !== n) return null;"
                       " const t = card.innerText;"
                       " return new RegExp(order, 's').test(t) && t.includes(status) ? t : null; }",
                       [shown, ".*".join(numbers), status])


def focused(lab: LabPage, elem_id: str) -> bool:
    return lab.page.evaluate("(id) => document.activeElement?.id === id", elem_id)


def test_the_card_reveals_step_by_step_from_the_keyboard(lab):
    page = lab.page
    text = wait_card(lab, 0, "Work it out first")
    lab.wait_text("#lab-explorer-readout", "covered")
    explorer_text = page.evaluate("() => document.querySelector('#lab-explorer').innerText")
    for number in ("0.300", "2.77", "1.77", "1.20", "2.31", "69.3 tokens/s"):  # the answer is nowhere yet
        assert number not in text and number not in explorer_text, number
    assert "30.0 tokens/s" in text and "assumed" in text

    page.get_by_text("Test yourself", exact=True).click()  # a click on the card's title, then Tab: the next stop
    page.keyboard.press("Tab")
    lab.wait_js("() => document.activeElement?.id === 'lab-card-reveal'")
    for shown in range(1, len(CARD) + 1):  # Enter and space in turn, as a keyboard or a clicker's button would
        page.keyboard.press("Enter" if shown % 2 else "Space")
        wait_card(lab, shown, "All 6 steps shown" if shown == len(CARD) else f"{shown} of 6 steps shown")
        assert focused(lab, "lab-card-reveal")  # the focus stays on the button for the next press
    lab.wait_text("#lab-expected", r"^2\.77$")  # revealed: the explorer shows the question's point
    lab.wait_text("#lab-speedup", r"^2\.31×$")
    page.keyboard.press("Enter")  # one press past the last step
    wait_card(lab, len(CARD), "fully revealed")
    lab.screenshot("lab-card.png", "#lab-card-box")

    page.keyboard.press("Tab")  # the next stop: Start over
    lab.wait_js("() => document.activeElement?.id === 'lab-card-restart'")
    page.keyboard.press("Enter")
    wait_card(lab, 0, "Work it out first")
    lab.wait_text("#lab-explorer-readout", "covered")  # still at the question: covered again
    page.keyboard.press("Shift+Tab")
    lab.wait_js("() => document.activeElement?.id === 'lab-card-reveal'")  # on a busy machine focus lands late
    for _ in range(3):  # asked again, with three quick presses, as a clicker sends them: none is dropped
        page.keyboard.press("Space")
    wait_card(lab, 3, "3 of 6 steps shown")


def test_a_clickers_keys_reveal_the_card_while_it_is_on_screen(lab):
    page = lab.page
    wait_card(lab, 0, "Work it out first")
    page.get_by_text("Test yourself", exact=True).click()  # focus on the page, not on a button or a field
    for shown, key in enumerate(["PageDown", "ArrowRight", "Space"], 1):  # what a presenter's clicker sends
        page.keyboard.press(key)
        wait_card(lab, shown, f"{shown} of 6 steps shown")
    page.click("#lab-alpha input[type=number]")  # typing in a field: the keys are the field's
    page.keyboard.press("ArrowRight")
    lab.settle(400)
    wait_card(lab, 3, "3 of 6 steps shown")
    page.get_by_text("Test yourself", exact=True).click()  # ... and the same key away from it reveals (positive)
    page.keyboard.press("ArrowRight")
    wait_card(lab, 4, "4 of 6 steps shown")

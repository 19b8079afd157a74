"""Readable by everyone (issue 24): axe-core's WCAG 2.2 A/AA rules inside the page (normal and lecture mode, quiz mode
with a round revealed, a follower's page, the Lab and Costs tabs with their figures drawn), a skip link to the round
navigation, a pair's box that opens on a key or a click but never on focus alone, round changes and reveals said in a
live region, tooltips that never give away what the quiz hides, and Play under reduced motion.

axe-core comes with the pinned `axe-playwright-python` (its bundled axe.min.js is injected into the page; nothing
is fetched). Every check waits for its condition (harness/browser.py)."""

from __future__ import annotations

import os

import pytest

from specviz.engine import Engine
from harness.browser import AppPage, Page, serve
from tests.helpers import BROWSER

pytestmark = BROWSER
axe_package = pytest.importorskip("axe_playwright_python")
AXE = os.path.join(os.path.dirname(axe_package.__file__), "axe.min.js")
WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
# Gradio's own empty File box puts aria-label on a div with no role (gradio 6.31); it is not ours to change.
GRADIO_OWN = [[".empty.unpadded_box"]]
ROUND = 3  # round 3 of the first example ("Code, greedy") has an accepted, a rejected, a discarded draft and a replacement


def violations(page, context: str = "document") -> list[str]:
    """axe-core's WCAG A/AA violations in the page (or in the element `context` names), one line each."""
    page.add_script_tag(path=AXE)
    found = page.evaluate("""async ([context, exclude, tags]) => {
        const target = context === "document" ? {exclude} : {include: [[context]], exclude};
        const r = await axe.run(target, {runOnly: {type: "tag", values: tags}});
        return r.violations.flatMap(v => v.nodes.map(n => `${v.id}: ${n.target.join(" ")}: ${n.failureSummary}`)); }""",
                          [context, GRADIO_OWN, WCAG])
    return found


def at_round(page: AppPage, number: int) -> None:
    for _ in range(number - 1):
        page.page.click("#next-round")
    page.wait_round(number)


def test_the_page_passes_axe_in_normal_lecture_and_quiz_mode(browser, url):
    page = AppPage(browser, url, viewport=(1280, 720))
    page.wait_plotly_loaded()
    at_round(page, ROUND)
    assert violations(page.page) == []
    page.page.click("#lecture-mode input[type=checkbox]")
    page.wait_js("() => document.body.classList.contains('sv-lecture')")
    page.page.check("#quiz-mode input")
    section = f'#stage .sv-round[data-round="{ROUND}"]'
    assert violations(page.page) == []  # the question, before any reveal
    steps = int(page.page.evaluate(f"() => document.querySelector('{section}').dataset.steps"))
    for _ in range(steps):
        page.page.click(f"{section} .sv-reveal")
    page.wait_js(f"() => document.querySelector('{section}').dataset.revealed === '{steps}'")
    assert violations(page.page) == []
    page.close()


# Every chart in a tab named with a data table of its own (chart_tables.js); -> their names, once all are
DESCRIBED = """(tab) => { const charts = [...document.querySelectorAll(`${tab} .js-plotly-plot[role=figure]`)];
  const done = (gd) => gd.getAttribute('aria-label').endsWith('its data follow as a table') &&
    gd.parentElement.querySelectorAll(':scope > table.sv-plot-data td').length > 0;
  return charts.length && charts.every(done) ? charts.map(gd => gd.getAttribute('aria-label')) : null; }"""


def test_the_lab_and_costs_tabs_pass_axe(browser, url, monkeypatch):
    from specviz.app.lab_tab import CARD_STEPS
    from specviz.measure import pass_timing

    real = pass_timing.measure_costs  # the tiny pair on a small grid: seconds, not the packaged pair's half minute
    monkeypatch.setattr(pass_timing, "measure_costs", lambda engine, progress=None: real(
        engine, context=32, tokens=(1, 2, 3, 5, 9, 17, 32), batches=(1, 2, 4, 8, 16), repeats=1, progress=progress))
    page = AppPage(browser, url, viewport=(1280, 720))
    page.page.click("#lab-tab-button")
    drawn = "#lab-tab .js-plotly-plot[role=figure]:has(.main-svg)"  # drawn and named (chart_tables.js)
    page.wait_count(drawn, 5)  # playground, histogram, the two covered explorer charts, the comparison's note
    assert violations(page.page) == []  # as it opens
    covered = page.wait_js("() => document.querySelector('#lab-explorer-curves [role=figure]')?.ariaLabel")
    assert covered.startswith("Covered until") and covered.endswith("a chart with no data yet")  # named by its note
    assert page.page.locator("#lab-explorer-curves table.sv-plot-data").count() == 0  # and no empty table
    for _ in range(CARD_STEPS):
        page.page.click("#lab-card-reveal")  # the card fully revealed uncovers the explorer's charts
    page.wait_js("() => document.querySelector('#lab-explorer-rounds .gtitle')")
    page.page.click("#lab-joint-run")
    page.page.fill("#lab-compare-prompt textarea", "def f(x):")  # within the tiny pair's context
    page.page.click("#lab-compare-run")
    page.wait_text("#lab-compare-status", "✓")
    page.wait_count(drawn, 6)  # and the two positions' histogram
    page.wait_count("#lab-compare-chart table.sv-plot-data tr", 2, at_least=True)  # the comparison's lines drawn
    assert violations(page.page) == []  # every section with its figures and the comparison's table
    names = page.wait_js(DESCRIBED, "#lab-tab")
    assert len(names) == 6 and not any(name.startswith("chart") for name in names)
    page.page.click("#costs-tab-button")
    page.page.wait_for_selector("#cost-measure", state="visible")
    assert violations(page.page) == []  # before a measurement
    page.page.click("#cost-measure")
    page.wait_text("#cost-status", "Measured")  # measured now, or earlier by another test of this server
    page.wait_count("#costs-tab .js-plotly-plot[role=figure]:has(.main-svg)", 3)  # and the busy server's, recorded
    page.wait_text("#cost-readout", "Measured on")
    assert violations(page.page) == []
    ratio, batch, served = page.wait_js(DESCRIBED, "#costs-tab")
    assert ratio.startswith("What a target pass costs") and batch.startswith("Predicted speedup against batch size")
    assert served.startswith("A busy server, measured")
    page.close()


def test_a_followers_page_passes_axe(browser, url):
    from specviz.app.room_hub import ROOMS
    from specviz.lecture.examples import load_example
    from specviz.lecture.room_trace import quiz_facts

    trace = load_example("story")
    opened = ROOMS.rooms.open(trace.to_json(), quiz_facts(trace))
    ROOMS.rooms.drive(opened.room, opened.key, 2, quiz=True, trace=opened.trace)
    follower = Page(browser, f"{url}room/{opened.room}", viewport=(390, 844))
    follower.wait_text("#sv-where", "Following: round 2")
    assert violations(follower.page) == []
    follower.close()


def test_the_keyboard_skips_to_the_round_and_the_round_is_announced(browser, url):
    page = AppPage(browser, url)
    page.page.keyboard.press("Tab")
    assert page.page.evaluate("() => document.activeElement.classList.contains('sv-skip')")
    page.wait_js("() => document.activeElement.getBoundingClientRect().top >= 0")  # shown when focused
    page.page.keyboard.press("Enter")
    page.wait_js("() => document.activeElement?.id === 'next-round' || "
                 "document.activeElement?.closest('#next-round') !== null")
    page.page.keyboard.press("Enter")  # Next round, pressed from the keyboard
    page.wait_round(2)
    said = page.wait_text("#sv-announce", "Round 2 of")
    assert "accepted" in said  # quiz off: the round's outcome is said too
    page.close()


@pytest.fixture(scope="module")
def two_pairs(tiny_pair, tokenizer):
    """The app with two pairs to choose between (both the tiny pair, the second under another target's name, so
    the run info says which one is loaded)."""
    engines = {"tiny": Engine(*tiny_pair, tokenizer, "tiny-draft", "tiny-target"),
               "again": Engine(*tiny_pair, tokenizer, "tiny-draft", "again-target")}
    demo, url = serve(lambda preset, progress: engines[preset], {"tiny": "Tiny pair", "again": "Tiny pair, again"},
                      "tiny")
    yield url
    demo.close()


BOX = "#preset input[role=combobox]"
LIST_SHOWN = "() => !!document.querySelector('#preset [role=listbox]')?.checkVisibility()"
# Counts the frames the page draws, and those in which the pair's list was shown (a frame is what the user sees)
FRAMES = """() => { window.__frames = 0; window.__listFrames = 0;
  const look = () => { window.__frames += 1; if ((%s)()) window.__listFrames += 1; requestAnimationFrame(look); };
  requestAnimationFrame(look); }""" % LIST_SHOWN


def shut_for_frames(page: AppPage, frames: int = 10) -> None:
    """Wait `frames` more frames (Gradio opens its list in the frame after a focus or key), then check that none of
    them, nor any before since FRAMES started, showed the list."""
    now = page.page.evaluate("() => window.__frames")
    page.wait_js("(n) => window.__frames >= n", now + frames)
    assert page.page.evaluate(f"() => [window.__listFrames, document.querySelector('{BOX}').ariaExpanded]") == \
        [0, "false"]


def test_the_pair_box_opens_on_a_key_never_on_focus(browser, two_pairs):
    page = AppPage(browser, two_pairs, viewport=(1280, 900))
    page.page.evaluate(FRAMES)
    tab_to(page, f"(el) => el.matches('{BOX}')")  # Tab onto the box (WCAG 3.2.1: focus alone changes nothing)
    shut_for_frames(page)
    page.page.keyboard.press("ArrowDown")  # a key opens it, the next pair active
    page.wait_js(LIST_SHOWN)
    page.page.keyboard.press("Enter")
    page.wait_js(f"() => document.querySelector('{BOX}').value === 'Tiny pair, again'")
    page.wait_text("#run-info", "again-target")  # the page loaded the chosen pair
    page.close()


def test_the_pair_box_opens_on_a_click_and_shuts_when_tab_leaves(browser, two_pairs):
    page = AppPage(browser, two_pairs, viewport=(1280, 900))
    tab_to(page, f"(el) => el.matches('{BOX}')")
    page.page.click(BOX)  # a click on the box focused from the keyboard opens it
    page.wait_js(LIST_SHOWN)
    page.page.keyboard.press("Tab")  # Tab leaves it for the next control: shut, and it stays shut
    page.wait_js("() => document.activeElement.closest('#drafter') !== null")
    page.wait_js(f"() => !({LIST_SHOWN})()")
    page.page.evaluate(FRAMES)
    shut_for_frames(page)
    page.page.click(BOX)  # a click from elsewhere opens it too, and a click chooses
    page.page.click('#preset [role=option][aria-label="Tiny pair, again"]')
    page.wait_js(f"() => document.querySelector('{BOX}').value === 'Tiny pair, again'")
    page.wait_text("#run-info", "again-target")
    page.close()


def test_quiz_mode_hides_what_a_tooltip_would_give_away(browser, url):
    page = AppPage(browser, url)
    at_round(page, ROUND)
    page.page.check("#quiz-mode input")
    chips = f'#stage .sv-round[data-round="{ROUND}"] .sv-strip .sv-tok[data-step]'
    page.wait_js(f"() => [...document.querySelectorAll('{chips}')].every(c => !c.title)")
    said = page.text("#sv-announce")
    assert "accepted" not in said  # nothing announced gives the answer away either
    section = f'#stage .sv-round[data-round="{ROUND}"]'
    page.page.click(f"{section} .sv-reveal")
    page.wait_text("#sv-announce", "Revealed step 1")
    first = page.page.evaluate(f"() => [...document.querySelectorAll('{chips}')].filter(c => c.title)"
                               ".map(c => c.dataset.step)")
    assert first and set(first) == {"1"}  # only what is revealed has its tooltip back
    page.page.uncheck("#quiz-mode input")
    page.wait_js(f"() => [...document.querySelectorAll('{chips}')].every(c => c.title)")
    page.close()


def test_play_takes_one_step_a_press_under_reduced_motion(browser, url):
    context = browser.new_context(reduced_motion="reduce", viewport={"width": 1280, "height": 900})
    try:
        page = AppPage(context, url, viewport=None)  # the context's
        page.page.click("#play")
        page.wait_round(2)
        page.wait_text("#play", "Play")
        page.settle(2500)  # longer than the pace (1.5 s): a playing page would have moved on
        assert page.round_shown() == 2
        page.close()
    finally:
        context.close()


def test_charts_have_a_name_and_a_data_table(browser, url):
    page = AppPage(browser, url)
    page.wait_plotly_loaded()
    name = page.wait_js("() => document.querySelector('#tokens-per-pass [role=figure][aria-label]')"
                        "?.getAttribute('aria-label')")
    assert name.startswith("Tokens per target pass") and "data follow as a table" in name
    rounds = int(page.page.evaluate("() => document.querySelector('#stage .sv-stage').dataset.rounds"))
    rows = page.wait_js("(n) => { const t = document.querySelector('#tokens-per-pass table.sv-plot-data');"
                        " const r = t ? t.querySelectorAll('tr').length - 1 : 0; return r >= n ? r : null; }", rounds)
    assert rows >= rounds  # a row per round at least (each series of the chart has one)
    page.close()


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_lecture_mode_grows_with_the_screen(browser, url, size):
    page = AppPage(browser, url, viewport=size)
    page.page.click("#lecture-mode input[type=checkbox]")
    page.wait_js("() => document.body.classList.contains('sv-lecture')")
    at_round(page, ROUND)
    sizes = page.page.evaluate("""() => {
        const px = (el) => parseFloat(getComputedStyle(el).fontSize);
        const shown = [...document.querySelectorAll('#stage .sv-round:not([hidden]) *')]
          .filter(el => el.checkVisibility() && [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()));
        return {text: px(document.querySelector('#stage .sv-round:not([hidden]) .sv-text')),
                smallest: Math.min(...shown.map(px)), root: px(document.documentElement)}; }""")
    assert sizes["root"] == pytest.approx(max(16, 0.0125 * size[0]), abs=0.1)  # 1.25vw, at least 16 px
    assert sizes["text"] == pytest.approx(1.75 * sizes["root"], abs=0.2)  # the strip grows with it (1.75rem)
    if size[0] >= 1920:
        assert sizes["smallest"] >= 18, sizes  # no text on the stage under 18 px at 1920
    page.close()


def test_generate_brings_the_status_and_the_round_into_view(browser, url):
    page = AppPage(browser, url, viewport=(1280, 720))
    page.generate("def fib(n):", max_new_tokens=12)
    inside = page.page.evaluate("""() => ['#status', '#stage .sv-round:not([hidden]) .sv-round-head'].map(s => {
        const r = document.querySelector(s).getBoundingClientRect(); return r.top >= -1 && r.bottom <= innerHeight; })""")
    assert inside == [True, True]  # the status and the newest round's head, above the fold
    page.close()


def tab_to(page: AppPage, matches: str, back: bool = False, most: int = 60) -> int:
    """Press Tab (Shift+Tab with `back`) until the focused element satisfies the JS predicate `matches` (called
    with it); -> the presses it took. Fails past `most`."""
    for presses in range(1, most + 1):
        page.page.keyboard.press("Shift+Tab" if back else "Tab")
        if page.page.evaluate(f"() => ({matches})(document.activeElement)"):
            return presses
    pytest.fail(f"{matches} not reached in {most} presses")


def test_a_whole_lecture_by_keyboard_alone(browser, url):
    page = AppPage(browser, url, viewport=(1280, 900))
    tab_to(page, "(el) => el.closest('#recorded-examples') && el.textContent.includes('Paris')")
    page.page.keyboard.press("Enter")  # open an example
    page.wait_text("#status", "Paris")
    tab_to(page, "(el) => el.closest('#lecture-mode') && el.tagName === 'INPUT'", back=True)
    page.page.keyboard.press("Space")  # lecture mode
    page.wait_js("() => document.body.classList.contains('sv-lecture')")
    tab_to(page, "(el) => el.closest('#quiz-mode') && el.tagName === 'INPUT'")
    page.page.keyboard.press("Space")  # quiz mode
    page.wait_js("() => document.body.classList.contains('sv-quiz')")
    shown = "#stage .sv-round:not([hidden])"
    while page.round_shown() < 2 or page.page.evaluate(f"() => document.querySelector('{shown}').dataset.k") == "0":
        before = page.round_shown()
        page.page.keyboard.press("ArrowRight")  # reveal, then on to the next round
        page.wait_js(f"(b) => Number(document.querySelector('{shown}').dataset.revealed) > 0 || "
                     f"Number(document.querySelector('#stage .sv-stage').dataset.current) > b", before)
    number = page.round_shown()
    page.page.keyboard.press("1")  # answer
    page.wait_js(f"() => document.querySelector('{shown}').dataset.guess === '1'")
    steps = int(page.page.evaluate(f"() => document.querySelector('{shown}').dataset.steps"))
    for step in range(1, steps + 1):
        page.page.keyboard.press("ArrowRight")  # reveal step by step
        page.wait_js(f"() => document.querySelector('{shown}').dataset.revealed === '{step}'")
    page.wait_text(f"{shown} .sv-quiz-said", "Your answer: 1.")
    page.wait_text("#sv-announce", f"Revealed step {steps} of {steps}")
    page.page.keyboard.press("ArrowRight")  # and the next round
    page.wait_round(number + 1)
    page.close()


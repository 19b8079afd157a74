"""Readable by everyone (issue 24, first part): axe-core's WCAG 2.2 A/AA rules inside the page (normal and lecture
mode, quiz mode with a round revealed, and a follower's page), a skip link to the round navigation, round changes
and reveals said in a live region, tooltips that never give away what the quiz hides, and Play under reduced motion.

axe-core comes with the pinned `axe-playwright-python` (its bundled axe.min.js is injected into the page; nothing
is fetched). Every check waits for its condition (tests/browser_util.py)."""

from __future__ import annotations

import os

import pytest

from tests.browser_util import AppPage, Page

pytestmark = pytest.mark.browser
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


def test_a_followers_page_passes_axe(browser, url):
    from specviz.app.room_routes import ROOMS
    from specviz.lecture.examples import load_example
    from specviz.view.room import quiz_facts

    trace = load_example("story")
    opened = ROOMS.store.open(trace.to_json(), quiz_facts(trace))
    ROOMS.store.drive(opened.room, opened.key, 2, quiz=True)
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
    page.wait_text("#sv-announce", "Revealed step 1 of")
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


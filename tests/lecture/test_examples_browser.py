"""The recorded examples in a real browser, while the models are still preparing: `get_engine` blocks on an event
(as the packaged pair's first start does for minutes), and the page must show a recorded round anyway, open others
from the gallery, and work normally once the models are ready.

Skips when /usr/bin/chromium is absent. Every check waits for its condition; the time to the first recorded round
is measured and printed (the goal is 5 s), asserted only against a generous bound.
"""

import threading

import pytest

from harness.browser import Page, launch_browser, serve

from specviz.lecture.examples import EXAMPLES, FIRST, load_example
from tests.helpers import BROWSER

pytestmark = BROWSER
sync_api = pytest.importorskip("playwright.sync_api")
HEAD = "#stage .sv-round:not([hidden]) .sv-round-head"
GENEROUS_S = 30  # the goal is 5 s; on 2 busy cores the page's own scripts alone can take longer


@pytest.fixture
def preparing(tiny_pair, tokenizer):
    """(url, ready): the app whose models load only once `ready` is set."""
    from specviz.engine import Engine

    draft, target = tiny_pair
    engine, ready = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target"), threading.Event()

    def get_engine(preset, progress):
        ready.wait(timeout=600)
        return engine

    demo, url = serve(get_engine, {"tiny": "Tiny random pair"}, "tiny")
    yield url, ready
    ready.set()
    demo.close()


def test_the_first_load_shows_a_recorded_round_while_the_models_prepare(preparing, capsys):
    url, ready = preparing
    with sync_api.sync_playwright() as pw:
        browser = launch_browser(pw)
        tab = Page(browser, url)  # no wait: the models are not ready
        # performance.now() counts from the navigation's start: the moment the strip first said "Round 1 of"
        head, seen_ms = tab.wait_js("(s) => { const t = document.querySelector(s)?.textContent ?? '';"
                                    " return t.includes('Round 1 of') ? [t, performance.now()] : null; }", HEAD)
        first = load_example(FIRST)
        assert f"Round 1 of {len(first.rounds)}" in head
        tab.wait_text("#status", f"Recorded example “{EXAMPLES[FIRST].title}”")
        info = tab.wait_text("#run-info", "recorded on", first.target_model)
        assert not ready.is_set() and "tiny-target" not in info  # the models were still loading throughout

        story = list(EXAMPLES).index("story")
        tab.page.locator("#recorded-examples button").nth(story).click()
        tab.wait_text("#status", f"Recorded example “{EXAMPLES['story'].title}”")
        tab.wait_text(HEAD, f"Round 1 of {len(load_example('story').rounds)}")
        tab.page.click("#next-round")  # stepping needs no model
        tab.wait_text(HEAD, "Round 2 of")

        ready.set()  # the models are ready: the info line names them, the example stays until Generate
        tab.wait_text("#run-info", "tiny-target")
        assert f"Recorded example “{EXAMPLES['story'].title}”" in tab.text("#status")
        assert "Round 2 of" in tab.text(HEAD)
        tab.page.fill("#prompt textarea", "def fib(n):")
        tab.page.click("#generate")
        tab.wait_match("#status", r"Done: \d+ rounds")
        tab.screenshot("specviz-examples.png")
        browser.close()
    assert seen_ms / 1000 < GENEROUS_S
    with capsys.disabled():
        print(f"\n[measure] first recorded round shown {seen_ms / 1000:.2f} s after navigation, models still loading")

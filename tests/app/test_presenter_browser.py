"""The presenter view and the quiz that does not leak (issue 32), in a real browser.

Headless Debian Chromium against the app served in this process on the tiny pair; the shipped examples open by their
deep links, so no model runs. What is checked is what a student sees: computed styles, innerText and the
accessibility tree, never class names (a class may say "discarded" while it looks like every other draft). One server
and one browser for the module; a tab per example is reused across rounds (window.svShow steps between them).
"""

import os
import re

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"  # before gradio is imported: no version check, no telemetry

from harness.browser import CHROMIUM, Page  # noqa: E402
from harness.room_pages import FollowerPage, open_room  # noqa: E402
from specviz.lecture.examples import EXAMPLES  # noqa: E402

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # gradio's own deprecations
]
sync_api = pytest.importorskip("playwright.sync_api")

SHOWN = "#stage .sv-round:not([hidden])"
FATE = re.compile(r"accepted|rejected|discarded|replacement|bonus|examined|[✓✗░◆★]", re.I)

# What a student sees of the round on screen, in quiz mode before its first reveal: the computed style of each
# token of the round in the strip (those after the round's cut mark) and of each card, as one signature each, which
# of them are visible at all, the round's visible text without the legends (a key of symbols, not an answer), and
# every tooltip in it.
SEEN = """() => {
  const sec = document.querySelector('#stage .sv-round:not([hidden])');
  const seen = (e) => e.checkVisibility({visibilityProperty: true, opacityProperty: true});
  const SIDES = ['top', 'right', 'bottom', 'left'];
  const look = (e) => { const c = getComputedStyle(e);
    return [c.color, c.backgroundColor, c.backgroundImage, c.fontWeight, c.fontStyle, c.opacity, c.textDecorationLine,
            c.outlineStyle, c.outlineWidth, c.outlineColor, c.boxShadow,
            ...SIDES.map(s => [c[`border-${s}-style`], c[`border-${s}-width`], c[`border-${s}-color`]].join(' '))]
      .join('|') + '|' + [...e.querySelectorAll('*')].filter(seen).map(x => x.textContent.match(/[✓✗░◆★●]/) ? 'icon' : '')
      .join(''); };
  const cut = sec.querySelector('.sv-text .sv-cut');
  const tokens = []; for (let e = cut?.nextElementSibling; e; e = e.nextElementSibling) tokens.push(e);
  const chips = tokens.flatMap(e => e.matches('.sv-tok') ? [e] : [...e.querySelectorAll('.sv-tok')]);
  const cards = [...sec.querySelectorAll('.sv-cards > *')];
  const nodes = [...sec.querySelectorAll('.sv-tree li > span')].filter(e => !e.title.startsWith('the root'));
  let text = sec.innerText;
  for (const legend of sec.querySelectorAll('.sv-legend, .sv-tree-key')) text = text.replace(legend.innerText, '');
  const titles = [...sec.querySelectorAll('[title]')].filter(e => !e.closest('.sv-legend')).map(e => e.title);
  return {round: Number(sec.dataset.round), drafts: sec.querySelector('.sv-tree') ? 0 : Number(sec.dataset.k),
          chips: chips.filter(seen).map(look), hiddenChips: chips.filter(e => !seen(e)).length,
          cards: cards.filter(seen).map(look), nodes: nodes.filter(seen).map(look), text, titles,
          live: document.getElementById('sv-announce')?.textContent ?? ''};
}"""


def leaks(view: dict) -> list[str]:
    """What of a round's answer a student could read before its first reveal (empty: nothing)."""
    out = []
    for kind in ("chips", "cards", "nodes"):
        if len(set(view[kind])) > 1:
            out.append(f"{kind} look different: {sorted(set(view[kind]))}")
    if len(view["chips"]) != view["drafts"]:  # a chain's drafts, a tree's none: no last token
        out.append(f"{len(view['chips'])} tokens of the round in the strip, {view['drafts']} drafts")
    for name in ("text", "live"):
        if FATE.search(view[name]):
            out.append(f"the {name} says {FATE.search(view[name]).group()!r}: {view[name][:300]!r}")
    out += [f"a tooltip says {t!r}" for t in view["titles"] if FATE.search(t)]
    return out


@pytest.fixture(scope="module")
def url(models):
    from harness.browser import serve

    engine, _ = models
    demo, url = serve(lambda preset, progress: engine, {"tiny": "Tiny random pair"}, "tiny")
    yield url
    demo.close()


def open_linked(browser, url: str, query: str, viewport=(1280, 720)) -> Page:
    """A tab on a deep link (`query`), once the page has opened what it asks for."""
    page = Page(browser, f"{url}?{query}", viewport=viewport)
    page.wait_text("#status", "from a link")
    page.page.wait_for_selector("#generate:not([disabled])")
    return page


def quiz_rounds(page: Page):
    """Each round of the trace on the page, on screen with nothing revealed, quiz on; -> yields SEEN's view."""
    page.wait_js("() => document.body.classList.contains('sv-quiz')")
    n = int(page.page.evaluate("() => document.querySelector('#stage .sv-stage').dataset.rounds"))
    for number in range(1, n + 1):
        page.page.evaluate("(n) => window.svShow(n)", number)
        yield page.page.evaluate(SEEN)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_the_quiz_gives_nothing_away_before_the_reveal(browser, url, name):
    page = open_linked(browser, url, f"example={name}&round=1&step=0")
    try:
        problems = {}
        for view in quiz_rounds(page):
            found = leaks(view) + [f"aria: {t}" for t in aria_leaks(page)]
            if found:
                problems[view["round"]] = found
        assert not problems, f"{name}: {problems}"
    finally:
        page.close()


def aria_leaks(page) -> list[str]:
    """What the accessibility tree says of the round's tokens, cards and head that names a fate."""
    said = []
    for part in (".sv-round-head", ".sv-text", ".sv-cards"):
        snapshot = page.page.locator(f"{SHOWN} {part}").aria_snapshot()
        said += [line.strip() for line in snapshot.splitlines() if FATE.search(line)]
    return said


def test_a_follower_sees_no_answer_before_the_reveal(browser, url):
    lecturer = open_linked(browser, url, "example=paris&round=3&step=0")
    try:
        join = open_room(lecturer)
        follower = FollowerPage(browser, join, viewport=(1280, 720))
        try:
            follower.wait_js("() => document.body.classList.contains('sv-quiz') && "
                             "document.querySelector('#stage .sv-stage').dataset.current === '3'")
            view = follower.page.evaluate(SEEN)
            assert view["drafts"] == 5 and len(view["chips"]) == 5
            assert not leaks(view) + aria_leaks(follower), leaks(view)
        finally:
            follower.close()
    finally:
        lecturer.close()

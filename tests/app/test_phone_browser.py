"""The main page on a phone (issue 36), in a real browser at 390x844: after opening each shipped example, the settings
are folded, the round's head and strip lie within the first screen, no card of any round runs past the stage, and the
residual's card shows every number whole (issue 46), in normal and in lecture mode. One tab for all of it; every round
is measured at once (all sections shown for one read, then hidden again as they were).

Headless Debian Chromium against the app served in this process (the examples need no model).
"""

import pytest

from harness.browser import Page
from specviz.lecture.examples import EXAMPLES, FIRST, load_example
from specviz.record.trace import REPLACEMENT
from tests.helpers import BROWSER

pytestmark = BROWSER
PHONE = (390, 844)
SHOWN = "#stage .sv-round:not([hidden])"

# Every residual card (p′ = norm(max(0, p − q)) beside q and p, after a rejection) of every round (all shown for this one
# read, as in MEASURE): how many, each element in them whose text is cut (wider inside than its box: a number, a token
# cut with "…") or that reaches past its card, and the smallest type in them.
RESIDUAL = """() => {
  const sections = [...document.querySelectorAll('#stage .sv-round')], hidden = sections.map(s => s.hidden);
  sections.forEach(s => { s.hidden = false; });
  const cards = [...document.querySelectorAll('#stage .sv-round .sv-last:has(.sv-bar-res)')], cut = [];
  let smallest = Infinity;
  for (const card of cards) {
    const edge = card.getBoundingClientRect(), round = card.closest('.sv-round').dataset.round;
    for (const e of [card, ...card.querySelectorAll('*')]) {
      const b = e.getBoundingClientRect();
      if (!b.width) continue;
      if ([...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
        smallest = Math.min(smallest, parseFloat(getComputedStyle(e).fontSize));
      if ((e.scrollWidth > e.clientWidth + 1 || b.left < edge.left - 0.5 || b.right > edge.right + 0.5) && cut.length < 5)
        cut.push(`round ${round}: ${e.tagName.toLowerCase()}.${e.className} "${e.textContent.slice(0, 24)}" ` +
                 `${Math.round(b.left)}..${Math.round(b.right)}, ${e.scrollWidth} wide in ${e.clientWidth} ` +
                 `(card ${Math.round(edge.left)}..${Math.round(edge.right)})`);
    }
  }
  sections.forEach((s, i) => { s.hidden = hidden[i]; });
  return {cards: cards.length, cut, smallest};
}"""

# Where the shown round's head and strip lie on the page (top and bottom from the page's top), whether the settings
# are folded, and every element of every round (all shown for this one read) that reaches past the stage's edges.
MEASURE = """() => {
  const box = (e) => { const b = e.getBoundingClientRect(); return {top: b.top + scrollY, bottom: b.bottom + scrollY,
                                                                    left: b.left, right: b.right, width: b.width}; };
  const shown = document.querySelector('#stage .sv-round:not([hidden])');
  const head = box(shown.querySelector('.sv-round-head')), strip = box(shown.querySelector('.sv-strip'));
  const stage = box(document.querySelector('#stage'));
  const sections = [...document.querySelectorAll('#stage .sv-round')];
  const hidden = sections.map(s => s.hidden);
  sections.forEach(s => { s.hidden = false; });
  const past = [];
  for (const s of sections) {
    for (const e of s.querySelectorAll('*')) {
      const b = box(e);
      if (b.width && (b.left < stage.left - 0.5 || b.right > stage.right + 0.5) && past.length < 5)
        past.push(`round ${s.dataset.round}: ${e.tagName.toLowerCase()}.${e.className} ${Math.round(b.left)}..` +
                  `${Math.round(b.right)} (stage ${Math.round(stage.left)}..${Math.round(stage.right)})`);
    }
  }
  sections.forEach((s, i) => { s.hidden = hidden[i]; });
  const squeezed = [...document.querySelectorAll('#sv-nav button, #sv-header label')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.id || e.textContent.trim());
  const st = document.querySelector('#status .sv-status');
  const status = {text: st.textContent, scroll: st.scrollHeight, client: st.clientHeight,
                  overflow: getComputedStyle(st).overflowY};
  return {head, strip, stage, past, squeezed, status, rounds: sections.length,
          folded: !document.querySelector('#controls > .label-wrap.open'),
          pageWidth: document.documentElement.scrollWidth};
}"""


def open_example(page: Page, index: int, title: str) -> None:
    """As a person does: unfold the settings, pick the example, and wait until its round 1 is on the stage and the
    settings have folded again."""
    page.page.evaluate("() => { document.querySelector('#stage .sv-stage').dataset.old = '1'; }")
    if page.page.locator("#controls > .label-wrap.open").count() == 0:
        page.page.click("#controls > .label-wrap")
    page.page.locator("#recorded-examples button").nth(index).click()
    page.wait_js("() => { const s = document.querySelector('#stage .sv-stage'); return s && !s.dataset.old; }")
    page.wait_text("#status", title)
    page.wait_js("() => !document.querySelector('#controls > .label-wrap.open')")
    page.wait_text(f"{SHOWN} .sv-round-head", "Round 1 of")
    page.page.evaluate("() => window.scrollTo(0, 0)")


def measure(page: Page) -> dict:
    """MEASURE's reading, and RESIDUAL's as its "residual"."""
    return page.page.evaluate(MEASURE) | {"residual": page.page.evaluate(RESIDUAL)}


@pytest.fixture(scope="module")
def measured(browser, url) -> dict:
    """(mode, example) -> `measure`'s reading, every shipped example in normal then in lecture mode, in one tab."""
    page = Page(browser, url, viewport=PHONE)
    page.wait_text("#status", "Recorded example")
    page.wait_js("() => !document.querySelector('#controls > .label-wrap.open')")  # folded as the page opened
    out = {("normal", FIRST): measure(page)}
    for mode in ("normal", "lecture"):
        if mode == "lecture":
            page.page.click("#lecture-mode input[type=checkbox]")
            page.wait_js("() => document.body.classList.contains('sv-lecture')")
        for index, (name, example) in enumerate(EXAMPLES.items()):
            if (mode, name) not in out:
                open_example(page, index, example.title)
                out[mode, name] = measure(page)
    page.close()
    return out


CASES = [(mode, name) for mode in ("normal", "lecture") for name in EXAMPLES]


@pytest.mark.parametrize("mode, name", CASES)
def test_the_round_is_on_the_first_screen(measured, mode, name):
    m = measured[mode, name]
    assert m["folded"], "the settings should fold away on a phone"
    # "Drafts poorly" (spices) once ended its strip 9 px below: its description filled 11 lines of the status above;
    # a long status now scrolls within five lines on a phone (assets/style.css)
    assert 0 <= m["head"]["top"] and m["strip"]["bottom"] <= PHONE[1], (m["head"], m["strip"])


@pytest.mark.parametrize("mode, name", CASES)
def test_no_card_runs_past_the_screen(measured, mode, name):
    m = measured[mode, name]
    assert m["rounds"] >= 2 and m["past"] == [], m["past"]
    assert m["stage"]["right"] <= PHONE[0] and m["pageWidth"] <= PHONE[0]
    assert m["squeezed"] == []  # the buttons and switches above the round show their whole text


def test_a_long_status_scrolls_whole_rather_than_pushing_the_round_down(measured):
    """A long description (Drafts poorly) is all in the status line, which scrolls within five lines."""
    m = measured["normal", "spices"]["status"]
    assert EXAMPLES["spices"].description in m["text"]
    assert m["overflow"] == "auto" and m["scroll"] > m["client"] and m["client"] < 120


@pytest.mark.parametrize("mode, name", CASES)
def test_the_residual_card_shows_every_number_whole(measured, mode, name):
    """Issue 46: the residual's card (three numbers a row: q, p and p′) once cut "0.00020" to "0.0002(" at 390 px. Every
    such card of every round: nothing cut, nothing past the card, and no type under the phone's smallest (the bars'
    numbers, 12.24 px: 0.9 of 0.85 rem)."""
    m = measured[mode, name]["residual"]
    rejections = sum(1 for r in load_example(name).rounds if r.next_kind == REPLACEMENT and r.residual
                     and r.tree is None)  # a tree draws its residual in its own card (not measured here)
    assert m["cards"] == rejections, m  # every card measured
    assert m["cut"] == [], m["cut"]
    assert m["smallest"] >= 12 or not rejections, m

"""The presenter view of the Lab and the Costs tab (issue 46), in a real browser: each section alone on a 16:9 screen.

Headless Debian Chromium against the app served in this process on the tiny pair; no model runs (the sections as the
tabs open them, the Costs tab's shipped recording). At both projector sizes, held to the rounds' floor (tests.helpers:
PROJECTOR), for each tab: the link `tab=…&present=1` opens the presenter view at its first section; each section,
reached with PageDown (the card's steps first), fits the window with nothing to scroll, is the only thing on it, and
shows no text under the floor, its charts drawn again to fit; PageUp steps back to the first; Esc gives the page back
as it was. What is measured is what the room sees: boxes, computed font sizes, what lies at each point of the window.
"""

from __future__ import annotations

import time

import pytest

from harness.browser import Page
from tests.helpers import BROWSER, PROJECTOR, TOO_SMALL

pytestmark = BROWSER
sync_api = pytest.importorskip("playwright.sync_api")

ON = ".sv-section.sv-on"

# The section on screen as the room sees it: `fit`, every visible element of it (its box cut by the boxes inside the
# section that clip) outside the window, every chart cut by its own box, and every box inside it that would need a
# scroll, every text of a chart (its title, a label, the legend) past any of the chart's four edges, which cut it,
# and every chart title that runs down into its plot; `small`, every text under `least` px; `others`, what else
# shows: another section, or whatever lies at a point of a 16 x 9 grid over the window that is neither the section nor
# the count; `fitted`, whether its charts are drawn at their box's size (assets/sections.js), `count` and `title`, what
# the screen says of it.
SEEN = """(least) => {
  const sec = document.querySelector('.sv-section.sv-on'), count = document.getElementById('sv-section-count');
  if (!sec) return null;
  const seen = (e) => e.checkVisibility({visibilityProperty: true, opacityProperty: true});
  const name = (e) => (e.id ? '#' + e.id : e.tagName) + ' ' + (e.textContent || '').trim().slice(0, 30);
  const cut = (a, b) => [Math.max(a[0], b.left), Math.max(a[1], b.top), Math.min(a[2], b.right), Math.min(a[3], b.bottom)];
  const clipOf = (e) => {  // the box an element's children are cut to, inside the section
    if (!e || e === sec) return [-1e9, -1e9, 1e9, 1e9];
    const up = clipOf(e.parentElement), c = getComputedStyle(e);
    return c.overflowX === 'visible' && c.overflowY === 'visible' ? up : cut(up, e.getBoundingClientRect());
  };
  const fit = [], small = [], others = [];
  for (const e of [sec, ...sec.querySelectorAll('*')]) {
    const r = e.getBoundingClientRect();
    if (!seen(e) || (!r.width && !r.height)) continue;
    const [x0, y0, x1, y1] = cut(clipOf(e.parentElement), r);
    if (x1 > x0 && y1 > y0 && (x0 < -1 || y0 < -1 || x1 > innerWidth + 1 || y1 > innerHeight + 1))
      fit.push(`${name(e)} at ${[x0, y0, x1, y1].map(Math.round)}`);
    const c = getComputedStyle(e);
    if (/auto|scroll/.test(c.overflowY + c.overflowX) && (e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1))
      fit.push(`${name(e)} scrolls: ${e.scrollWidth}x${e.scrollHeight} in ${e.clientWidth}x${e.clientHeight}`);
  }
  const charts = [...sec.querySelectorAll('.js-plotly-plot')].filter(seen);
  for (const gd of charts) {
    const svg = gd.querySelector('.main-svg')?.getBoundingClientRect(), box = (gd.closest('.block') ?? gd.parentElement).getBoundingClientRect();
    if (svg && (svg.right > box.right + 1 || svg.bottom > box.bottom + 1)) fit.push(`${name(gd.closest('.block'))} is cut`);
    for (const t of gd.querySelectorAll('text')) {  // a title or a label past any edge of the chart is cut by it
      const r = t.getBoundingClientRect();
      if (!svg || !seen(t) || !r.width) continue;
      const past = [r.left < svg.left - 1 && 'left', r.right > svg.right + 1 && 'right',
                    r.top < svg.top - 1 && 'top', r.bottom > svg.bottom + 1 && 'bottom'].filter(Boolean);
      if (past.length) fit.push(`${name(gd.closest('.block'))}: "${t.textContent.slice(0, 30)}" runs past its chart's `
        + past.map((side) => `${side} by ${Math.round(Math.abs(side === 'left' ? svg.left - r.left : side === 'right'
          ? r.right - svg.right : side === 'top' ? svg.top - r.top : r.bottom - svg.bottom))} px`).join(', '));
    }
    const title = gd.querySelector('.gtitle'), plot = svg && svg.top + (gd._fullLayout?._size?.t ?? 0);
    const into = title && seen(title) ? Math.round(title.getBoundingClientRect().bottom - plot) : 0;
    if (into > 1) fit.push(`${name(gd.closest('.block'))}: its title runs ${into} px into its plot`);  // under its data
  }
  """ + TOO_SMALL + """
  small.push(...tooSmall([sec, count], least, seen, name));
  for (const other of document.querySelectorAll('.sv-section')) if (other !== sec && seen(other)) others.push(name(other));
  for (let i = 0; i < 16; i++) for (let j = 0; j < 9; j++) {
    const at = document.elementFromPoint((i + 0.5) * innerWidth / 16, (j + 0.5) * innerHeight / 9);
    if (at && !sec.contains(at) && !count.contains(at) && !at.closest('#sv-present-tools')) others.push(`at ${i},${j}: ${name(at)}`);
  }
  const fitted = charts.every((gd) => gd.layout?._svFitted && gd._fullLayout?.height === gd.layout.height);
  return {fit, small: [...new Set(small)], others: [...new Set(others)], fitted, count: count.textContent,
          title: sec.querySelector('h2, h3')?.textContent.trim() ?? ''};
}"""


def settled(page: Page, least: int, timeout_s: float = 60) -> dict:
    """SEEN once the section's charts are drawn to fit and nothing is amiss, twice half a second apart (a chart is
    drawn more than once as its box settles: one clean reading between two draws proves nothing), else as it is
    after `timeout_s`."""
    deadline, clean_since = time.monotonic() + timeout_s, None
    while True:
        found = page.page.evaluate(SEEN, least)
        clean = found and found["fitted"] and not (found["fit"] or found["small"] or found["others"])
        now = time.monotonic()
        clean_since = (clean_since or now) if clean else None
        if (clean_since is not None and now - clean_since >= 0.5) or now > deadline:
            return found
        page.page.wait_for_timeout(100)


def wait_section(page: Page, number: int, of: int) -> str:
    """Wait until the count says "section `number` of `of`" and that section of the tab is the one on screen."""
    return page.wait_js("([n, of]) => { const on = document.querySelector('.sv-section.sv-on');"
                        " const tab = on?.closest('[role=tabpanel], .tabitem') ?? document;"
                        " const all = [...tab.querySelectorAll('.sv-section')];"
                        " const said = document.getElementById('sv-section-count')?.textContent ?? '';"
                        " return all.indexOf(on) === n - 1 && said.endsWith(`section ${n} of ${of}`) ? said : null; }",
                        [number, of])


def forward(page: Page) -> None:
    """PageDown, as a clicker sends it; on the test-yourself card, first each of its steps in turn."""
    card = f"{ON} #lab-card"
    while page.page.evaluate(f"() => {{ const c = document.querySelector('{card}');"
                             " return !!c && c.querySelectorAll('li').length < Number(c.dataset.steps); }"):
        shown = page.page.evaluate(f"() => document.querySelectorAll('{card} li').length")
        page.page.keyboard.press("PageDown")
        page.wait_js(f"(n) => document.querySelectorAll('{card} li').length > n", shown)
    page.page.keyboard.press("PageDown")


@pytest.mark.parametrize("size", list(PROJECTOR))
@pytest.mark.parametrize("tab", ["lab", "costs"])
def test_each_section_is_one_screen(browser, url, tab, size):
    viewport, least = PROJECTOR[size]
    page = Page(browser, f"{url}?tab={tab}&present=1", viewport=viewport)
    try:
        n = int(page.wait_js("() => document.getElementById('sv-section-count')?.textContent"
                             ".match(/section 1 of (\\d+)/)?.[1]"))
        assert n == page.page.evaluate(f"() => document.querySelectorAll('#{tab}-tab .sv-section').length") > 1
        problems, titles = {}, []
        for number in range(1, n + 1):
            wait_section(page, number, n)
            found = settled(page, least)
            titles.append(found["title"])
            wrong = {k: found[k] for k in ("fit", "small", "others") if found[k]}
            if wrong or not found["fitted"]:
                problems[f"{number} {found['title']}"] = wrong or "its charts never fitted"
            if number < n:
                forward(page)
        assert not problems, problems
        assert all(titles) and len(set(titles)) == n, titles  # each section says what it is
        for number in range(n - 1, 0, -1):
            page.page.keyboard.press("PageUp")
            wait_section(page, number, n)
        page.page.keyboard.press("Escape")  # the page as it was: every section in its place, every chart the server's
        page.wait_js("(tab) => !document.querySelector('.sv-present, .sv-sections, .sv-section.sv-on')"
                     " && [...document.querySelectorAll(`#${tab}-tab .sv-section`)].every(s => s.checkVisibility())"
                     " && [...document.querySelectorAll('.js-plotly-plot')].every(gd => !gd.layout?._svFitted)", tab)
    finally:
        page.close()


def test_the_keys_open_and_leave_the_lab_where_it_was(browser, url):
    """P on the Lab opens at the section in view; Esc leaves the page where it was, its charts as the server drew them;
    a link's `tab=` that names no tab is ignored."""
    page = Page(browser, f"{url}?tab=nowhere", viewport=PROJECTOR["1280x720"][0])
    errors = []
    page.page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.page.click("#lab-tab-button")
        page.wait_js("() => document.querySelector('#lab-explorer-curves .main-svg')")
        page.page.evaluate("() => document.querySelector('#lab-explorer-curves').closest('.sv-section')"
                           ".scrollIntoView()")
        page.page.evaluate("() => document.activeElement?.blur()")
        scrolled = page.page.evaluate("() => scrollY")
        width = page.page.evaluate("() => document.querySelector('#lab-explorer-curves .js-plotly-plot')"
                                   "._fullLayout.width")
        page.page.keyboard.press("p")
        said = page.wait_js("() => document.getElementById('sv-section-count')?.textContent")
        assert said.startswith("Lab · section") and page.page.evaluate(
            "() => !!document.querySelector('.sv-section.sv-on #lab-explorer-curves')"), said  # the section in view
        page.wait_js("() => document.querySelector('.sv-section.sv-on .js-plotly-plot')?.layout?._svFitted")
        announced = page.wait_js("() => { const t = document.getElementById('sv-announce').textContent;"
                                 " return t.startsWith('Lab, section') ? t : null; }")
        assert "tokens per pass" in announced, announced  # the section's title, said
        page.page.keyboard.press("Tab")  # the keys reach the section's controls, and show where they are
        focus = page.wait_js("() => { const e = document.activeElement; return e && e !== document.body &&"
                             " [!!e.closest('.sv-section.sv-on, #sv-present-tools'), getComputedStyle(e).outlineStyle]; }")
        assert focus[0] and focus[1] != "none", focus
        page.page.focus("#lab-alpha input[type=range]")
        page.page.keyboard.press("ArrowRight")  # a focused slider takes the arrows: the section stays
        page.wait_js("() => document.querySelector('#lab-alpha input[type=number]').value === '0.71'")
        assert page.page.evaluate("() => document.getElementById('sv-section-count').textContent") == said
        page.page.keyboard.press("Escape")  # from the slider too
        page.wait_js("([y, w]) => !document.querySelector('.sv-sections') && scrollY === y && !document.querySelector("
                     "'#lab-explorer-curves .js-plotly-plot').layout._svFitted && document.querySelector("
                     "'#lab-explorer-curves .js-plotly-plot')._fullLayout.width === w", [scrolled, width])
        assert not errors, errors
        assert not page.page.evaluate("() => document.querySelector('#status .sv-status-error')")  # nothing said
    finally:
        page.close()

"""The presenter view and the quiz that does not leak (issue 32), in a real browser.

Headless Debian Chromium against the app served in this process on the tiny pair; the shipped examples open by their
deep links, so no model runs. What is checked is what a student sees: computed styles, innerText and the
accessibility tree, never class names (a class may say "discarded" while it looks like every other draft). One server
and one browser for the module, one tab for every example and trace at both sizes (`measured`: window.svShow
steps between rounds, the examples open from the page's list, the window resized), whose findings the tests then read.
"""

import re

import pytest

from harness.browser import Page
from harness.room_pages import FollowerPage, open_room
from specviz.lecture.examples import EXAMPLES, FIRST
from tests.helpers import BROWSER, PROJECTOR, TOO_SMALL

pytestmark = BROWSER
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
  const rows = [...sec.querySelectorAll('.sv-cards > .sv-pos:not(.sv-last) .sv-bar-row:not(.sv-bar-heads)')].filter(seen);
  const bars = (kind) => rows.map(r => r.querySelector(`.sv-bar-${kind}`)).filter(b => b && seen(b)).map(b => b.innerText);
  return {round: Number(sec.dataset.round), drafts: sec.querySelector('.sv-tree') ? 0 : Number(sec.dataset.k),
          greedy: sec.closest('.sv-stage').dataset.greedy === '1', p: bars('p'), q: bars('q'),
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
    if view["greedy"] and view["p"]:  # p is 1 for the target's top token and 0 elsewhere: the verdict itself
        out.append(f"a greedy round shows p before its verdict: {view['p']}")
    if view["greedy"] and "0" in view["q"]:  # a row listed for its p alone
        out.append(f"a greedy round lists a token the draft gave q = 0: {view['q']}")
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


def aria_leaks(page) -> list[str]:
    """What the accessibility tree says of the round's tokens, cards and head that names a fate, but for the legends
    (a key of symbols, the same in every round: a tree's key sits among its cards), as SEEN reads the text."""
    keys = page.page.evaluate(f"() => [...document.querySelectorAll('{SHOWN} :is(.sv-legend, .sv-tree-key)')]"
                              ".map(e => e.textContent.replace(/\\s+/g, ' ').trim().slice(0, 40))")
    said = []
    for part in (".sv-round-head", ".sv-text", ".sv-cards"):
        snapshot = page.page.locator(f"{SHOWN} {part}").aria_snapshot()
        said += [line.strip() for line in snapshot.splitlines()
                 if FATE.search(line) and not any(key and key in line for key in keys)]
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


# --- the presenter view: the whole round on one screen, type for the back of a hall, nothing moves -----------

SIZES = PROJECTOR  # the window, the least font size in px

# Every visible element of the round on screen, as the viewer sees it: its box cut by every box inside the round
# that clips (the strip keeps its newest lines), which must lie in the window (the stage's own box, which clips too,
# does not count: what it cuts off is off the screen); every element of the open rail inside the window too; no card
# wider inside than it is, and "Your answer" (one line that grows at the last reveal) whole; `split`, every token (in
# the strip, a card's head, a bar's row) drawn over two lines where it has no space (its characters' boxes: one whose
# middle lies outside the height of the one before starts a line), though it would fit a line of its own (the width of
# the strip's text, of the card's head, of the card's bars); `cut`, every token cut short: one that can end in "…"
# (text-overflow: ellipsis, and it clips), or whose text runs past its box; `long`, the tokens wider than a line of
# their own (those may only wrap), and `wrapped`, each place one broke ([before, after]); and every text on the screen (the stage, the open rail, the tools) at least
# `least` px.
MEASURE = """(least) => {
  const SPACES = /[\\s·⏎⇥]/u;  // a space, or the mark a token's space is drawn as (view/style.py's VISIBLE)
  const sec = document.querySelector('#stage .sv-round:not([hidden])');
  const seen = (e) => e.checkVisibility({visibilityProperty: true});
  const railOpen = document.body.classList.contains('sv-rail');
  const rails = [...document.querySelectorAll('#sv-rail, #room-box')].filter(e => railOpen && seen(e));
  const H = innerHeight, W = Math.min(innerWidth, ...rails.map(e => e.getBoundingClientRect().left));
  const out = [], name = (e) => (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ')[0] : e.tagName)
    + ' ' + (e.textContent || '').trim().slice(0, 30);
  const clips = new Map();  // element -> the box its children are cut to (document order: parents first)
  const cut = (a, b) => [Math.max(a[0], b.left), Math.max(a[1], b.top), Math.min(a[2], b.right), Math.min(a[3], b.bottom)];
  const clipOf = (e) => {
    if (!sec.contains(e) || e === sec) return [-1e9, -1e9, 1e9, 1e9];
    if (clips.has(e)) return clips.get(e);
    const up = clipOf(e.parentElement), c = getComputedStyle(e);
    const box = c.overflowX === 'visible' && c.overflowY === 'visible' ? up : cut(up, e.getBoundingClientRect());
    clips.set(e, box);
    return box;
  };
  const inside = (e, right) => {
    const r = e.getBoundingClientRect();
    if (!r.width && !r.height) return;
    const [x0, y0, x1, y1] = cut(clipOf(e.parentElement), r);
    if (x1 <= x0 || y1 <= y0) return;  // clipped away: older text of the strip
    if (x0 < -1 || y0 < -1 || x1 > right + 1 || y1 > H + 1)
      out.push(`${name(e)} at ${[x0, y0, x1, y1].map(Math.round)} outside ${right}x${H}`);
  };
  for (const e of [sec, ...sec.querySelectorAll('*')]) if (seen(e)) inside(e, W);
  for (const rail of rails) for (const e of rail.querySelectorAll('*')) if (seen(e)) inside(e, innerWidth);
  for (const card of sec.querySelectorAll('.sv-cards > *'))
    if (seen(card) && card.scrollWidth > card.clientWidth + 1) out.push(`${name(card)} overflows: ${card.scrollWidth} > ${card.clientWidth}`);
  const said = sec.querySelector('.sv-quiz-said');
  if (said && seen(said) && said.scrollWidth > said.clientWidth + 1) out.push(`${name(said)} is cut: ${said.scrollWidth} > ${said.clientWidth}`);
  const split = [], short = [];  // a token drawn on two lines where it has no space there ("museu|m"); cut short
  const long = [], wrapped = [];  // tokens wider than any line they could take; where such a token broke
  for (const tok of sec.querySelectorAll('.sv-tok, .sv-q-tok, .sv-bar-tok')) {
    if (!seen(tok)) continue;
    const c = getComputedStyle(tok), clips = c.overflowX !== 'visible';
    if (clips && c.textOverflow === 'ellipsis') short.push(`${name(tok)} may end in "…" (text-overflow: ellipsis)`);
    if (c.display !== 'inline' && tok.scrollWidth > tok.clientWidth + 1)
      short.push(`${name(tok)} is cut: ${tok.scrollWidth} > ${tok.clientWidth}`);
    const chars = [], walk = document.createTreeWalker(tok, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode())
      for (let i = 0; i < node.length; i++) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const r = range.getClientRects()[0];
        if (r && r.height) chars.push({ch: node.data[i], top: r.top, bottom: r.bottom, middle: (r.top + r.bottom) / 2,
                                       width: r.width});
      }
    const text = (from, to) => chars.slice(from, to).map(c => c.ch).join('');
    // a line of its own: the strip's text, the card's head or its bars (the token's own padding and border included)
    const line = tok.closest('.sv-text, .sv-pos-head, .sv-bars'), lc = line && getComputedStyle(line);
    const room = line ? line.clientWidth - parseFloat(lc.paddingLeft) - parseFloat(lc.paddingRight) : Infinity;
    const whole = chars.reduce((w, ch) => w + ch.width, 0) + ['Left', 'Right'].reduce((w, side) =>
      w + parseFloat(c[`padding${side}`]) + parseFloat(c[`border${side}Width`]), 0);
    const breaks = [];  // a new line: a character whose middle is outside the last one's height, inside a word
    for (let i = 1; i < chars.length; i++) {
      const [a, b] = [chars[i - 1], chars[i]];
      if ((b.middle > a.bottom || b.middle < a.top) && !SPACES.test(a.ch) && !SPACES.test(b.ch)) breaks.push(i);
    }
    // wider than any line it could take (to a pixel: one as wide as its line wraps its last character, or not, as
    // the browser rounds): it may only wrap
    if (whole > room - 1) {
      long.push(tok.textContent);
      wrapped.push(...breaks.map(i => [text(0, i), text(i)]));
      continue;
    }
    split.push(...breaks.map(i => `${name(tok)} splits as "${text(0, i)}|${text(i)}"`));
  }
  """ + TOO_SMALL + """
  const texts = [...document.querySelectorAll('#stage, #sv-present-tools, #sv-help'), ...rails];
  const small = tooSmall(texts, least, seen, name);
  return {fit: out, split, cut: short, long, wrapped, small};
}"""


def open_file(page: Page, path) -> None:
    """Open a trace file through the upload (clearing the file opened before), once its rounds are on the stage."""
    import json

    clear = page.page.locator("#trace-upload button[aria-label='Clear']")
    if clear.count():
        clear.first.click()
    page.page.evaluate("() => { document.querySelector('#stage .sv-stage').dataset.old = '1'; }")
    page.page.set_input_files("#trace-upload input[type=file]", str(path))
    page.wait_js("(n) => { const s = document.querySelector('#stage .sv-stage');"
                 " return s && !s.dataset.old && s.dataset.rounds === String(n); }",
                 len(json.loads(path.read_text())["rounds"]))


def presenting(page: Page) -> None:
    page.page.evaluate("() => window.svPresent(true)")
    page.wait_js("() => document.body.classList.contains('sv-present')")


@pytest.fixture(scope="module")
def wide_traces(tiny_pair, tokenizer, tmp_path_factory):
    """Traces the examples lack, as files to open: a chain of K = 16 and a draft tree, run on the tiny pair."""
    from specviz.engine import Engine, RunSettings

    draft, target = tiny_pair
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    folder = tmp_path_factory.mktemp("presenter")
    runs = {"k16": RunSettings(k=16, temperature=0.0, max_new_tokens=40),
            "k16-sampled": RunSettings(k=16, temperature=1.0, seed=3, max_new_tokens=40),
            "tree": RunSettings(drafter="tree", temperature=1.0, seed=1, max_new_tokens=24)}
    files = {}
    for name, settings in runs.items():
        files[name] = folder / f"{name}.json"
        files[name].write_text(engine.run("def fib(n):", settings).to_json())
    return files


# Every visible element of the round on screen that has an area, and its box, keyed by its place in the section. The
# strip's text counts too: a tree's path, which waits for the reveal with display: none (its length is the answer),
# fills a line of its own, so showing it moves nothing (the empty path has no area before).
BOXES = """() => {
  const sec = document.querySelector('#stage .sv-round:not([hidden])'), out = {};
  [...sec.querySelectorAll('*')].forEach((e, i) => {
    const r = e.getBoundingClientRect();
    if (!e.checkVisibility({visibilityProperty: true}) || !r.width || !r.height) return;  // nothing on screen
    out[i] = [r.left, r.top, r.width, r.height].map(v => Math.round(v * 10) / 10).join(',');
  });
  return out;
}"""

# What a round's layout shows before its first reveal: its head as a student reads it then (K, or a tree's shape: the
# round's number left out) and the height of each card on screen (a tree's two panels), to a tenth of a pixel.
LOOK = """() => {
  const sec = document.querySelector('#stage .sv-round:not([hidden])');
  const head = sec.querySelector('.sv-round-head').innerText.replace(/^Round \\d+ of \\d+/, '').trim();
  const cards = [...sec.querySelectorAll('.sv-cards > *')].filter(e => e.checkVisibility({visibilityProperty: true}))
    .map(e => Math.round(e.getBoundingClientRect().height * 10) / 10);
  return {head, cards};
}"""

# Every round of the trace on the page, in one call (a round trip per step would make this module slow): with the
# quiz off, MEASURE; with it on, from nothing revealed (an answer given, as the class would) to the last step by
# PageDown, what a clicker sends (stepping.js's own listener; the keys test below presses real keys): what a student
# sees before the first step (SEEN, LOOK), every element visible before a step that moved or vanished at it, and MEASURE
# once all is revealed. As nothing visible moves or vanishes, every element of every step is on screen at the last
# one, so one MEASURE proves the fit of every step.
UNREVEAL = """() => {  // every round of the trace on the page: nothing revealed, nothing answered
  for (const sec of document.querySelectorAll('#stage .sv-round')) {
    sec.dataset.revealed = '0';
    delete sec.dataset.guess;
    window.svRefresh(Number(sec.dataset.round));
  }
  return Number(document.querySelector('#stage .sv-stage').dataset.rounds);
}"""
SWEEP = f"""([least, quiz]) => {{
  const SEEN = {SEEN}, MEASURE = {MEASURE}, BOXES = {BOXES}, LOOK = {LOOK}, UNREVEAL = {UNREVEAL};
  const key = (k) => document.dispatchEvent(new KeyboardEvent('keydown', {{key: k, bubbles: true, cancelable: true}}));
  const out = {{}}, rounds = UNREVEAL();
  for (let n = 1; n <= rounds; n++) {{
    window.svShow(n);
    const sec = document.querySelector('#stage .sv-round:not([hidden])'), found = {{moved: []}};
    if (quiz) {{
      found.seen = SEEN();
      found.look = LOOK();
      key(String(Math.min(3, Number(sec.dataset.k))));
      let before = BOXES();
      for (let step = 1; step <= Number(sec.dataset.steps); step++) {{
        key('PageDown');
        if (sec.dataset.revealed !== String(step)) found.moved.push(`PageDown revealed ${{sec.dataset.revealed}}, not ${{step}}`);
        const after = BOXES();
        for (const [i, box] of Object.entries(before))
          if (after[i] !== box) found.moved.push(`step ${{step}}: element ${{i}} ${{box}} -> ${{after[i] ?? 'gone'}}`);
        before = after;
      }}
    }}
    out[n] = Object.assign(found, MEASURE(least));
  }}
  return out;
}}"""


def sweep(page: Page, least: int, quiz: bool) -> dict[int, dict]:
    """SWEEP over the trace on the page, quiz on or off: -> round -> {"fit", "small", "moved", "leaks"}."""
    page.page.evaluate("(on) => window.svQuiz(on)", quiz)
    found = page.page.evaluate(SWEEP, [least, quiz])
    for m in found.values():
        m["moved"] += [f"before the reveal: {leak}" for leak in leaks(m.pop("seen"))] if quiz else []
    return {int(n): m for n, m in found.items()}


# The negative control of LOOK's test: each round laid out on its own, as before issue 64 (then the hidden last card
# set its row's height), and LOOK of every round before its first reveal.
ALONE = """body.sv-present #stage#stage .sv-stage { display: block !important; }
body.sv-present #stage#stage .sv-stage > .sv-round { display: flex !important; visibility: visible; }
body.sv-present #stage#stage .sv-stage > .sv-round[hidden] { display: none !important; }"""
LOOKS_ALONE = f"""(css) => {{
  const LOOK = {LOOK}, UNREVEAL = {UNREVEAL}, style = document.createElement('style'), out = {{}};
  style.textContent = css;
  document.head.append(style);
  for (let n = 1, rounds = UNREVEAL(); n <= rounds; n++) {{ window.svShow(n); out[n] = {{look: LOOK()}}; }}
  style.remove();
  return out;
}}"""


def rail(page: Page, on: bool, new_room: bool = False) -> None:
    """Open (R) or close the room's rail; `new_room`: with a room of its own on the trace on screen, opened from the
    presenter view itself (its rail's "Open a room" the first time, the room panel's button after that)."""
    if page.page.evaluate("() => document.body.classList.contains('sv-rail')") != on:
        page.page.keyboard.press("r")
    if not new_room:
        return
    old = page.page.evaluate("() => document.querySelector('#room-box .sv-lead')?.dataset.room ?? ''")
    if old:
        page.page.evaluate("() => document.getElementById('open-room').click()")  # under the rail, covered
    else:
        page.page.click(".sv-rail-open")
    page.wait_js("(old) => { const lead = document.querySelector('#room-box .sv-lead');"
                 " return lead && lead.dataset.room !== old &&"
                 " document.querySelector('#room-box .sv-class-head')?.checkVisibility(); }", old)


def page_quiz(page: Page) -> dict[int, dict]:
    """The page's own quiz (not the presenter view), each round before its first reveal: -> round -> {"leaks": …}."""
    page.page.evaluate("() => window.svQuiz(true)")
    found = {view["round"]: {"leaks": leaks(view) + [f"aria: {t}" for t in aria_leaks(page)]}
             for view in quiz_rounds(page)}
    page.page.evaluate("() => window.svQuiz(false)")
    return found


def open_example(page: Page, index: int) -> None:
    """Open a shipped example from the list under the presenter view (a click in the page, not a pointer's)."""
    page.page.evaluate("() => { document.querySelector('#stage .sv-stage').dataset.old = '1'; }")
    page.page.evaluate("(i) => document.querySelectorAll('#recorded-examples button')[i].click()", index)
    page.wait_js("() => { const s = document.querySelector('#stage .sv-stage'); return s && !s.dataset.old; }")


# (rail, quiz) in the order swept. The quiz off with the rail open is left out: the quiz's last step shows all that
# the quiz off shows, with its bar reserved above, so with the rail open the quiz on is the larger of the two (and
# the quiz off is swept with the rail closed); a quarter of this module's time, the suite's longest setup.
CASES = ((False, False), (False, True), (True, True))


@pytest.fixture(scope="module")
def measured(browser, url, wide_traces):
    """Every round of every shipped example and of the wide traces (K = 16, a tree), at both sizes, in each of CASES
    (the room's rail closed and open, the quiz off and on: SWEEP); and the page's own quiz at 1280x720. One tab: each
    trace opened once and swept at each size in turn, the window resized as a lecturer drags it onto a projector (the
    rail's room opened at the first size and kept at the second; opening every trace once per size took a quarter of
    this fixture's time).
    -> (size, trace, "rail" or "", "quiz" or "") or ("the page's quiz", trace) -> round -> problems"""
    out = {}
    sizes = list(SIZES.items())
    page = Page(browser, url, viewport=sizes[0][1][0])
    page.wait_text("#status", "Recorded example")
    page.page.wait_for_selector("#generate:not([disabled])")
    for index, name in enumerate([*EXAMPLES, *wide_traces]):
        if name in wide_traces:
            open_file(page, wide_traces[name])
        elif name != FIRST:  # the page opened FIRST (opening it again would change nothing on the stage)
            open_example(page, index)
        for at, (size, (viewport, least)) in enumerate(sizes):
            page.page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
            page.wait_js("([w, h]) => innerWidth === w && innerHeight === h", list(viewport))  # swept at this size
            if size == "1280x720" and name in EXAMPLES:
                out["the page's quiz", name] = page_quiz(page)
            presenting(page)
            for with_rail, quiz in CASES:
                rail(page, with_rail, new_room=with_rail and at == 0)
                out[size, name, "rail" * with_rail, "quiz" * quiz] = sweep(page, least, quiz)
            if size == "1280x720" and name == FIRST:  # the quiz on, the rail open
                out["each round alone", name] = page.page.evaluate(LOOKS_ALONE, ALONE)
            page.page.evaluate("() => window.svQuiz(false)")
            page.page.keyboard.press("Escape")
            # left whatever Escape closed first (the keys' help, where a sweep left it open, keeps the view on): the
            # next trace's upload is hidden in the presenter view, and once its Clear button waited 60 s for it
            page.page.evaluate("() => window.svPresent(false)")
    page.close()
    return out


def problems_at(measured: dict, size: str, kind: str) -> dict:
    """(trace, rail, quiz, round) -> its problems of one kind ("fit", "small", "moved"), for one size."""
    return {(name, with_rail, quiz, n): m[kind] for key, rounds in measured.items() if key[0] == size
            for (_, name, with_rail, quiz) in [key] for n, m in rounds.items() if m.get(kind)}


@pytest.mark.parametrize("size", list(SIZES))
def test_the_whole_round_fits_the_screen(measured, size):
    problems = problems_at(measured, size, "fit")
    assert not problems, f"{len(problems)} rounds do not fit at {size}: {dict(list(problems.items())[:6])}"


@pytest.mark.parametrize("size", list(SIZES))
def test_no_text_is_too_small_for_the_back_of_the_hall(measured, size):
    problems = problems_at(measured, size, "small")
    assert not problems, f"{len(problems)} rounds with small text at {size}: {dict(list(problems.items())[:6])}"


@pytest.mark.parametrize("size", list(SIZES))
def test_no_token_breaks_inside_a_word(measured, size):
    """Issue 55: on narrow cards (K = 16 beside the rail) a token wrapped inside itself ("museu|m"); a token may take
    a line of its own, but breaks, if at all, only at a space of its own."""
    problems = {k: v[:3] for k, v in problems_at(measured, size, "split").items()}
    assert not problems, f"{len(problems)} rounds split a token at {size}: {dict(list(problems.items())[:6])}"


@pytest.mark.parametrize("size", list(SIZES))
def test_no_token_is_cut_short(measured, size):
    """Issue 55, item 6: a token wider than its card ended in "…" (the adaptive example's “·fibonacci” in its round
    of eight drafts, at both sizes); now every token of every round is shown whole, and one wider than any line it could
    take wraps (the test above holds the others to a line of their own). Some round at each size has such a token."""
    problems = {k: v[:3] for k, v in problems_at(measured, size, "cut").items()}
    assert not problems, f"{len(problems)} rounds cut a token at {size}: {dict(list(problems.items())[:6])}"
    assert problems_at(measured, size, "long"), "no round has a token wider than its card: nothing was tested"


SHORT = 12  # characters, its quotes included ("“·fibonacci”"): a token every card's head holds on a line of its own


@pytest.mark.parametrize("size", list(SIZES))
def test_a_short_token_never_wraps_and_no_quote_stands_alone(measured, size):
    """Issue 64, item 8: a token wider than its card may wrap, the last resort, but Adaptive's rounds of eight drafts
    broke “·fibonac|ci”, “pytho|n” and “·retu|rn” in their cards' heads, and at K = 4 beside the rail “·fibonacci”
    left its closing quote alone on a line. Every card is now wide enough for a token of SHORT characters, quoted:
    none wraps, and a longer one never breaks just after its opening quote or before its closing one."""
    problems = {k: [f"{a}|{b}" for a, b in v if len(a + b) <= SHORT or a == "“" or b == "”"]
                for k, v in problems_at(measured, size, "wrapped").items()}
    problems = {k: v[:3] for k, v in problems.items() if v}
    assert not problems, f"{len(problems)} rounds wrap a token at {size}: {dict(list(problems.items())[:6])}"


@pytest.mark.parametrize("size", list(SIZES))
def test_nothing_moves_at_a_reveal_and_nothing_leaks_before_it(measured, size):
    problems = {k: v[:4] for k, v in problems_at(measured, size, "moved").items()}
    assert not problems, f"{len(problems)} rounds move at a reveal at {size}: {dict(list(problems.items())[:4])}"


def tells(rounds: dict[int, dict]) -> dict[str, list]:
    """Rounds that look alike before their first reveal (one head: K, or a tree's shape) whose cards differ in height
    then: -> head -> the heights seen (empty: no tell)."""
    seen = {}
    for m in rounds.values():
        if "look" in m:
            seen.setdefault(m["look"]["head"], set()).add(tuple(m["look"]["cards"]))
    return {head: sorted(heights) for head, heights in seen.items() if len(heights) > 1}


@pytest.mark.parametrize("size", list(SIZES))
def test_before_the_reveal_the_cards_tell_nothing(measured, size):
    """Issue 64, item 1: the hidden last card (a bonus after a clean sweep, the residual otherwise) reserved its own
    height, so in Code's K = 4 rounds the row of empty cards was 290 px high exactly when every draft would be kept,
    else 200 (1280x720, the rail open). Every round of every trace, the rail open and closed, before its first reveal:
    rounds of one K (one tree shape) show cards of one height. Each example compares rounds of a K it repeats."""
    swept = {key[1:3]: rounds for key, rounds in measured.items() if key[0] == size and key[3] == "quiz"}
    problems = {case: found for case, rounds in swept.items() if (found := tells(rounds))}
    assert not problems, f"{len(problems)} traces whose layout tells at {size}: {dict(list(problems.items())[:4])}"
    assert {name for name, _ in swept} >= set(EXAMPLES) and {rail for _, rail in swept} == {"", "rail"}
    for case, rounds in swept.items():
        heads = [m["look"]["head"] for m in rounds.values()]
        assert len(set(heads)) < len(heads) or case[0] not in EXAMPLES, f"{case}: no K seen twice"


def test_the_test_of_the_cards_sees_a_tell(measured):
    """The negative control of the test above: in the example the page opens (Code) at 1280x720, the rail open, with
    each round laid out on its own (as before issue 64: ALONE), rounds of one K show empty cards of different heights."""
    assert tells(measured["each round alone", FIRST])


def test_every_case_was_measured(measured, wide_traces):
    """Each size, rail and quiz setting holds every round of every trace: no case left out by a trace that did not
    open."""
    cases = {key: len(found) for key, found in measured.items() if key[0] in SIZES}
    assert len(cases) == len(SIZES) * len({*EXAMPLES, *wide_traces}) * len(CASES)
    for (size, name, with_rail, quiz), n in cases.items():
        assert n == cases["1280x720", name, "", ""] > 0, (size, name, with_rail, quiz)


# The class's answers in the open rail, with MEASURE's findings (the round and every element of the rail in the window,
# no text too small): each row of the histogram as [its answer, top, bottom, whether it is the ✓ row]; and how a late
# student joins, as the rail shows it: the room's code and where to enter it, each its text or false where not shown.
RAIL = f"""(least) => {{
  const MEASURE = {MEASURE};
  const rows = [...document.querySelectorAll('#room-box .sv-hist-row')].map(r => {{ const b = r.getBoundingClientRect();
    return [r.querySelector('.sv-hist-x').textContent, Math.round(b.top), Math.round(b.bottom),
            r.classList.contains('sv-hist-hit')]; }});
  const join = [...document.querySelectorAll('#room-box p > :is(.sv-room-code, .sv-room-link)')]
    .filter(e => e.parentElement.querySelector('.sv-room-code')).map(e => e.checkVisibility() && e.textContent);
  return Object.assign(MEASURE(least), {{rows, join, height: innerHeight}});
}}"""


def rail_problems(found: dict) -> list[str]:
    """What of the rail (and the round beside it) lies off the screen or is too small; a histogram row off it too."""
    off = [f"the row {x} of the class's answers at {top}..{bottom}, the screen {found['height']} high"
           for x, top, bottom, _ in found["rows"] if top < -1 or bottom > found["height"] + 1]
    return off + found["fit"] + found["small"]


@pytest.mark.parametrize("trace", ["paris", "k16"])
@pytest.mark.parametrize("size", list(SIZES))
def test_the_class_answers_fit_the_rail_after_a_reveal(browser, url, wide_traces, size, trace):
    """Issue 55: with the rail open, a round's reveal drew the class's answers below the screen (the rail 865 px high
    at 1280x720): only the "0" row showed, never the ✓. A room on the trace on screen, a phone's answer, then every
    reveal step by PageDown: the rail and every row of the histogram lie in the window, before the answer, before the
    reveal and after it; in each trace its round with the most drafts: Paris's K = 5, and K = 16 (seventeen rows).
    Issue 64, item 11: after the reveal the rail kept only the QR code; the room's code and where to enter it stay."""
    viewport, least = SIZES[size]
    if trace == "paris":
        page = open_linked(browser, url, "example=paris&round=3&quiz=1", viewport=viewport)
    else:
        page = Page(browser, url, viewport=viewport)
        page.wait_text("#status", "Recorded example")
        page.page.wait_for_selector("#generate:not([disabled])")
        open_file(page, wide_traces[trace])
        page.page.check("#quiz-mode input")
        page.wait_js("() => document.body.classList.contains('sv-quiz')")
    follower = None
    try:
        # the round with the most drafts (the K = 16 trace's first drafts nothing)
        page.page.evaluate("() => window.svShow(Number([...document.querySelectorAll('#stage .sv-round')]"
                           ".sort((a, b) => b.dataset.k - a.dataset.k)[0].dataset.round))")
        presenting(page)
        rail(page, True, new_room=True)
        sec = page.page.evaluate("() => { const s = document.querySelector('#stage .sv-round:not([hidden])'); return"
                                 " {round: s.dataset.round, k: Number(s.dataset.k), steps: Number(s.dataset.steps)}; }")
        assert sec["k"] == (5 if trace == "paris" else 16), sec
        found = {"no answer yet": page.page.evaluate(RAIL, least)}
        join = page.page.evaluate("() => document.querySelector('#room-box .sv-room-link').textContent")
        follower = FollowerPage(browser, join, viewport=(390, 844))
        follower.wait_js("(n) => document.body.classList.contains('sv-quiz') && "
                         "document.querySelector('#stage .sv-stage').dataset.current === n", sec["round"])
        follower.page.click(f'#stage .sv-round[data-round="{sec["round"]}"] .sv-guess[data-guess="1"]')
        page.wait_text("#sv-class-lead", f"1 answered round {sec['round']}")
        found["answered"] = page.page.evaluate(RAIL, least)
        for step in range(1, sec["steps"] + 1):
            page.page.keyboard.press("PageDown")
            page.wait_js("(s) => document.querySelector('#stage .sv-round:not([hidden])').dataset.revealed === s",
                         str(step))
        page.wait_count("#room-box .sv-hist-row", sec["k"] + 1)
        found["revealed"] = after = page.page.evaluate(RAIL, least)
        assert [x for x, *_ in after["rows"]] == [str(n) for n in range(sec["k"] + 1)]
        assert sum(hit for *_, hit in after["rows"]) == 1  # the ✓ row, among them
        code = page.page.evaluate("() => document.querySelector('#room-box .sv-room-code').textContent")
        assert after["join"] == [code, join.rsplit("/", 1)[0]] == found["no answer yet"]["join"], after["join"]
        problems = {state: rail_problems(m) for state, m in found.items() if rail_problems(m)}
        assert not problems, {state: p[:6] for state, p in problems.items()}
    finally:
        if follower:
            follower.close()
        page.close()


# Every answer button of the round on screen: its width and height (to a tenth of a pixel).
GUESSES = """() => [...document.querySelectorAll('#stage .sv-round:not([hidden]) .sv-guess')].map(b => {
  const r = b.getBoundingClientRect(); return [Math.round(r.width * 10) / 10, Math.round(r.height * 10) / 10]; })"""


@pytest.mark.parametrize("size", list(SIZES))
def test_every_answer_button_is_alike(browser, url, size):
    """Issue 55: the quiz's last answer button stood 4 px taller than the others, and read as picked. Paris's round 3
    (answers 0 … 5, one digit each) on the page and in the presenter view: every button one height and one width."""
    viewport, _ = SIZES[size]
    page = open_linked(browser, url, "example=paris&round=3&quiz=1", viewport=viewport)
    try:
        boxes = {}
        for where in ("page", "presenter view"):
            if where == "presenter view":
                presenting(page)
            boxes[where] = page.wait_js(f"() => {{ const b = ({GUESSES})(); return b.length && b[0][1] ? b : null; }}")
        assert all(len(found) == 6 for found in boxes.values()), boxes
        assert all(len(set(map(tuple, found))) == 1 for found in boxes.values()), boxes
    finally:
        page.close()


def test_the_keys_of_the_presenter_view(browser, url):
    """P opens it, ? lists the keys, PageDown and Space reveal step by step in quiz mode, a digit answers, F goes full
    screen and back (the browser's Fullscreen API), Esc leaves; the Present button opens it for the trace on screen."""
    page = open_linked(browser, url, "example=paris&round=3&quiz=1")
    try:
        body = "() => document.body.className"
        page.page.click("#stage .sv-round:not([hidden]) .sv-round-head")
        page.page.keyboard.press("p")
        assert "sv-present" in page.wait_js("() => document.body.classList.contains('sv-present') && document.body.className")
        page.page.keyboard.press("?")
        help_text = page.wait_js("() => document.getElementById('sv-help')?.checkVisibility() && "
                                 "document.getElementById('sv-help').innerText")
        assert all(k in help_text for k in ("PageDown", "PageUp", "Esc", "F", "R", "0 … 9"))
        page.page.keyboard.press("Escape")  # closes the help first
        page.wait_js("() => !document.getElementById('sv-help').checkVisibility()")
        assert "sv-present" in page.page.evaluate(body)
        page.page.keyboard.press("2")
        page.wait_js("() => document.querySelector('#stage .sv-round:not([hidden])').dataset.guess === '2'")
        for step, key in enumerate(["PageDown", " "], start=1):  # round 3's two steps: its draft 1, its last token
            page.page.keyboard.press(key)
            page.wait_js("(s) => document.querySelector('#stage .sv-round:not([hidden])').dataset.revealed === s", str(step))
        page.page.keyboard.press("PageUp")
        page.wait_text("#stage .sv-round:not([hidden]) .sv-round-head", "Round 2 of")
        fullscreen = "() => document.fullscreenElement?.tagName ?? 'none'"  # the Fullscreen API (headless allows it)
        page.page.keyboard.press("f")
        assert page.wait_js(f"() => ({fullscreen})() === 'HTML'")
        page.page.keyboard.press("f")
        assert page.wait_js(f"() => ({fullscreen})() === 'none'")
        page.page.keyboard.press("F")
        assert page.wait_js(f"() => ({fullscreen})() === 'HTML'")
        page.page.keyboard.press("Escape")  # leaves the presenter view and full screen with it
        page.wait_js(f"() => !document.body.classList.contains('sv-present') && ({fullscreen})() === 'none'")
        page.page.click("#present")
        page.wait_js("() => document.body.classList.contains('sv-present')")
        page.page.keyboard.press("Escape")
    finally:
        page.close()


def test_the_quiz_gives_nothing_away_before_the_reveal(measured):
    """In the page's own quiz, every round of every shipped example (the presenter's quiz: the test above)."""
    problems = {(key[1], n): m["leaks"] for key, rounds in measured.items() if key[0] == "the page's quiz"
                for n, m in rounds.items() if m["leaks"]}
    assert not problems, f"{len(problems)} rounds give their answer away: {dict(list(problems.items())[:4])}"

"""A tree run on the page in a real browser: the drafter choice and its widths box reach the engine, the round
shows the drawn tree, and in quiz mode the path (the answer) waits for the Reveal."""

from harness.browser import AppPage
from tests.helpers import BROWSER

pytestmark = BROWSER
SHOWN = "#stage .sv-round:not([hidden])"

# Per shown round: its drawn nodes, and whether its path chips and its tree's fate marks are visible now.
STATE = """() => {
  const s = document.querySelector('#stage .sv-round:not([hidden])');
  const chips = [...s.querySelectorAll('.sv-tree-path .sv-tok')];
  return {nodes: s.querySelectorAll('.sv-tree-node:not(.sv-tree-root)').length,
          steps: s.dataset.steps, k: s.dataset.k,
          chipsShown: chips.filter(c => getComputedStyle(c).display !== 'none').length, chips: chips.length,
          verdictsShown: getComputedStyle(s.querySelector('.sv-tree-verdicts')).visibility === 'visible'};
}"""


def test_a_tree_run_draws_its_tree_and_the_quiz_hides_the_path(browser, url):  # noqa: F811
    page = AppPage(browser, url)
    try:
        page.page.click("#drafter label:has-text('draft tree')")
        box = page.page.locator("#tree-widths textarea, #tree-widths input").first
        box.fill("3-1")
        box.press("Tab")
        n = page.generate("def fib(n):", max_new_tokens=12)
        assert n >= 2
        accepted = page.page.evaluate("() => [...document.querySelectorAll('#stage .sv-round')].map("
                                      "s => Number(s.dataset.accepted))")
        r = max(range(2, n), key=lambda i: accepted[i - 1])  # a round with a path (not the last: it may be cut)
        for number in range(n - 1, r - 1, -1):
            page.page.click("#prev-round")
            page.wait_round(number)
        head = page.wait_text(f"{SHOWN} .sv-round-head", "tree 3-1")
        state = page.wait_js(STATE)
        assert state["nodes"] == 6 and "(6 nodes)" in head and state["steps"] == "1" and state["k"] == "2"
        assert state["chipsShown"] == state["chips"] and state["verdictsShown"]  # quiz off: all shown
        page.page.click("#quiz-mode input[type=checkbox]")
        page.wait_js("() => document.body.classList.contains('sv-quiz')")
        hidden = page.wait_js(f"() => {{ const s = ({STATE})(); return !s.verdictsShown && s.chipsShown === 0 && s; }}")
        assert hidden["chips"] == accepted[r - 1] > 0  # the path's chips are there, hidden
        page.page.click(f"{SHOWN} .sv-reveal")
        page.wait_js(f"() => {{ const s = ({STATE})(); return s.verdictsShown && s.chipsShown === s.chips; }}")
        page.screenshot("tree-round.png", SHOWN)
    finally:
        page.close()

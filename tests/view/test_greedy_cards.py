"""view/cards.py in a greedy round (issue 55, item 1): at temperature 0 p is 1 for the target's top token and 0
elsewhere, so a card's p bars, and a row listed for its p alone, would tell the quiz's answer on the projector. Every
greedy round of every shipped example: what a card shows before its verdict is chosen by q alone, and p waits for
the verdict's step (the browser check of what a student sees: tests/app/test_presenter_browser.py)."""

import re

import pytest

from specviz.lecture.examples import EXAMPLES, load_example
from specviz.record.trace import DraftPosition, TokenProb
from specviz.view.cards import TOP_TOKENS, greedy_rows, position_card

GREEDY = [(name, n) for name in EXAMPLES for n, rnd in enumerate(load_example(name).rounds)
          if load_example(name).greedy and rnd.drafts and not rnd.tree]
ROW = re.compile(r'<div class="sv-bar-row( sv-chosen)?( sv-wait" data-step="(\d+)| sv-blank" aria-hidden="true)?">'
                 r'.*?</div>')


def shown_rows(card: str) -> list[str]:
    """The rows a quiz shows before the verdict: neither waiting for a step nor blank."""
    return [m.group(0) for m in ROW.finditer(card) if not m.group(2)]


def test_the_shipped_examples_have_greedy_rounds_to_check():
    assert len(GREEDY) >= 40 and {name for name, _ in GREEDY} >= {"code", "rewrite"}


@pytest.mark.parametrize("name, index", GREEDY)
def test_a_greedy_card_shows_q_alone_before_its_verdict(name, index):
    rnd = load_example(name).rounds[index]
    for i, d in enumerate(rnd.drafts):
        card = position_card(rnd, i, greedy=True)
        step = re.search(r'data-step="(\d+)"', card).group(1)
        rows = shown_rows(card)
        assert rows and len(ROW.findall(card)) == min(TOP_TOKENS, len(ROW.findall(card)))
        for row in rows:  # q of every listed token is above 0; its p bar waits for the verdict
            assert re.search(r'class="sv-bar sv-bar-q" title="q \(draft\) = (?!0")', row), row
            assert f'sv-bar-p sv-wait" data-step="{step}"' in row, row
        listed = [re.search(r'<code class="sv-bar-tok">(.*?)</code>', r).group(1) for r in rows]
        assert len(rows) == len(greedy_rows(d)) - 1 and len(listed) == len(set(listed))


def test_the_target_s_choice_is_the_last_row_where_q_did_not_list_it():
    """A hand-worked draft: q lists a (drafted) and c; the target wanted b (p = 1, q = 0)."""
    d = DraftPosition(1, "a", q=0.6, p=0.0, fate="rejected", candidates=[
        TokenProb(2, "b", 1.0, 0.0), TokenProb(3, "c", 0.0, 0.3), TokenProb(4, "e", 0.0, 0.05)])
    assert [t and t.text for t in greedy_rows(d)] == ["a", "c", "e", "b"]
    wanted_listed = DraftPosition(1, "a", q=0.6, p=1.0, fate="accepted", candidates=[TokenProb(3, "c", 0.0, 0.3)])
    assert [t and t.text for t in greedy_rows(wanted_listed)] == ["a", "c", None]  # a blank keeps the card's height

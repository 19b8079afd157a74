"""A round in quiz form: what a follower's page holds of a round whose verdicts the lecturer has not revealed (issue
44). Built from what may be shown before the verdicts, never by hiding parts of the full round: whatever is not
written here cannot be read from the page, its source or its tooltips.

What it holds: the round's head (its number and K, or a tree's shape), the text committed before the round, the drafts
as neutral chips (one look whatever their fate: no fate class, icon, tooltip or data attribute), the quiz's question
and answer buttons, and a card per draft position with the drafted token's q and its rivals' (the draft's own top
tokens, ranked by q alone). p, the target's probabilities, only in a sampled round: there p/q gives the chance of
acceptance, min(1, p/q), while the draw r decides; at temperature 0 the target's top token decides the verdict, so p
waits for the reveal. A tree round: its drafted nodes by depth, each with its token and q; no path. What it never
holds: r, a fate, the accepted count, the round's last token (replacement or bonus), the residual, the KV caches,
the explanation, the tokens the pass gave.

At reveal step s of a chain round (record/quiz_data.py), positions 1 … s are drawn in full (cards.position_card, and
the strip's fate chips) and the others stay in quiz form; the last step releases the whole round (view/follower.py).

Pure functions of a trace (no gradio, no models); token text is escaped by token_text.
"""

from __future__ import annotations

from specviz.record.quiz_data import most_accepted, step_of_draft
from specviz.record.trace import Round, Trace
from specviz.settings.bounds import widths_text
from specviz.view.cards import bar_rows, by_q, position_card
from specviz.view.stage import quiz_bar
from specviz.view.strip import RECENT, break_before, chip, draft_title, past_round
from specviz.view.style import cut_by, num
from specviz.view.token_text import quoted, text_html, token_html
from specviz.view.tree import shape_text

# The cards' and the strip's own markup is reused (cards.bar_rows, strip.chip, strip.past_round), so a quiz form's
# bars, fate chips and earlier text look exactly like the full round's.

GREEDY_NOTE = "p waits for the reveal: at temperature 0 the target's top token decides the verdict."
WAIT_NOTE = "The verdicts and the round's last token come at the lecturer's reveal."


def quiz_section(trace: Trace, number: int, revealed: int = 0, shown: bool = False) -> str:
    """Round `number` (1-based) in quiz form, its first `revealed` reveal steps drawn in full (a chain's positions
    1 … revealed; a tree round has one step, its last, so it is always 0 here); hidden unless `shown`."""
    rnd = trace.rounds[number - 1]
    greedy = trace.greedy
    revealed = 0 if rnd.tree else revealed
    if rnd.tree:
        cards = tree_in_quiz_form(rnd)
    elif rnd.drafts:
        cards = "".join(position_card(rnd, i, greedy, cut_by(trace.settings)) if i < revealed
                        else quiz_card(rnd, i, greedy) for i in range(len(rnd.drafts)))
    else:
        cards = '<div class="sv-pos sv-muted">Nothing was drafted this round.</div>'
    return (f'<section class="sv-round sv-quiz-form" data-round="{number}" data-k="{most_accepted(rnd)}" '
            f'data-revealed="{revealed}"{"" if shown else " hidden"}>'
            f'{_strip(trace, number - 1, revealed)}{quiz_bar(most_accepted(rnd), tree=rnd.tree is not None)}'
            f'<div class="sv-cards">{cards}</div><p class="sv-quiz-wait sv-muted">{WAIT_NOTE}</p></section>')


def round_head(trace: Trace, number: int) -> str:
    """'Round 3 of 13 · K = 4' (a tree: its shape and nodes): the head without what the round decided."""
    rnd = trace.rounds[number - 1]
    shape = shape_text(rnd.tree, rnd.k) if rnd.tree else f"K = {rnd.k}"
    return f'<div class="sv-round-head"><b>Round {number} of {len(trace.rounds)}</b> · {shape}</div>'


def _strip(trace: Trace, index: int, revealed: int) -> str:
    """The head, the prompt, the text committed before the round, then its drafts: positions 1 … `revealed` with
    their fates, the others as neutral chips (a tree's none: its path's length is the answer)."""
    rnd, old = trace.rounds[index], index - RECENT
    past = "".join(past_round(r, old=r.index < old) for r in trace.rounds[:index])
    fold = '<span class="sv-fold" title="earlier text, folded in lecture mode">… </span>' if old > 0 else ""
    greedy, cut = trace.greedy, cut_by(trace.settings)
    chips = "" if rnd.tree else "".join(
        chip(d.text, d.fate, draft_title(i, d, greedy, cut), step_of_draft(rnd, i)) if i < revealed
        else neutral_chip(d.text) for i, d in enumerate(rnd.drafts))
    return (f'<div class="sv-strip">{round_head(trace, index + 1)}'
            f'<div class="sv-prompt"><span class="sv-tag">prompt</span>{text_html(trace.prompt)}</div>'
            f'<div class="sv-text"><div>{fold}{past}<span class="sv-cut" title="round {index + 1} starts here">▏'
            f'</span>{chips}</div></div></div>')


def neutral_chip(text: str) -> str:
    """A draft in the strip before its verdict: its token alone, the same for every draft."""
    return f'{break_before(text)}<span class="sv-tok sv-drafted">{token_html(text)}</span>'


def quiz_card(rnd: Round, i: int, greedy: bool) -> str:
    """Draft position i (0-based) before its verdict: the token, q of it and of the draft's rivals, and p beside in a
    sampled round; every card of the round alike."""
    d = rnd.drafts[i]
    kinds = ("q",) if greedy else ("q", "p")
    note = f'<div class="sv-quiz-note">{GREEDY_NOTE}</div>' if greedy else ""
    return (f'<div class="sv-pos sv-quiz-card"><div class="sv-pos-head"><span class="sv-pos-n">{i + 1}</span>'
            f'{quoted(d.text)}</div>{bar_rows(by_q(d), d.token_id, "▶", kinds)}{note}</div>')


def tree_in_quiz_form(rnd: Round) -> str:
    """A tree round before its reveal: each depth's drafted nodes, each with its token and q; no parents, no path,
    no fates."""
    depths = rnd.tree.deepest
    rows = []
    for depth in range(1, depths + 1):
        nodes = "".join(f'<span class="sv-tree-node">{token_html(rnd.drafts[i - 1].text)}<small class="sv-tree-pq">'
                        f'q {num(rnd.drafts[i - 1].q)}</small></span> '
                        for i in range(1, len(rnd.tree.depth)) if rnd.tree.depth[i] == depth)
        rows.append(f"<li><b>Depth {depth}:</b> {nodes}</li>")
    shape = "shaped this round" if rnd.tree.shaped else widths_text(rnd.tree.widths)
    return (f'<div class="sv-tree sv-tree-quiz"><div class="sv-panel-title">The draft tree '
            f'{shape}: {rnd.k} nodes, {depths} deep, by depth</div>'
            f'<ul class="sv-tree-depths">{"".join(rows)}</ul>'
            f'<div class="sv-muted sv-tree-key">Each node: its token and q (draft), read where it was drafted. '
            f'Which node hangs from which, and the path the target keeps, come at the reveal.</div></div>')

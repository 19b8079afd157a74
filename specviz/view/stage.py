"""The stage: every round of a trace rendered once, one shown at a time.

Each round is a `<section class="sv-round">` holding what a student must see for it: the token strip, a card per
draft position (q and p bars, the verdict), the last token's card (residual or bonus), the KV caches, and the
explanation (with its one-line form, one_line.py, which only the presenter view shows). The browser steps between
sections itself (assets/stepping.js), so ← → redraw a round without a server call, and the quiz (record/quiz_data.py;
assets/quiz.js) hides and reveals the elements marked with `data-step` inside a section.

Pure functions of a trace (no gradio, no models).
"""

from __future__ import annotations

from html import escape

from specviz.view.cards import last_token_card, position_card
from specviz.view.style import cut_by
from specviz.view.cache_cells import cache_rows
from specviz.record.quiz_data import QuizState
from specviz.record.quiz_data import most_accepted, reveal_steps
from specviz.view.explanation import explanation
from specviz.view.notices import placeholder
from specviz.view.strip import token_strip
from specviz.record.trace import Trace
from specviz.view.tree import path_verdicts, tree_against_chain, tree_cache, tree_card
from specviz.view.one_line import round_in_one_line
from specviz.view.why_k import why_k


def stage_html(trace: Trace | None, current: int, quiz: QuizState | None = None, latest_only: bool = False,
               hint: str = "") -> str:
    """All rounds of `trace`, round `current` (1-based, clamped) shown. `latest_only`: just the last round (the
    frames while a run streams, each replacing the one before). `quiz`: answers and reveals to restore, from a
    lecture pack."""
    if trace is None or not trace.rounds:
        return placeholder(hint)
    n = len(trace.rounds)
    current = min(max(int(current), 1), n)
    numbers = [n] if latest_only else range(1, n + 1)
    sections = "".join(round_section(trace, i, shown=i == current, quiz=quiz) for i in numbers)
    shown_k = most_accepted(trace.rounds[current - 1])  # the K whose rounds the presenter view lays out together
    return (f'<div class="sv-stage" data-rounds="{n}" data-current="{current}" data-shown-k="{shown_k}" '
            f'data-greedy="{int(trace.greedy)}">{sections}</div>')


def round_section(trace: Trace, number: int, shown: bool, quiz: QuizState | None = None) -> str:
    """Round `number` (1-based) as one section; hidden unless `shown`."""
    i = number - 1
    rnd = trace.rounds[i]
    greedy = trace.greedy
    state = quiz.of(number) if quiz else None
    guess = "" if state is None or state.guess is None else f' data-guess="{state.guess}"'
    revealed = state.revealed if state else 0
    most = most_accepted(rnd)
    if rnd.tree:  # drawn as a tree, revealed in one step; the most it can accept is its depth
        cards, caches = tree_card(trace, i) + path_verdicts(trace, i), tree_cache(trace, i) + tree_against_chain(trace, i)
    else:
        cards, caches = "".join(position_card(rnd, j, greedy, cut_by(trace.settings)) for j in range(len(rnd.drafts))), cache_rows(trace, i)
        cards += "" if rnd.drafts else nothing_drafted(trace, i)
        cards += last_token_card(rnd)
    return (f'<section class="sv-round" data-round="{number}" data-k="{most}" data-accepted="{rnd.n_accepted}" '
            f'data-steps="{reveal_steps(rnd)}" data-revealed="{revealed}"{guess}{"" if shown else " hidden"}>'
            f'{token_strip(trace, i)}{quiz_bar(most, tree=rnd.tree is not None)}'
            f'<div class="sv-cards">{cards}</div>'
            f'<div class="sv-answer sv-after" data-step="{reveal_steps(rnd)}">{round_in_one_line(trace, i)}{caches}'
            f'{explanation(trace, i)}</div></section>')


def nothing_drafted(trace: Trace, index: int) -> str:
    """The card of a round that drafted nothing, in the row where its drafts would be: why, in one line (why_k.py), so
    the presenter view, which has no room for the explanation, says it too. It gives no answer away: with nothing
    drafted, the quiz's only answer is 0."""
    return f'<div class="sv-pos sv-muted sv-none">Nothing was drafted this round. {escape(why_k(trace, index))}.</div>'


def quiz_bar(k: int, tree: bool = False) -> str:
    """The question and its answer buttons 0 … k (shown only in quiz mode), the Reveal button and the score. For a
    tree, k is its depth: the longest path it can accept."""
    answers = "".join(f'<button type="button" class="sv-guess" data-guess="{n}">{n}</button>' for n in range(k + 1))
    question = (f"How long a path of this {k}-deep tree will the target accept?" if tree else
                "Will the target accept the one draft (0 or 1)?" if k == 1 else
                f"How many of the {k} drafts will the target accept?" if k else
                "Nothing was drafted: Reveal shows the target's token.")
    return (f'<div class="sv-quiz-bar"><span class="sv-quiz-q">{question}</span>'
            f'<span class="sv-guesses">{answers if k else ""}</span>'
            f'<button type="button" class="sv-reveal">Reveal ▸</button>'
            f'<span class="sv-quiz-said"></span><span class="sv-score"></span></div>')

"""The token strip: the text committed before a round, then that round's tokens marked by fate (each with its
verdict as a tooltip), and the legend; and what a round decided, in words (`next_text`, `committed_texts`), which
the cards and the cache cells read too. Pure functions of the records in specviz/record/trace.py.
"""

from __future__ import annotations

from html import escape

from specviz.record.quiz_data import reveal_steps, step_of_draft
from specviz.view.style import FATES, cut_by, num, show, tested_p, verdict_text
from specviz.view.token_text import text_html, token_html
from specviz.view.tree import node_qs, shape_text
from specviz.record.trace import ACCEPTED, BONUS, PLAIN, REPLACEMENT, DraftPosition, Round, Trace


def next_text(rnd: Round) -> str:
    """How the round's last token was chosen (plain text)."""
    t = rnd.next_token
    if rnd.next_kind == REPLACEMENT:
        return f"sampled from norm(max(0, p − q)): residual {num(t.residual)} (p = {num(t.p)}, q = {num(t.q)})"
    if rnd.k == 0:
        return f"nothing drafted: drawn from p (p = {num(t.p)})"
    kept = "" if rnd.next_kept else "; not kept: the run ended before it"
    every = "the one draft accepted" if rnd.k == 1 else f"all {rnd.k} accepted"
    return f"{every}: drawn from p at position {rnd.k + 1} (p = {num(t.p)}){kept}"


def committed_texts(rnd: Round) -> list[str]:
    """Texts of the tokens a round appended: the accepted drafts, then the replacement or bonus (cut at EOS)."""
    texts = [d.text for d in rnd.accepted_drafts] + [rnd.next_token.text]
    return texts[:len(rnd.committed_ids)]


RECENT = 3  # rounds of earlier text the lecture screen keeps in the strip; older text folds into "…"


def token_strip(trace: Trace, index: int) -> str:
    """The text committed before round `index`, then that round's tokens marked by fate, with a legend. The
    text older than RECENT rounds is marked, so the lecture screen can fold it away (style.css)."""
    rnd = trace.rounds[index]
    old = index - RECENT
    past = "".join(past_round(r, old=r.index < old) for r in trace.rounds[:index])
    fold = '<span class="sv-fold" title="earlier text, folded in lecture mode">… </span>' if old > 0 else ""
    return (f'<div class="sv-strip">{_round_header(trace, index)}'
            f'<div class="sv-prompt"><span class="sv-tag">prompt</span>{text_html(trace.prompt)}</div>'
            f'<div class="sv-text"><div>{fold}{past}<span class="sv-cut" title="round {index + 1} starts here">▏'
            f'</span>{_round_tokens(rnd, trace.greedy, cut_by(trace.settings), trace.drafter_spec.distinct)}'
            f'</div></div>'
            f'{legend()}</div>')


def _round_header(trace: Trace, index: int) -> str:
    rnd = trace.rounds[index]
    last = {REPLACEMENT: "1 replacement", BONUS: "1 bonus", PLAIN: "the target's token"}[rnd.last_kind] + (
        "" if rnd.next_kept else " not kept")
    accepted = (f"a path of {rnd.n_accepted} of {rnd.tree.deepest} nodes accepted" if rnd.tree and rnd.k
                else f"{rnd.n_accepted} of {rnd.k} draft{'s' * (rnd.k != 1)} accepted" if rnd.k else "nothing drafted")
    result = f"{accepted} + {last} = {rnd.tokens_this_pass} token{'s' * (rnd.tokens_this_pass != 1)} for 1 target pass"
    shape = shape_text(rnd.tree, rnd.k) if rnd.tree else f"K = {rnd.k}"
    outcome = [result] + ([{"eos": "the run ended: end of text"}.get(rnd.stop, "the run ended: max new tokens")]
                          if rnd.stop else [])
    return (f'<div class="sv-round-head"><b>Round {index + 1} of {len(trace.rounds)}</b> · {shape}'
            f'<span class="sv-answer" data-step="{reveal_steps(rnd)}"> · {" · ".join(outcome)}</span></div>')


def past_round(rnd: Round, old: bool = False) -> str:
    title, classes = f"round {rnd.index + 1}", "sv-past sv-old" if old else "sv-past"
    return "".join(f'{break_before(t)}<span class="{classes}" title="{title}">{token_html(t, breaks=True)}</span>'
                   for t in committed_texts(rnd))


def break_before(text: str) -> str:
    """Where a line may wrap in the strip: before a token that starts with whitespace (a word's start), never inside a
    word ("t|wo"); the strip's CSS breaks inside a token only when one is wider than the line."""
    return "<wbr>" if text[:1].isspace() else ""


def _round_tokens(rnd: Round, greedy: bool, cut: str, distinct: bool = False) -> str:
    # A round appends its accepted drafts, then its last token; any of those past len(committed_ids) was cut
    # because the run ended (EOS or max new tokens) before it.
    order = [i for i, d in enumerate(rnd.drafts) if d.fate == ACCEPTED] + [len(rnd.drafts)]
    cut = set(order[len(rnd.committed_ids):])
    shown = order[:-1] if rnd.tree else range(len(rnd.drafts))  # a tree's strip: its path (the tree is drawn)
    qs = node_qs(rnd, distinct, greedy) if rnd.tree else [d.q for d in rnd.drafts]
    chips = [chip(rnd.drafts[i].text, rnd.drafts[i].fate,
                  draft_title(i, rnd.drafts[i], greedy, cut, tested_p(rnd, i), qs[i], distinct),
                  step_of_draft(rnd, i), i in cut)
             for i in shown]
    last = f"{FATES[rnd.last_kind].label}: {next_text(rnd)}"
    if rnd.tree:  # in the quiz, the path's length is the answer: its chips wait for the reveal (style.css)
        chips = [f'<span class="sv-tree-path">{"".join(chips)}</span>']
    chips.append(chip(rnd.next_token.text, rnd.last_kind, last, reveal_steps(rnd), len(rnd.drafts) in cut,
                       last=True))
    return "".join(chips)


def chip(text: str, fate: str, title: str, step: int, cut: bool = False, last: bool = False) -> str:
    """A token of the round on screen; `step`: the quiz step that reveals its fate (the last token's, itself)."""
    s = FATES[fate]
    if cut:
        title += "\n(not committed: the run ended before it)"
    classes = f"sv-tok sv-{fate}" + " sv-cut-off" * cut + " sv-next" * last
    return (f'{break_before(text)}<span class="{classes}" data-step="{step}" title="{escape(title)}">'
            f'{token_html(text)}'
            f'<sup class="sv-icon" aria-label="{s.label}">{s.icon}</sup></span>')


def draft_title(i: int, d: DraftPosition, greedy: bool, cut: str, tested: float | None = None,
                q: float | None = None, distinct: bool = False) -> str:
    """Draft i's tooltip: its fate, p and q (`q`: a tree node's q where drafted, tree.node_qs; else the recorded one)
    and its verdict (`tested`, `distinct`: style.verdict_parts)."""
    return (f"draft {i + 1}: {FATES[d.fate].label} {FATES[d.fate].icon}   “{show(d.text)}” (id {d.token_id})\n"
            f"p (target) = {num(d.p)}   q (draft) = {num(d.q if q is None else q)}\n"
            f"{verdict_text(d, greedy, cut, tested, distinct)}")


def legend() -> str:
    items = "".join(f'<span class="sv-tok sv-{fate}" title="{s.cue}">{s.label}<sup class="sv-icon">{s.icon}</sup>'
                    f'</span>' for fate, s in FATES.items())
    marks = '<span class="sv-key"><span class="sv-ws">·</span> space <span class="sv-ws">⏎</span> newline</span>'
    return f'<div class="sv-legend">{items}{marks}</div>'

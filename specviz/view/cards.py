"""A round's probabilities as HTML bars: one card per draft position (q and p of the drafted token and its top
rivals, with the verdict), and one card for the round's last token (the residual after a rejection, p for the
bonus after a clean sweep).

HTML, not plotly: a card is a few hundred bytes that the browser lays out at once, so the page keeps every round
rendered and steps between them without a server call (see stage.py), and the cards reflow to fit a projector.
Each element that tells what verification decided carries `data-step`, the quiz step that reveals it
(record/quiz_data.py). Pure functions of a Round (no gradio, no models); token text is escaped by token_text.token_html.
"""

from __future__ import annotations

from html import escape

from specviz.drafters import REGISTRY
from specviz.record.quiz_data import reveal_steps, step_of_draft
from specviz.view.strip import next_text
from specviz.view.token_text import quoted, token_html
from specviz.view.style import FATES, num, tested_p, verdict_parts
from specviz.record.trace import BONUS, DISCARDED, REPLACEMENT, DraftPosition, Round, TokenProb

TOP_TOKENS = 4  # candidate tokens per card: the drafted one and its strongest rivals


def top_with(tokens: list[TokenProb], chosen: TokenProb, limit: int = TOP_TOKENS) -> list[TokenProb]:
    """The first `limit` tokens, making sure `chosen` is among them (in place of the last one)."""
    top = tokens[:limit]
    if all(t.token_id != chosen.token_id for t in top):
        top = top[:limit - 1] + [chosen]
    return top


def _bar(kind: str, value: float | None, name: str, step: int | None = None) -> str:
    """One bar: its width is the probability; the number is written beside it. `step`: the quiz step that shows it
    (a greedy round's p, which is the verdict), else always shown."""
    width = f"{100 * min(max(value or 0.0, 0.0), 1.0):.1f}%"
    waits = "" if step is None else f' sv-wait" data-step="{step}'
    return (f'<span class="sv-bar sv-bar-{kind}{waits}" title="{name} = {num(value)}"><span class="sv-track">'
            f'<i style="width:{width}"></i></span><b>{num(value)}</b></span>')


# The columns a card may draw: its class's suffix -> (its symbol, its name in full). The residual is p′, Leviathan et
# al.'s name for norm(max(0, p − q)): "r" names the uniform draw only (the verdicts' r).
COLUMNS = {"q": ("q", "q (draft)"), "p": ("p", "p (target)"), "res": ("p′", "p′ = norm(max(0, p − q))")}


def bar_rows(tokens: list[TokenProb], chosen_id: int, icon: str, kinds: tuple[str, ...],
             p_step: int | None = None, last_step: int | None = None) -> str:
    """A table of tokens, one row each, one bar per kind (q, p, res: the residual p′); the chosen token's row is
    marked `icon`. `p_step`: the quiz step that shows the p bars (a greedy round's); `last_step`: the step that shows
    the last row whole (the target's own choice, which a greedy round's quiz must not list before its verdict)."""
    head = "".join(f'<span class="sv-bar-head sv-bar-{k}">{_head(*COLUMNS[k])}</span>' for k in kinds)
    names = {k: name for k, (_, name) in COLUMNS.items()}
    rows = []
    for n, t in enumerate(tokens):
        blank = t is None  # a row never shown, laid out like the others: every card of a greedy round as tall
        t = TokenProb(-1, " ", None, None) if blank else t
        values = {"q": t.q, "p": t.p, "res": t.residual}
        mine = t.token_id == chosen_id
        mark = f'<span class="sv-mark">{icon}</span>' if mine else '<span class="sv-mark"></span>'
        waits = (' sv-blank" aria-hidden="true' if blank else f' sv-wait" data-step="{last_step}'
                 if last_step is not None and n == len(tokens) - 1 else "")
        rows.append(f'<div class="sv-bar-row{" sv-chosen" * mine}{waits}">{mark}<code class="sv-bar-tok">'
                    f'{token_html(t.text)}</code>'
                    f'{"".join(_bar(k, values[k], names[k], p_step if k == "p" else None) for k in kinds)}</div>')
    return (f'<div class="sv-bars" style="--sv-bars: {len(kinds)}"><div class="sv-bar-row sv-bar-heads">'
            f'<span></span><span></span>{head}</div>{"".join(rows)}</div>')


def by_q(d: DraftPosition, limit: int = TOP_TOKENS) -> list[TokenProb]:
    """The drafted token and the draft's strongest rivals, by q alone. The recorded candidates are the top tokens of
    p and of q together, ranked by the larger of the two; a rival that is there only for its p (q = 0), or their
    order, would tell the target's choice, so rivals are ranked by q, ties by token id."""
    rivals = sorted((t for t in d.candidates if t.token_id != d.token_id and (t.q or 0) > 0),
                    key=lambda t: (-(t.q or 0), t.token_id))
    return [TokenProb(d.token_id, d.text, d.p, d.q)] + rivals[:limit - 1]


def greedy_rows(d: DraftPosition) -> list[TokenProb | None]:
    """A greedy round's card rows, chosen without p: the drafted token and its rivals by q (TOP_TOKENS − 1 at most),
    then one more row, the target's own top token where q did not list it, else the next rival by q, else None (a
    blank row). At temperature 0 p is 1 for the target's top token and 0 elsewhere, so which rows a card lists, how
    many, in which order, and the p bars would each tell the verdict: the quiz hides the p bars and that last row
    until the verdict, and before it every card lists what q alone decides.

    >>> [t and t.text for t in greedy_rows(DraftPosition(1, "a", q=0.6, p=0.0, fate="rejected", candidates=[
    ...     TokenProb(2, "b", 1.0, 0.0), TokenProb(3, "c", 0.0, 0.3)]))]
    ['a', 'c', 'b']
    """
    listed, more = by_q(d, TOP_TOKENS - 1), by_q(d, TOP_TOKENS)[TOP_TOKENS - 1:]
    top = max(d.candidates, key=lambda t: t.p or 0, default=None)
    if top is not None and (top.p or 0) > 0 and all(t.token_id != top.token_id for t in listed):
        return listed + [top]
    return listed + (more or [None])


def _head(symbol: str, name: str) -> str:
    """A column's head: its symbol, then who it belongs to ("q", " (draft)"; "p′", " = norm(max(0, p − q))"). The
    presenter view, whose narrow columns show the symbols alone (present.css), reads the symbol only."""
    return f'<span class="sv-bar-sym">{symbol}</span><span class="sv-bar-who">{name.removeprefix(symbol)}</span>'


def position_card(rnd: Round, i: int, greedy: bool, cut: str = "") -> str:
    """Draft position i (0-based): the drafted token, q and p of it and its rivals, then the verdict (`cut`: what
    zeroes a p in this run, style.cut_by)."""
    d = rnd.drafts[i]
    s = FATES[d.fate]
    step = step_of_draft(rnd, i)
    if greedy:  # p is the verdict at temperature 0: the quiz shows it with the verdict (greedy_rows)
        bars = bar_rows(greedy_rows(d), d.token_id, "▶", ("q", "p"), p_step=step, last_step=step)
    else:
        bars = bar_rows(top_with(d.candidates, TokenProb(d.token_id, d.text, d.p, d.q)), d.token_id, "▶", ("q", "p"))
    return (f'<div class="sv-pos sv-dec-{d.fate}" data-step="{step}">'
            f'<div class="sv-pos-head"><span class="sv-pos-n">{i + 1}</span>{quoted(d.text)}'
            f'<span class="sv-verdict" data-step="{step}"><span class="sv-dec-icon">{s.icon}</span> '
            f'<span class="sv-dec-fate">{s.label}</span></span></div>'
            f'{_proposer(rnd, i)}{bars}'
            f'<div class="sv-dec-why sv-verdict" data-step="{step}">{_why(d, greedy, cut, tested_p(rnd, i))}'
            f'</div></div>')


def _proposer(rnd: Round, i: int) -> str:
    """Who proposed draft i, for a drafter that says it (Medusa heads: which head); else nothing."""
    spec = REGISTRY.get(rnd.drafter)
    said = spec.card_said(i) if spec and spec.card_said else ""
    return f'<div class="sv-pos-from sv-muted">{escape(said)}</div>' if said else ""


def _why(d: DraftPosition, greedy: bool, cut: str, tested: float | None = None) -> str:
    """The verdict written out, its working in spans that a narrow card hides (style.verdict_parts)."""
    parts = (verdict_parts(d, greedy, cut, tested) if d.fate != DISCARDED else
             [("", "not examined"), ("more", ": an earlier draft was rejected")])
    return "".join(f'<span class="sv-why-{role}">{escape(text)}</span>' if role else escape(text)
                   for role, text in parts)


def last_token_card(rnd: Round) -> str:
    """After a rejection: norm(max(0, p − q)) beside p and q, the replacement marked. After a clean sweep (or
    nothing drafted): p at the next position, the bonus marked. Revealed at the round's last quiz step."""
    step, t = reveal_steps(rnd), rnd.next_token
    s = FATES[rnd.last_kind]
    if rnd.next_kind == REPLACEMENT and rnd.residual:
        title = (f"Position {rnd.n_accepted + 1} was rejected: the replacement {s.icon} is sampled from "
                 f"norm(max(0, p − q))")
        body = bar_rows(top_with(rnd.residual, t), t.token_id, s.icon, ("q", "p", "res"))
    elif rnd.next_kind == BONUS and rnd.bonus_candidates:
        every = "The one draft accepted" if rnd.k == 1 else f"All {rnd.k} drafts accepted"
        title = (f"{every}: the bonus {s.icon} is drawn from p at position {rnd.k + 1}"
                 if rnd.k else f"Nothing drafted: the target's token {s.icon} is drawn from p")
        if not rnd.next_kept:
            title = f"{every}, ending the text: the bonus {s.icon} is not kept"
        body = bar_rows(top_with(rnd.bonus_candidates, t), t.token_id, s.icon, ("p",))
    else:
        title, body = "The last token", ('<div class="sv-muted">This trace did not record the distribution the '
                                          'round\'s last token was drawn from.</div>')
    return (f'<div class="sv-pos sv-last sv-dec-{rnd.last_kind}" data-step="{step}">'
            f'<div class="sv-pos-head"><span class="sv-pos-n">→</span>{quoted(t.text)}'
            f'<span class="sv-dec-icon">{s.icon}</span> <span class="sv-dec-fate">{s.label}</span></div>'
            f'<div class="sv-last-title">{escape(title)}</div>{body}'
            f'<div class="sv-dec-why">{escape(next_text(rnd))}</div></div>')

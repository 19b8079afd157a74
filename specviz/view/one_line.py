"""A round in one plain sentence: the line the presenter view shows under the cards (assets/present.css), where the
page shows the full explanation (explanation.py) that no projector fits beside the cards; for an adaptive round, why it
drafted as many as it did (why_k.py: the cost-aware rule's deciding comparison) after it.

Pure function of a round of a trace (no gradio, no models); token text goes through token_text.quoted, and the
reason through html.escape, so both are escaped.

>>> from specviz.record.trace import Round, TokenProb, Trace
>>> one = Round(0, 0, [], 0, TokenProb(1, "a", 1.0), "bonus", None, None, [1], 0.0, 0.0)
>>> round_in_one_line(Trace({}, "d", "t", "cpu", "float32", "", [], [one], [1], "a"), 0)
'<div class="sv-words">In words: nothing was drafted; the target\\'s pass gave <code class="sv-q-tok">“a”</code> on its own: <b>1 token for one target pass</b>.</div>'
"""

from __future__ import annotations

from html import escape

from specviz.record.trace import BONUS, REPLACEMENT, Trace
from specviz.view.token_text import quoted
from specviz.view.why_k import why_k

LISTED = 4  # accepted tokens the line quotes; past that it counts them, so that it stays one line


def round_in_one_line(trace: Trace, index: int) -> str:
    rnd = trace.rounds[index]
    n, last = rnd.tokens_this_pass, quoted(rnd.next_token.text)
    kept = [quoted(d.text) for d in rnd.accepted_drafts]
    agreed = ("nothing" if not kept else kept[0] if len(kept) == 1 else f"{', '.join(kept[:-1])} and {kept[-1]}"
              if len(kept) <= LISTED else f"the first {len(kept)}")
    if not rnd.k:
        said = f"nothing was drafted; the target's pass gave {last} on its own"
    elif rnd.next_kind == REPLACEMENT and trace.greedy:  # nothing is drawn at temperature 0: p is one-hot
        which = "none of the path's next nodes was its top token, so it rejected them" if rnd.tree else \
            "the next draft was not its top token and rejected it"
        said = f"the target kept {agreed}, found that {which}, then took its top token {last} in its place"
    elif rnd.next_kind == REPLACEMENT:
        where = "path" if rnd.tree else "draft"
        said = (f"the target kept {agreed}, found the next {where} less likely than the draft did and rejected it, "
                f"then drew {last} from the residual in its place")
    elif rnd.next_kind == BONUS:
        bonus = f"added the bonus {last} from p" if rnd.next_kept else f"dropped the bonus {last}: the text ended"
        listed = f" ({agreed})" if len(kept) <= LISTED else ""
        every = (f"the path {agreed} to a leaf" if rnd.tree else f"all {rnd.k} drafts{listed}" if rnd.k > 1
                 else agreed)
        said = f"the target kept {every} and {bonus}"
    else:
        said = f"the target kept {agreed} and gave {last}"
    # a round that drafted nothing says why on its card (stage.py); an adaptive one here, after what it did
    why = why_k(trace, index) if rnd.k else ""
    return (f'<div class="sv-words">In words: {said}: <b>{n} token{"s" * (n != 1)} for one target pass</b>.'
            f'{" " + escape(why) + "." if why else ""}</div>')

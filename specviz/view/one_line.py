"""A round in one plain sentence: the line the presenter view shows under the cards (assets/present.css), where the
page shows the full explanation (explanation.py) that no projector fits beside the cards.

Pure function of a Round (no gradio, no models); token text goes through token_text.quoted, so it is escaped.

>>> from specviz.record.trace import Round, TokenProb
>>> round_in_one_line(Round(0, 0, [], 0, TokenProb(1, "a", 1.0), "bonus", None, None, [1], 0.0, 0.0))
'<div class="sv-words">In words: nothing was drafted; the target\\'s pass gave <code class="sv-q-tok">“a”</code> on its own: <b>1 token for one target pass</b>.</div>'
"""

from __future__ import annotations

from specviz.record.trace import BONUS, REPLACEMENT, Round
from specviz.view.token_text import quoted

LISTED = 4  # accepted tokens the line quotes; past that it counts them, so that it stays one line


def round_in_one_line(rnd: Round) -> str:
    n, last = rnd.tokens_this_pass, quoted(rnd.next_token.text)
    kept = [quoted(d.text) for d in rnd.accepted_drafts]
    agreed = ("nothing" if not kept else kept[0] if len(kept) == 1 else f"{', '.join(kept[:-1])} and {kept[-1]}"
              if len(kept) <= LISTED else f"the first {len(kept)}")
    if not rnd.k:
        said = f"nothing was drafted; the target's pass gave {last} on its own"
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
    return (f'<div class="sv-words">In words: {said}: <b>{n} token{"s" * (n != 1)} for one target pass</b>.'
            f'</div>')

"""A round's KV caches as two rows of cells (draft, target): what each model's cache held, what the round wrote,
and what the rollback cropped. A pure function of the trace (no gradio, no models); text is escaped.

Both caches start a round holding every committed token but the last few (the target lacks exactly the last
one; the draft, after a clean sweep, two). Drafting writes the draft's cache, the verify pass the target's, and
the rollback crops both back to the committed sequence minus its last token, which the next round feeds first.
"""

from __future__ import annotations

from html import escape

from specviz.view.strip import committed_texts
from specviz.view.token_text import token_html
from specviz.record.trace import Round, Trace

EARLIER = 6  # cells shown from before the round; older ones are counted, not drawn
WRITTEN = 24  # cells shown of what one round wrote (the round that reads the prompt): the rest are counted


def cache_rows(trace: Trace, index: int) -> str:
    """The two rows and one sentence for round `index` (0-based); a trace without cache lengths says so."""
    rnd = trace.rounds[index]
    if rnd.cache is None:
        return ('<div class="sv-cache sv-muted">KV caches: not recorded in this trace (format version 1; record it '
                'again to see them).</div>')
    texts = _sequence(trace, index)
    rows = [_row("target", texts, rnd.cache.target, last=2)]
    if trace.drafter_spec.has_draft_cache:
        rows.insert(0, _row("draft", texts, rnd.cache.draft, last=1))
    return (f'<div class="sv-cache"><div class="sv-panel-title">KV caches this round</div>{"".join(rows)}'
            f'<div class="sv-cache-note">{cache_sentence(trace, index)}</div></div>')


def _sequence(trace: Trace, index: int) -> list[tuple[str | None, str]]:
    """(text, kind) of every position a cache may hold in this round: the prompt (no texts recorded), the
    tokens committed by earlier rounds, then this round's drafts with their fates."""
    rnd = trace.rounds[index]
    cells = [(None, "prompt")] * len(trace.prompt_token_ids)
    cells += [(text, "past") for r in trace.rounds[:index] for text in committed_texts(r)]
    return cells + [(d.text, d.fate) for d in rnd.drafts]


def _row(name: str, texts: list[tuple[str | None, str]], lengths: list[int], last: int) -> str:
    """One model's cells: kept from before, written this round (at moment `last`: 1 drafting, 2 the verify pass),
    struck out past the length after the rollback. Long stretches are counted, not drawn."""
    before, written, after = lengths[0], lengths[last], lengths[3]
    old = list(range(max(0, before - EARLIER), before))
    new = list(range(before, written))
    cells = [_more(before - len(old))] if before > len(old) else []
    cells += [_cell(texts[pos], new=False, cropped=pos >= after) for pos in old]
    if len(new) > WRITTEN:  # the prompt's round: its start, a count, then its end and the drafts
        cells += [_cell(texts[pos], True, pos >= after) for pos in new[:2]] + [_more(len(new) - WRITTEN)]
        new = new[len(new) - WRITTEN + 2:]
    cells += [_cell(texts[pos], new=True, cropped=pos >= after) for pos in new]
    return (f'<div class="sv-cache-row"><span class="sv-cache-name">{name}</span>{"".join(cells)}'
            f'<span class="sv-cache-len">{after} kept</span></div>')


def _more(n: int) -> str:
    return f'<span class="sv-cell sv-cell-more" title="{n} positions not drawn">+{n}</span>'


def _cell(cell: tuple[str | None, str], new: bool, cropped: bool) -> str:
    text, kind = cell
    classes = ["sv-cell", f"sv-cell-{kind}" if kind in ("prompt", "past") else f"sv-{kind}"]
    classes += ["sv-cell-new"] * new + ["sv-cell-cropped"] * cropped
    label = token_html(text) if text is not None else "·"
    title = ("cropped by the rollback" if cropped else "written this round" if new else "kept from before")
    return f'<span class="{" ".join(classes)}" title="{escape(title)}">{label}</span>'


def cache_sentence(trace: Trace, index: int) -> str:
    """How many positions each model wrote and how many the rollback dropped, and why the draft may be behind."""
    rnd = trace.rounds[index]
    d, t = rnd.cache.draft, rnd.cache.target
    parts = [f"The target's pass wrote {t[2] - t[0]} position{'s' * (t[2] - t[0] != 1)} ({_caught_up(t, rnd)} "
             f"+ {rnd.k} draft{'s' * (rnd.k != 1)}); the rollback cropped {t[2] - t[3]}, so its cache holds every "
             f"committed token but the round's last, which the next round feeds first."]
    spec = trace.drafter_spec
    if not spec.has_draft_cache:
        return parts[0] + f" {spec.label.capitalize()} has no draft model, so there is no draft cache."
    if not rnd.k:
        rest = "the rest of the prompt" if trace.opening else "the prompt"
        return parts[0] + (f" The draft did not run: round 1 is the target's own prefill, and the draft reads {rest} "
                           f"in round 2." if rnd.index == 0 and trace.format_version >= 3 else "")
    if d[0] == 0:  # the round that brings the draft in: round 2 since format version 3, round 1 before
        read = "the prompt and round 1's token" if rnd.index else "the prompt"
        parts.append(f"The draft's cache was empty, so its first step read {read} ({d[1] - d[0] - rnd.k + 1} "
                     f"positions).")
    elif trace.opening and d[0] == trace.opening and not any(r.k for r in trace.rounds[:index]):
        parts.append(f"The draft's cache held only the chat template's opening ({d[0]} positions, copied in when "
                     f"the run began), so its first step read the rest of the prompt and round 1's token "
                     f"({d[1] - d[0] - rnd.k + 1} positions).")
    parts.append(f"The draft wrote {d[1] - d[0]} and kept {d[3]}: it never ran on its own last draft"
                 + (", so after this bonus it is one behind: the next round feeds it two tokens, the last draft "
                    "and the bonus." if rnd.next_kind == "bonus" and rnd.next_kept else "."))
    return " ".join(parts)


def _caught_up(target: list[int], rnd: Round) -> str:
    """The tokens the target's cache lacked before the drafts: 1 usually, the whole prompt in round 1 (or all of it
    after the chat template's opening, which the cache held from the start)."""
    missing = target[2] - target[0] - rnd.k
    if rnd.index == 0:
        if target[0]:
            return f"the prompt's {missing} tokens after the template's {target[0]}-token opening, held from the start,"
        return f"the {missing}-token prompt"
    return f"{missing} committed token{'s' * (missing != 1)} it lacked"

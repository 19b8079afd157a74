"""Prompt lookup: a drafter with no second model.

It proposes the tokens that followed the most recent earlier occurrence of the text's last n-gram
(n = 3, then 2, then 1), copied from the prompt and the output so far. Its q is a point mass on each proposed
token, so verification accepts token x with probability p(x): still exact, just a different draft.
"""

from __future__ import annotations

from specviz.drafters.base import EARLIER_TEXT, Drafter, plural


def prompt_lookup(ids: list[int], k: int, max_ngram: int = 3) -> list[int]:
    """Up to k tokens that followed the latest earlier match of the last n-gram of ids.

    >>> prompt_lookup([5, 6, 7, 8, 9, 5, 6, 7], 3)
    [8, 9, 5]
    >>> prompt_lookup([1, 2, 3], 2)
    []
    """
    for n in range(min(max_ngram, len(ids) - 1), 0, -1):
        tail = ids[-n:]
        for start in range(len(ids) - n - 1, -1, -1):  # latest match first, never the tail itself
            if ids[start:start + n] == tail:
                return ids[start + n:start + n + k]
    return []


def _proposed(k: int, drafted: str, draft_name: str) -> str:
    return (f"Prompt lookup copied {plural(k, 'token')} from earlier text (what followed the latest earlier "
            f"occurrence of the last few tokens): {drafted}. Its q is a point mass, q = 1 on each copied token, so "
            f"min(1, p/q) = p: a copied token is kept with the target's own probability.")


DRAFTER = Drafter(key="lookup", label="prompt lookup", source=EARLIER_TEXT, proposed=_proposed,
                  propose=prompt_lookup,
                  nothing_found="Prompt lookup found no earlier occurrence of the text's last tokens to copy from",
                  chart_symbol="square", chart_dash="dash")

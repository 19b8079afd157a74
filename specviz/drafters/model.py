"""The draft model: the pair's smaller model proposes K tokens, one step each, sampled from its own warped q."""

from specviz.drafters.base import DRAFT_MODEL, Drafter, plural


def _proposed(k: int, drafted: str, draft_name: str) -> str:
    return f"The draft model proposed {plural(k, 'token')}, one at a time: {drafted}."


DRAFTER = Drafter(key="model", label="draft model", source=DRAFT_MODEL, proposed=_proposed)

"""The drafter registry: every way a round gets its drafts (the draft model, prompt lookup, self-speculation, a draft
tree), each declared once in its own module as a `Drafter` (base.py): its key, label, where its drafts come from,
its parameters and the sentences the round view says about it. The page, the CLI, the API, the bench and the Lab
read `REGISTRY`; the engine reads a drafter's `source` and `tree` to run it. Adding a drafter is one module here
(and its tests) when its drafts come from a source the engine already runs.

Imports settings only (no torch), so the record, the view and the page may read it.
"""

from specviz.drafters import layers, lookup, model, tree
from specviz.settings.bounds import short_repr
from specviz.drafters.base import DRAFT_MODEL, EARLIER_TEXT, TARGET_LAYERS, Drafter, Param  # noqa: F401

MODEL, LOOKUP, LAYERS, TREE = model.DRAFTER, lookup.DRAFTER, layers.DRAFTER, tree.DRAFTER
REGISTRY: dict[str, Drafter] = {d.key: d for d in (MODEL, LOOKUP, LAYERS, TREE)}  # in the order the page offers them
DEFAULT = MODEL  # what a run drafts with when nothing is chosen
CHAINS = {key: d for key, d in REGISTRY.items() if d.chain}  # what the Lab's comparison runs side by side


def drafter(key) -> Drafter:
    """The drafter named `key`, or ValueError listing the keys there are."""
    if isinstance(key, str) and key in REGISTRY:
        return REGISTRY[key]
    raise ValueError(f"drafter must be one of {', '.join(REGISTRY)}, got {short_repr(key)}")

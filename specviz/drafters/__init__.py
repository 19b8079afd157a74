"""The drafter registry: every way a round gets its drafts (the draft model, prompt lookup, self-speculation, a draft
tree, a tree with distinct siblings, a tree shaped per round, Medusa heads and an EAGLE-style layer, each as a chain,
a tree and a shaped tree), each
declared once in its own module as a `Drafter` (base.py): its key, label, where its drafts come from,
its parameters and the sentences the round view says about it. The page, the CLI, the API, the bench and the Lab
read `REGISTRY`; the engine reads a drafter's `source` and `tree` to run it. Adding a drafter is one module here
(and its tests) when its drafts come from a source the engine already runs.

- base.py: Drafter and Param: a drafter's key, label, source of drafts, parameters and sentences
- model.py: the draft model's chain (the default)
- lookup.py: prompt lookup: drafts copied from earlier text by an n-gram search
- layers.py: self-speculation: the target's first N layers draft
- tree.py: a draft tree from the draft model, its children per node set per depth (e.g. 2-2-1-1)
- distinct_tree.py: a draft tree whose siblings are distinct tokens (recursive rejection)
- shaped_tree.py: a draft tree shaped per round where the draft's path probability is highest (EAGLE-2)
- trained.py: what every trained drafter shares: the kinds of weights, the training command, the depth bound
- medusa.py: the Medusa heads' three drafters: a chain, a tree and a shaped tree
- eagle.py: the EAGLE-style layer's three drafters: a chain, a tree and a shaped tree

Imports settings only (no torch), so the record, the view and the page may read it.
"""

from specviz.drafters import distinct_tree, eagle, layers, lookup, medusa, model, shaped_tree, tree
from specviz.settings.bounds import short_repr
from specviz.drafters.base import DRAFT_MODEL, EARLIER_TEXT, TARGET_LAYERS, TARGET_STATE, Drafter, Param

MODEL, LOOKUP, LAYERS, TREE, DISTINCT = model.DRAFTER, lookup.DRAFTER, layers.DRAFTER, tree.DRAFTER, distinct_tree.DRAFTER
SHAPED = shaped_tree.DRAFTER
HEADS, HEADS_TREE, HEADS_SHAPED = medusa.DRAFTER, medusa.TREE, medusa.SHAPED
EAGLE, EAGLE_TREE, EAGLE_SHAPED = eagle.DRAFTER, eagle.TREE, eagle.SHAPED
# in the order the page offers them
REGISTRY: dict[str, Drafter] = {d.key: d for d in (MODEL, LOOKUP, LAYERS, TREE, DISTINCT, SHAPED, HEADS, HEADS_TREE,
                                                   HEADS_SHAPED, EAGLE, EAGLE_TREE, EAGLE_SHAPED)}
__all__ = ["REGISTRY", "CHAINS", "SHAPED_TREES", "DEFAULT", "MODEL", "LOOKUP", "LAYERS", "TREE", "DISTINCT", "SHAPED",
           "HEADS", "HEADS_TREE", "HEADS_SHAPED", "EAGLE", "EAGLE_TREE", "EAGLE_SHAPED", "drafter", "Drafter", "Param",
           "DRAFT_MODEL", "TARGET_LAYERS", "EARLIER_TEXT", "TARGET_STATE", "recorded"]
DEFAULT = MODEL  # what a run drafts with when nothing is chosen
CHAINS = {key: d for key, d in REGISTRY.items() if d.chain}  # what the Lab's comparison runs side by side
SHAPED_TREES = {key: d for key, d in REGISTRY.items() if d.shaped}  # trees grown per round (drafters/shaped_tree.py)


def drafter(key) -> Drafter:
    """The drafter named `key`, or ValueError listing the keys there are."""
    if isinstance(key, str) and key in REGISTRY:
        return REGISTRY[key]
    raise ValueError(f"drafter must be one of {', '.join(REGISTRY)}, got {short_repr(key)}")


def recorded(settings: dict) -> Drafter:
    """The drafter a trace's settings name; the draft model for a trace that names none (format versions 1-3 drafted
    only with it). A trace naming an unknown drafter is refused when it is loaded (record/load.py)."""
    return REGISTRY.get(settings.get("drafter"), DEFAULT)

"""The names every trained drafter shares (Medusa heads, drafters/medusa.py; the EAGLE-style layer, drafters/eagle.py):
the kinds of trained weights, how each kind is named in a sentence, the command that trains them and the sentence a
run gets before they are trained, and the default shape of a tree drafted from the target's own state.

Their weights are trained on this machine for one target (specviz/train/, `python -m specviz train-drafters`) and kept
beside the model cache (engine/trained.py)."""

from specviz.settings.bounds import widths_text

MEDUSA, EAGLE = "medusa", "eagle"  # the kinds of trained weights a drafter reads (Drafter.trained; engine/trained.py
#                                   saves them by kind; `train-drafters --kind` names them)
KINDS = (MEDUSA, EAGLE)
TRAIN_COMMAND = "python -m specviz train-drafters"  # how heads get trained: every "none trained yet" sentence names it
TRAIN_MINUTES = 15  # the most its defaults take on this project's 2-core CPU (specviz/train/)


KIND_NAMES = {MEDUSA: "Medusa heads", EAGLE: "EAGLE-style layer"}  # each kind as a sentence names it
_ARE = {MEDUSA: "are", EAGLE: "is"}
DEPTH_SAID = {MEDUSA: "one depth per head", EAGLE: "one depth per step it was trained for"}  # a tree's depth bound


def how_to_train(kind: str, target_name: str) -> str:
    """The sentence a run gets when no heads of `kind` are trained for the target yet: what to run, and how long."""
    flag = "" if kind == MEDUSA else f" --kind {kind}"
    return (f"No {KIND_NAMES[kind]} {_ARE[kind]} trained for {target_name} on this machine yet: train "
            f"{'them' if kind == MEDUSA else 'it'} once with `{TRAIN_COMMAND}{flag}` (at most {TRAIN_MINUTES} minutes "
            f"on 2 CPU cores, saved beside the model cache), then choose this drafter again.")



def check_depth(kind: str, n: int, widths=(), depth: int = 0) -> None:
    """ValueError where a tree drafted by trained weights of `kind` (n heads, or n steps trained for) would be deeper
    than they reach: a tree of these `widths`, or a shaped tree of this most `depth`. The one statement of that bound,
    asked before any pass (engine.Engine.check_drafter)."""
    if len(widths) > n:
        raise ValueError(f"a tree of {KIND_NAMES[kind]} is at most {n} deep ({DEPTH_SAID[kind]}), got widths "
                         f"{widths_text(widths)}")
    if depth > n:
        raise ValueError(f"a tree of {KIND_NAMES[kind]} is at most {n} deep ({DEPTH_SAID[kind]}), got a shaped tree's "
                         f"most depth of {depth}")


DEFAULT_HEAD_WIDTHS = (3, 2, 1)  # a trained drafter's tree shape when none is set: one depth per head (Medusa's default
#                                   choices start "top-1, then top-7, top-6"; this is that idea at 3 heads, 15 nodes)

"""An EAGLE-style drafter (Li et al. 2024): one small decoder layer on the target's own features, trained on this
machine (`python -m specviz train-drafters --kind eagle`). Each step takes the target's feature at a position and the
embedding of the token after it, guesses the feature at the next position, and reads a draft off the target's frozen
LM head; later steps run on the layer's own guesses. The features are those the last verify pass already computed,
so no target pass drafts: a draft costs one step of the small layer and the shared output layer (engine/eagle.py).
A chain drafts one step a token (at most the steps it was trained for); a tree runs one step a depth, every node on
its own path, and the existing tree pass verifies them; a shaped tree runs one step a depth too, growing where the
layer's path probabilities are highest, within a node budget (drafters/shaped_tree.py)."""

from specviz.drafters.base import TARGET_STATE, Drafter, plural
from specviz.drafters.shaped_tree import SHAPED_PARAMS
from specviz.drafters.trained import DEFAULT_HEAD_WIDTHS, EAGLE
from specviz.drafters.tree import TREE_WIDTHS

DEFAULT_EAGLE_WIDTHS = DEFAULT_HEAD_WIDTHS  # an EAGLE tree's shape when none is set: the heads' tree's, 15 nodes


def _proposed(k: int, drafted: str, draft_name: str) -> str:
    steps = "step 1" if k == 1 else f"steps 1 to {k}"
    return (f"The EAGLE layer proposed {plural(k, 'token')}, one a step ({steps}), each step guessing the target's "
            f"next feature from its last one and the token just drafted: {drafted}. It started from the target's own "
            f"features, which its verify pass had already computed: no draft model ran ({draft_name}).")


def _card_said(i: int) -> str:
    guesses = ("" if i == 0 else " and the layer's guess after them" if i == 1 else
               f" and the layer's {i} guesses after them")
    return f"Proposed by EAGLE step {i + 1}, from the target's own features{guesses} (no draft model)"


DRAFTER = Drafter(key="eagle", card_said=_card_said, label="EAGLE-style layer", source=TARGET_STATE,
                  proposed=_proposed, trained=EAGLE, chart_symbol="star", chart_dash="dashdot")
# A tree's node at depth d + 1 came from step d + 1 on its own path, as the chain's position d + 1: the same line
TREE = Drafter(key="eagle-tree", card_said=_card_said, label="EAGLE-style layer, tree", source=TARGET_STATE, tree=True,
               params=(TREE_WIDTHS,),
               tree_said=("The EAGLE layer proposed a tree from the target's own features, with no draft model: one "
                          "step a depth, each node's children guessed on its own path"),
               trained=EAGLE, default_widths=DEFAULT_EAGLE_WIDTHS, chart_symbol="star-triangle-down",
               chart_dash="dot")
# A shaped tree (drafters/shaped_tree.py): one step a depth, every node on its own path, as the fixed tree
SHAPED = Drafter(key="eagle-shaped", card_said=_card_said, label="EAGLE-style layer, shaped tree", source=TARGET_STATE,
                 tree=True, distinct=True, shaped=True, params=SHAPED_PARAMS,
                 default_depth=len(DEFAULT_EAGLE_WIDTHS),
                 tree_said=("The EAGLE layer grew a tree shaped this round from the target's own features, with no "
                            "draft model: one step a depth, each node's children guessed on its own path"),
                 trained=EAGLE, chart_symbol="star-square", chart_dash="dot")

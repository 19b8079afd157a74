"""Medusa heads: small blocks on the target's own last hidden state guess the next tokens, head i the token i + 1
places past the next one (Cai et al. 2024). The hidden state is the one the last verify pass already computed, so
drafting runs no model pass: each head is one block and the target's shared output layer (engine/medusa.py).
A chain takes each head's top choice (sampled: a draw from each head's q), so K is at most the number of heads; a
tree takes each head's top candidates at its depth and the existing tree pass verifies them; a shaped tree grows
where the heads' path probabilities are highest, within a node budget (drafters/shaped_tree.py).

Heads are trained on this machine for one target (`python -m specviz train-drafters`); until they are, choosing this
drafter says how to train them."""

from specviz.drafters.base import TARGET_STATE, Drafter, plural
from specviz.drafters.shaped_tree import SHAPED_PARAMS
from specviz.drafters.trained import DEFAULT_HEAD_WIDTHS, MEDUSA
from specviz.drafters.tree import TREE_WIDTHS


def _proposed(k: int, drafted: str, draft_name: str) -> str:
    heads = "head 1" if k == 1 else f"heads 1 to {k}"
    return (f"The Medusa {heads} proposed {plural(k, 'token')} at once, head i the token i places past the one "
            f"the target just chose: {drafted}. They read the target's own last hidden state, which its verify pass "
            f"had already computed: no draft model ran ({draft_name}).")


def _card_said(i: int) -> str:
    return f"Proposed by head {i + 1}, from the target's own last hidden state (no draft model)"


DRAFTER = Drafter(key="heads", card_said=_card_said, label="Medusa heads", source=TARGET_STATE, proposed=_proposed,
                  trained=MEDUSA, chart_symbol="triangle-up", chart_dash="longdash")
# A tree's node at depth d + 1 was proposed by head d + 1, as the chain's position d + 1: the same line on its node
TREE = Drafter(key="heads-tree", card_said=_card_said, label="Medusa heads, tree", source=TARGET_STATE, tree=True,
               params=(TREE_WIDTHS,),
               tree_said=("The Medusa heads proposed a tree from the target's own last hidden state, with no draft "
                          "pass (head d gave the candidates at depth d, the same under every node of that depth)"),
               trained=MEDUSA, default_widths=DEFAULT_HEAD_WIDTHS, chart_symbol="triangle-down", chart_dash="longdashdot")
# A shaped tree (drafters/shaped_tree.py): head d's q at every node of depth d, each node's children drawn from it
SHAPED = Drafter(key="heads-shaped", card_said=_card_said, label="Medusa heads, shaped tree", source=TARGET_STATE,
                 tree=True, distinct=True, shaped=True, params=SHAPED_PARAMS, default_depth=len(DEFAULT_HEAD_WIDTHS),
                 tree_said=("The Medusa heads grew a tree shaped this round from the target's own last hidden state, "
                            "with no draft pass (head d's q at every node of depth d)"),
                 trained=MEDUSA, chart_symbol="triangle-left", chart_dash="longdashdot")

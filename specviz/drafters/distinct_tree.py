"""A draft tree whose siblings are distinct: each node's children are drawn from q WITHOUT replacement, so a peaked q
no longer spends two nodes on one token. Verified exactly by recursive rejection sampling (algorithm/tree.py; Jeon
et al. 2024, arXiv 2402.14160): each child is tested against q without its earlier siblings."""

from specviz.drafters.base import DRAFT_MODEL, Drafter
from specviz.drafters.tree import TREE_WIDTHS

DRAFTER = Drafter(key="distinct", label="draft tree, distinct children", source=DRAFT_MODEL, tree=True,
                  distinct=True, params=(TREE_WIDTHS,))

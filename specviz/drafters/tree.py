"""A draft tree: the draft model proposes several continuations at once (children per node at each depth, e.g.
2-2-1-1), and the target scores every node in one pass (engine/tree_run.py; the rule is algorithm/tree.py's)."""

from specviz.drafters.base import DRAFT_MODEL, Drafter, Param

DEFAULT_WIDTHS = (2, 2, 1, 1)  # 14 nodes (2 + 4 + 4 + 4), 4 deep: the tree's shape when none is set
TREE_WIDTHS = Param("tree_widths", "tree widths", "--tree",
                    "children per node at each depth, e.g. 2-2-1-1 (1-4 wide, 1-6 deep, at most 32 nodes)")


DRAFTER = Drafter(key="tree", label="draft tree", source=DRAFT_MODEL, tree=True,
                  params=(TREE_WIDTHS,), chart_symbol="star", chart_dash="dashdot")

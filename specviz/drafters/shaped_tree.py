"""A draft tree shaped per round (EAGLE-2's idea, Li et al. 2024, arXiv 2406.16858): instead of fixed widths per depth,
each round grows the tree where the draft's own path probabilities (the product of its q along a node's path) are
highest, within a node budget and a most depth (algorithm/shaped.py says how, and why it stays exact). Children are
drawn without replacement and verified by recursive rejection sampling (algorithm/tree.py), or at temperature 0 are
the draft's top tokens.

Declared here: the draft model's shaped tree, and the two settings every shaped tree reads (the Medusa heads' and
the EAGLE layer's shaped trees: drafters/medusa.py, drafters/eagle.py)."""

from specviz.drafters.base import DRAFT_MODEL, Drafter, Param
from specviz.settings.bounds import DEPTH_BOUND, MAX_TREE_NODES
from specviz.settings.defaults import TREE_BUDGET

TREE_BUDGET_PARAM = Param("tree_budget", "node budget", "--tree-budget",
                          f"the most nodes a shaped tree drafts, 1-{MAX_TREE_NODES} (default {TREE_BUDGET})")
TREE_DEPTH_PARAM = Param("tree_depth", "most depth", "--tree-depth",
                         f"the deepest a shaped tree grows, 1-{DEPTH_BOUND.high} (0 = its drafter's default: 4 for the "
                         f"draft model, 3 for Medusa heads and the EAGLE layer, which reach at most their heads or "
                         f"steps)")
SHAPED_PARAMS = (TREE_BUDGET_PARAM, TREE_DEPTH_PARAM)
MODEL_DEPTH = 4  # the draft model's shaped tree: as deep as the fixed tree 2-2-1-1, the same four draft passes

DRAFTER = Drafter(key="shaped", label="draft tree, shaped per round", source=DRAFT_MODEL, tree=True, distinct=True,
                  shaped=True, params=SHAPED_PARAMS, default_depth=MODEL_DEPTH,
                  tree_said="The draft model grew a tree shaped this round, one draft pass per depth",
                  chart_symbol="hexagram", chart_dash="dashdot")

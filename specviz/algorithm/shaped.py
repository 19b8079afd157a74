"""A draft tree shaped per round (EAGLE-2's idea: Li et al. 2024, arXiv 2406.16858): grown where the draft's own path
probabilities are highest, within a node budget and a most depth, instead of fixed widths per depth. Pure: the engine
hands `grow_tree` a `step` that runs one draft pass (engine/tree_pass.py, heads_draft.py, eagle_draft.py), and this
module decides which children to draw.

A node's path score is the product of the draft's q along its path (the root's is 1): q(x) at each node's parent,
known the moment the node is drawn. At temperature 0 q is one-hot, so the scores read the draft's own probabilities
at temperature 1 instead (as adaptive K's confidence does, engine/chain.py). Growth, depth by depth:

1. one draft pass gives q at every node of the deepest depth so far (the frontier);
2. each frontier node u offers one candidate, its next child, valued score(u) × the largest q left at u (q without
   u's children so far): at temperature 0 exactly the path score of u's next top token, else the most its next draw
   can score;
3. take the best candidate, draw it (greedy: u's next top token; sampled: a draw from q without u's earlier
   children, renormalised, which is what recursive rejection sampling tests it against), and repeat, until this
   depth has its share of the budget, ⌈nodes left ÷ depths left⌉ (so a depth of sure tokens cannot spend the budget
   before the depths under it exist; a share a depth leaves unused goes to the deeper ones), or the best value falls
   below FLOOR × the root's score (the root's first child is drawn whatever its value: a round drafts at least one);
4. the children drawn become the next frontier; stop at the most depth, with the budget spent, or when a depth drew
   nothing.

Why it stays exact (algorithm/tree.py's docstring has the induction): every decision to give a node one more child
is taken BEFORE that child is drawn, from draft-side numbers only (the path scores and the q left at each node, which
depend on the children drawn so far and never on p or on a verification draw), and every child drawn is kept. Drawing
several children and then keeping the best-scoring ones would not be: the kept child would no longer be a draw from
q without its earlier siblings, which is what its test assumes (tests/engine/test_shaped_run.py plants that bias as a
negative control).

    >>> g = Growth(budget=3, max_depth=2, greedy=True, root=7)
    >>> g.grow(torch.tensor([[0.6, 0.3, 0.1]]))  # the root's q: shares of ⌈3 ÷ 2⌉ = 2 at depth 1
    [1, 2]
    >>> g.tokens, [round(s, 2) for s in g.scores]
    ([7, 0, 1], [1.0, 0.6, 0.3])
    >>> g.grow(torch.tensor([[0.9, 0.05, 0.05], [0.5, 0.5, 0.0]]))  # the 1 node left: under the 0.6 path
    [3]
    >>> g.parents, g.wants_more()  # the budget is spent
    ([-1, 0, 0, 1], False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from specviz.algorithm.sampling import SamplingSettings, sample, warp
from specviz.algorithm.tree import TreeShape
from specviz.settings.bounds import SHAPED_FLOOR

FLOOR = SHAPED_FLOOR  # 1 % of the root's path probability: below it no node is grown (settings/bounds.py says why)


def draw_child(left: torch.Tensor, greedy: bool, generator: torch.Generator | None) -> int:
    """A node's next child from `left` (V,), its q with its earlier children's tokens removed: the top token (greedy),
    else one draw from it renormalised, i.e. from q without the earlier siblings (sampling.sample normalises)."""
    if greedy:
        return int(left.argmax())
    return int(sample(left[None], generator)[0])


@dataclass
class Growth:
    """A shaped tree as it grows: its nodes (node 0 the root, the last committed token; breadth-first, each node's
    children in the order drawn), each node's token, the factor it adds to its path's score (the draft's
    probability of its token at its parent) and its path score."""

    budget: int  # the most drafted nodes
    max_depth: int  # the deepest it may grow
    greedy: bool
    root: int  # the root's token
    parents: list[int] = field(default_factory=lambda: [-1])
    depth: list[int] = field(default_factory=lambda: [0])
    tokens: list[int] = field(default_factory=list)
    factors: list[float] = field(default_factory=lambda: [1.0])
    scores: list[float] = field(default_factory=lambda: [1.0])
    open: bool = True  # whether the next depth may grow (False once one drew nothing)

    def __post_init__(self):
        self.tokens = self.tokens or [int(self.root)]

    @property
    def drafted(self) -> int:
        """Nodes drawn so far (the root not counted)."""
        return len(self.parents) - 1

    def frontier(self) -> list[int]:
        """The nodes of the deepest depth grown so far: whose children the next depth draws."""
        deepest = self.depth[-1]
        return [i for i, d in enumerate(self.depth) if d == deepest]

    def wants_more(self) -> bool:
        """Whether another depth may grow: nodes left in the budget, depths left, and the last depth drew some."""
        return self.open and self.drafted < self.budget and self.depth[-1] < self.max_depth

    def shape(self) -> TreeShape:
        return TreeShape(parents=tuple(self.parents))

    def grow(self, rows: torch.Tensor, generator: torch.Generator | None = None) -> list[int]:
        """One depth: `rows` (frontier, V) the distribution each frontier node's children come from (sampled: its q;
        greedy: the draft's probabilities at temperature 1); the nodes drawn, in order (module docstring, step 3)."""
        frontier = self.frontier()
        left = rows.float().clone()  # what each frontier node has not drawn yet
        score = torch.tensor([self.scores[u] for u in frontier], dtype=torch.float64)
        share = math.ceil((self.budget - self.drafted) / (self.max_depth - self.depth[-1]))
        new: list[int] = []
        while len(new) < share:
            values = score * left.max(-1).values.double()  # each node's next child, valued before it is drawn
            best = int(values.argmax())
            if values[best] <= 0 or (self.drafted and values[best] < FLOOR * self.scores[0]):
                break
            x = draw_child(left[best], self.greedy, generator)
            new.append(self._add(frontier[best], x, float(rows[best, x])))
            left[best, x] = 0
        self.open = bool(new)
        return new

    def _add(self, parent: int, token: int, factor: float) -> int:
        self.parents.append(parent)
        self.depth.append(self.depth[parent] + 1)
        self.tokens.append(token)
        self.factors.append(factor)
        self.scores.append(self.scores[parent] * factor)
        return len(self.parents) - 1


Step = Callable[[Growth], torch.Tensor]  # one draft pass: the growth -> logits (frontier, vocab) at its frontier


def grow_tree(growth: Growth, step: Step, sampling: SamplingSettings,
              generator: torch.Generator | None = None) -> tuple[list[int], torch.Tensor, TreeShape]:
    """Grow `growth` depth by depth, one `step` (draft pass) a depth: (tokens (n,) with tokens[0] the root, q (n, V)
    the warped draft distribution each node's children came from, as verify_tree reads it (a row of zeros where no
    pass ran: the deepest nodes), the tree's shape)."""
    qs = []
    while growth.wants_more():
        logits = step(growth).float()  # (frontier, V)
        q = warp(logits, sampling)
        qs.append(q)
        growth.grow(torch.softmax(logits, -1) if sampling.greedy else q, generator)
    n, vocab = len(growth.parents), qs[0].shape[-1]
    q = torch.cat(qs + [torch.zeros(n - sum(len(r) for r in qs), vocab)])
    return list(growth.tokens), q, growth.shape()

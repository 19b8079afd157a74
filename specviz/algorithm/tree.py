"""A draft tree's shape and the rule that verifies it, as pure functions (no models).

A tree drafts several continuations at once: the root is the last committed token, and each node's children are
candidates for the next token after the path to it. The target scores every node in one pass (tree_pass.py); this
module decides which path survives, exactly:

- temperature > 0, SpecInfer's multi-candidate rule (Miao et al. 2024): the children of a node are i.i.d. samples
  from q (the draft's warped distribution at that node). Test them one after another, child i accepted with
  min(1, p(x)/q(x)) against a fresh uniform; after a rejection p becomes norm(max(0, p - q)) for the next child.
  The first accepted child becomes the node whose children are tested next; if every child is rejected, the next
  token is sampled from the last residual. By induction on the number of children the token leaving a node is
  distributed as p (accepted mass min(p, q) plus (1 - accepted) times the residual of the rest), so the
  committed tokens follow the target alone, as the chain's `sampling.verify` does for one child per node.
- temperature 0: the children are the draft's top-w distinct tokens; a child survives iff it is the target's
  argmax, else the next token is the argmax. The output is the target's greedy path.
At a leaf the walk ends with a bonus token sampled from p there.

Nodes are numbered breadth-first with the root as node 0: widths (2, 1) give nodes 0 (root), 1 and 2 (depth 1),
3 (child of 1) and 4 (child of 2). Notation as in sampling.py: p = target, q = draft.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch

from specviz.settings.bounds import DEPTH_BOUND, MAX_TREE_NODES, WIDTH_BOUND, widths_text  # the bounds, and why
from specviz.algorithm.sampling import accept_probability, residual_distribution, sample
from specviz.record.trace import ACCEPTED, BONUS, DISCARDED, REJECTED, REPLACEMENT


def parse_widths(text: str) -> tuple[int, ...]:
    """'2-2-1-1' (or '2,2,1,1', '2 2 1 1') -> (2, 2, 1, 1); ValueError for anything else.

    >>> parse_widths("2-2-1")
    (2, 2, 1)
    """
    parts = str(text).replace(",", " ").replace("-", " ").split()
    if not parts or not all(p.isdigit() for p in parts):
        raise ValueError(f"tree widths must be whole numbers separated by '-', like 2-2-1-1; got {text!r}")
    return tuple(int(p) for p in parts)


@dataclass(frozen=True)
class TreeShape:
    """A tree from its widths per depth: widths[d] children for every node at depth d (the root is depth 0).

    >>> t = TreeShape((2, 1))
    >>> t.parents, t.depth
    ((-1, 0, 0, 1, 2), (0, 1, 1, 2, 2))
    """

    widths: tuple[int, ...]
    parents: tuple[int, ...] = field(init=False)  # parents[i] < i; -1 for the root
    depth: tuple[int, ...] = field(init=False)  # 0 for the root
    kids: tuple[tuple[int, ...], ...] = field(init=False, repr=False)  # kids[i]: node i's children, in order
    _ancestry: torch.Tensor = field(init=False, repr=False, compare=False)  # built once: every pass needs it

    def __post_init__(self):
        widths = check_widths(self.widths)
        parents, depth, level = [-1], [0], [0]
        for d, w in enumerate(widths, start=1):
            level = [_add(parents, depth, u, d) for u in level for _ in range(w)]  # breadth-first
        object.__setattr__(self, "widths", widths)
        object.__setattr__(self, "parents", tuple(parents))
        object.__setattr__(self, "depth", tuple(depth))
        object.__setattr__(self, "kids", tuple(tuple(i for i, u in enumerate(parents) if u == v)
                                               for v in range(len(parents))))
        seen = torch.zeros(len(parents), len(parents), dtype=torch.bool)
        for i in range(len(parents)):
            seen[i, self.path_to(i)] = True
        object.__setattr__(self, "_ancestry", seen)

    @property
    def n_nodes(self) -> int:
        """Nodes including the root."""
        return len(self.parents)

    @property
    def max_depth(self) -> int:
        return len(self.widths)

    def children(self, node: int) -> list[int]:
        return list(self.kids[node])

    def level(self, d: int) -> range:
        """The nodes at depth d: consecutive, since nodes are numbered breadth-first."""
        first = self.depth.index(d)
        return range(first, first + self.depth.count(d))

    def path_to(self, node: int) -> list[int]:
        """Root-first path to node, the root included: path_to(3) == [0, 1, 3] for widths (2, 1)."""
        path = [node]
        while self.parents[path[-1]] >= 0:
            path.append(self.parents[path[-1]])
        return path[::-1]

    def ancestry(self) -> torch.Tensor:
        """(n, n) bool: [i, j] is True iff j is i or one of i's ancestors, i.e. what node i may attend to."""
        return self._ancestry.clone()


def _add(parents: list[int], depth: list[int], parent: int, d: int) -> int:
    parents.append(parent)
    depth.append(d)
    return len(parents) - 1


def check_widths(widths: Sequence[int]) -> tuple[int, ...]:
    """The widths as a tuple of ints, or ValueError saying which bound they break."""
    if isinstance(widths, (str, bytes)) or not isinstance(widths, Sequence):
        raise ValueError(f"tree widths must be a sequence of whole numbers, like (2, 2, 1, 1); got {widths!r}")
    DEPTH_BOUND.check(len(widths), "the tree's depth (number of widths)")
    out = tuple(WIDTH_BOUND.check(w, f"the tree's width at depth {d}") for d, w in enumerate(widths, start=1))
    n, level = 0, 1
    for w in out:
        level *= w
        n += level
    if n > MAX_TREE_NODES:
        raise ValueError(f"a tree of widths {widths_text(out)} drafts {n} nodes; at most "
                         f"{MAX_TREE_NODES} are allowed (narrow a depth or drop one)")
    return out


@dataclass
class TreeVerdict:
    """The outcome of verifying one drafted tree. Lists indexed by node; the root's entries are None."""

    path: list[int]  # accepted nodes, root's child first (root excluded): the tokens committed before next_token
    next_token: int
    next_kind: str  # REPLACEMENT (every child of the last path node rejected) or BONUS (the path reached a leaf)
    fates: list[str | None]  # ACCEPTED, REJECTED, or DISCARDED (never examined)
    accept_probs: list[float | None]  # min(1, p'(x)/q(x)) with p' the node's p or residual when it was tested
    test_p: list[float | None]  # p'(x): the (residual) target probability the child was tested against
    uniforms: list[float | None]  # the draw r (accepted iff r < accept prob); None untested or at temperature 0
    residual: torch.Tensor | None  # (V,) the last residual, sampled from after all children were rejected

    @property
    def n_accepted(self) -> int:
        return len(self.path)


def verify_tree(
    tree: TreeShape,
    tokens: Sequence[int] | torch.Tensor,
    p: torch.Tensor,
    q: torch.Tensor | None,
    generator: torch.Generator | None = None,
    greedy: bool = False,
) -> TreeVerdict:
    """Walk the tree from the root, accepting at most one child per node (see the module docstring).

    tokens: (n,) node tokens (tokens[0], the root, is not tested). p: (n, V) the target's warped distribution
    after each node's path. q: (n, V) the draft distribution each node's children were sampled from (leaf rows
    unused); ignored when greedy, where the children are the draft's top tokens and p is the target's one-hot.
    """
    n = tree.n_nodes
    tokens = [int(t) for t in (tokens.tolist() if isinstance(tokens, torch.Tensor) else tokens)]
    if len(tokens) != n or p.ndim != 2 or p.shape[0] != n or (not greedy and (q is None or q.shape != p.shape)):
        raise ValueError(f"verify_tree wants tokens ({n},), p ({n}, V) and q ({n}, V) for a tree of {n} nodes; got "
                         f"{len(tokens)}, {tuple(p.shape)}, {None if q is None else tuple(q.shape)}")
    v = TreeVerdict([], -1, BONUS, [None] + [DISCARDED] * (n - 1), [None] * n, [None] * n, [None] * n, None)
    p = p.float()
    node = 0
    while True:
        kids = tree.children(node)
        if not kids:  # a leaf: the bonus comes from the target's distribution after the whole path
            v.next_token = int(p[node].argmax()) if greedy else int(sample(p[node][None], generator)[0])
            return v
        child = _test_children(v, kids, tokens, p[node], None if greedy else q[node].float(), generator)
        if child is None:
            v.next_kind = REPLACEMENT
            v.next_token = int(p[node].argmax()) if greedy else int(sample(v.residual[None], generator)[0])
            return v
        v.path.append(child)
        node = child


def _test_children(v: TreeVerdict, kids: list[int], tokens: list[int], p_u: torch.Tensor, q_u: torch.Tensor | None,
                   generator: torch.Generator | None) -> int | None:
    """Test a node's children in order; record each test in v; the accepted child, or None (then v.residual is
    the distribution to sample the replacement from). q_u None means greedy."""
    target = p_u
    for c in kids:
        x = tokens[c]
        if q_u is None:  # greedy: survive iff the target's top token (p_u is one-hot there)
            a, r = (1.0 if x == int(p_u.argmax()) else 0.0), None
            accepted = a == 1.0
        else:
            a = accept_probability(target[x].item(), q_u[x].item())
            r = float(torch.rand(1, generator=generator, dtype=torch.float64))  # a fresh draw per child
            accepted = r < a
        v.accept_probs[c], v.uniforms[c], v.test_p[c] = a, r, float(target[x])
        v.fates[c] = ACCEPTED if accepted else REJECTED
        if accepted:
            return c
        if q_u is not None:  # what the next sibling (or the replacement) must be drawn against
            target = residual_distribution(target, q_u)
    v.residual = None if q_u is None else target
    return None

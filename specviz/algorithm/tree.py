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
- temperature > 0, children drawn WITHOUT replacement (distinct siblings; recursive rejection sampling, Jeon et al.
  2024, arXiv 2402.14160): child i is drawn from q_i, q with the earlier siblings' tokens removed and renormalised,
  and tested with min(1, p_i(x)/q_i(x)), where p_1 = p and after a rejection p_(i+1) = norm(max(0, p_i − q_i)). Each
  test is the one-child rule against the distribution the child really came from, so the same induction holds. A
  rejected token has p_i < q_i, so the residual leaves it no mass and its removal from q loses nothing; when q_i has
  no mass left (q had fewer tokens than children), the remaining children are not tested.
- a tree shaped per round (algorithm/shaped.py): how many children a node gets is decided as the tree grows, one
  child at a time, each decision taken BEFORE the child it adds is drawn and from draft-side numbers only (the path
  scores, the q left at the node after its earlier children; never p, never a verification draw); the children are
  drawn without replacement and verified by the rule above. The same induction holds, because it holds conditional
  on any history: at child i's test the child is a draw from q_i (whatever led to drawing it: its earlier siblings,
  other nodes' draws) and is tested against q_i, and a rejection leaves p_(i+1) = norm(max(0, p_i − q_i)) whichever
  token was rejected, so later decisions that read that token cannot tilt the token leaving the node away from p_i.
  Each child drawn is kept: drawing several and keeping the best-scoring ones would break it (a kept child is then
  not a draw from q_i; tests/engine/test_shaped_run.py's negative control plants exactly that).
- temperature 0: the children are the draft's top distinct tokens; a child survives iff it is the target's
  argmax, else the next token is the argmax. The output is the target's greedy path, whatever the tree's shape.
At a leaf the walk ends with a bonus token sampled from p there.

Nodes are numbered breadth-first with the root as node 0: widths (2, 1) give nodes 0 (root), 1 and 2 (depth 1),
3 (child of 1) and 4 (child of 2); a shaped tree is given by its parents instead, numbered in the order drawn.
Notation as in sampling.py: p = target, q = draft.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch

from specviz.settings.bounds import DEPTH_BOUND, MAX_TREE_NODES, WIDTH_BOUND, widths_text  # the bounds, and why
from specviz.algorithm.sampling import accept_probability, draw, residual_distribution, sample
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
    """A tree from its widths per depth, widths[d] children for every node at depth d (the root is depth 0), or from
    its parents: a tree shaped per round (algorithm/shaped.py), whose widths are then empty. Either way the nodes are
    numbered breadth-first, so each depth's nodes are consecutive, and a node's children are in the order they were
    drafted (the order verification tests them in).

    >>> t = TreeShape((2, 1))
    >>> t.parents, t.depth
    ((-1, 0, 0, 1, 2), (0, 1, 1, 2, 2))
    >>> TreeShape(parents=(-1, 0, 0, 2)).depth
    (0, 1, 1, 2)
    """

    widths: tuple[int, ...] = ()
    parents: tuple[int, ...] | None = None  # parents[i] < i; -1 for the root. Given for a shaped tree, else built
    depth: tuple[int, ...] = field(init=False)  # 0 for the root
    kids: tuple[tuple[int, ...], ...] = field(init=False, repr=False)  # kids[i]: node i's children, in order
    _ancestry: torch.Tensor = field(init=False, repr=False, compare=False)  # built once: every pass needs it

    def __post_init__(self):
        if self.parents is None:
            widths = check_widths(self.widths)
            parents, depth, level = [-1], [0], [0]
            for d, w in enumerate(widths, start=1):
                level = [_add(parents, depth, u, d) for u in level for _ in range(w)]  # breadth-first
            object.__setattr__(self, "widths", widths)
        elif self.widths:
            raise ValueError("a tree is given by its widths or by its parents, not both")
        else:
            parents, depth = check_parents(self.parents)
        object.__setattr__(self, "parents", tuple(parents))
        object.__setattr__(self, "depth", tuple(depth))
        object.__setattr__(self, "kids", tuple(tuple(i for i, u in enumerate(parents) if u == v)
                                               for v in range(len(parents))))
        seen = torch.zeros(len(parents), len(parents), dtype=torch.bool)
        for i in range(len(parents)):
            seen[i, self.path_to(i)] = True
        object.__setattr__(self, "_ancestry", seen)

    @property
    def shaped(self) -> bool:
        """Built from its parents (a tree shaped per round), not from widths."""
        return not self.widths

    @property
    def n_nodes(self) -> int:
        """Nodes including the root."""
        return len(self.parents)

    @property
    def max_depth(self) -> int:
        """The deepest node's depth: len(widths) for a tree of widths."""
        return max(self.depth)

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


def check_parents(parents: Sequence[int]) -> tuple[list[int], list[int]]:
    """(parents, depths) of a tree given by its parents, or ValueError: the root first (parent -1), every other node's
    parent an earlier node, the nodes breadth-first (depths never falling), within the bounds a tree of widths has.

    >>> check_parents((-1, 0, 1, 0))
    Traceback (most recent call last):
    ValueError: a tree's nodes must be numbered breadth-first: node 3 (depth 1) follows a node of depth 2
    """
    if isinstance(parents, (str, bytes)) or not isinstance(parents, Sequence) or not parents or parents[0] != -1:
        raise ValueError(f"a tree's parents must be a sequence of whole numbers from the root's -1; got {parents!r}")
    depth = [0]
    for i, u in enumerate(parents[1:], start=1):
        if type(u) is not int or not 0 <= u < i:
            raise ValueError(f"node {i}'s parent must be an earlier node, got {u!r}")
        depth.append(depth[u] + 1)
        if depth[i] < depth[i - 1]:
            raise ValueError(f"a tree's nodes must be numbered breadth-first: node {i} (depth {depth[i]}) follows a "
                             f"node of depth {depth[i - 1]}")
    if len(parents) - 1 > MAX_TREE_NODES:
        raise ValueError(f"a tree of {len(parents) - 1} drafted nodes; at most {MAX_TREE_NODES} are allowed")
    if len(parents) > 1:
        DEPTH_BOUND.check(max(depth), "the tree's depth")
    return list(parents), depth


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
    test_q: list[float | None] = field(default_factory=list)  # q'(x): the proposal the child came from (q, or
    #                                                            without replacement q without earlier siblings)

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
    distinct: bool = False,
) -> TreeVerdict:
    """Walk the tree from the root, accepting at most one child per node (see the module docstring).

    tokens: (n,) node tokens (tokens[0], the root, is not tested). p: (n, V) the target's warped distribution
    after each node's path. q: (n, V) the draft distribution each node's children were sampled from (leaf rows
    unused); ignored when greedy, where the children are the draft's top tokens and p is the target's one-hot.
    distinct: the children were drawn without replacement (sample_distinct), so each is tested against q without
    its earlier siblings.
    """
    n = tree.n_nodes
    tokens = [int(t) for t in (tokens.tolist() if isinstance(tokens, torch.Tensor) else tokens)]
    if len(tokens) != n or p.ndim != 2 or p.shape[0] != n or (not greedy and (q is None or q.shape != p.shape)):
        raise ValueError(f"verify_tree wants tokens ({n},), p ({n}, V) and q ({n}, V) for a tree of {n} nodes; got "
                         f"{len(tokens)}, {tuple(p.shape)}, {None if q is None else tuple(q.shape)}")
    v = TreeVerdict([], -1, BONUS, [None] + [DISCARDED] * (n - 1), [None] * n, [None] * n, [None] * n, None,
                    [None] * n)
    p = p.float()
    node = 0
    while True:
        kids = tree.children(node)
        if not kids:  # a leaf: the bonus comes from the target's distribution after the whole path
            v.next_token = int(draw(p[node][None], greedy, generator)[0])
            return v
        child = _test_children(v, kids, tokens, p[node], None if greedy else q[node].float(), generator, distinct)
        if child is None:
            v.next_kind = REPLACEMENT
            v.next_token = int(p[node].argmax()) if greedy else int(sample(v.residual[None], generator)[0])
            return v
        v.path.append(child)
        node = child


def _test_children(v: TreeVerdict, kids: list[int], tokens: list[int], p_u: torch.Tensor, q_u: torch.Tensor | None,
                   generator: torch.Generator | None, distinct: bool = False) -> int | None:
    """Test a node's children in order; record each test in v; the accepted child, or None (then v.residual is
    the distribution to sample the replacement from). q_u None means greedy."""
    target, proposal = p_u, q_u
    for c in kids:
        x = tokens[c]
        if q_u is None:  # greedy: survive iff the target's top token (p_u is one-hot there)
            a, r = (1.0 if x == int(p_u.argmax()) else 0.0), None
            accepted = a == 1.0
        else:
            if distinct and proposal.sum() <= 0:
                break  # q had fewer tokens than children: the rest were never drawn from it, so never tested
            a = accept_probability(target[x].item(), proposal[x].item())
            r = float(torch.rand(1, generator=generator, dtype=torch.float64))  # a fresh draw per child
            accepted = r < a
            v.test_q[c] = float(proposal[x])
        v.accept_probs[c], v.uniforms[c], v.test_p[c] = a, r, float(target[x])
        v.fates[c] = ACCEPTED if accepted else REJECTED
        if accepted:
            return c
        if q_u is not None:  # what the next sibling (or the replacement) must be drawn against
            target = residual_distribution(target, proposal)
            proposal = without(proposal, x) if distinct else proposal
    v.residual = None if q_u is None else target
    return None


def without(q: torch.Tensor, x: int) -> torch.Tensor:
    """q with token x removed and the rest renormalised (all zeros when nothing is left).

    >>> without(torch.tensor([0.5, 0.25, 0.25]), 0).tolist()
    [0.0, 0.5, 0.5]
    """
    rest = q.clone()
    rest[x] = 0
    total = rest.sum()
    return rest / total if total > 0 else rest


def sample_distinct(rows: torch.Tensor, w: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """(n, V) distributions -> (n, w) tokens, each row's drawn one after another WITHOUT replacement (each draw from
    the row with the earlier draws removed and renormalised). A row with fewer than w tokens of positive mass repeats
    its last draw for the rest, which verify_tree(distinct=True) leaves untested."""
    out = torch.empty(rows.shape[0], w, dtype=torch.long)
    for i, row in enumerate(rows):
        left = row.float()
        for j in range(w):
            if left.sum() <= 0:
                out[i, j:] = out[i, j - 1]
                break
            out[i, j] = sample(left[None], generator)[0]
            left = without(left, int(out[i, j]))
    return out

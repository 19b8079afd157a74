"""Drafting with heads on the target's own state (engine/medusa.py): no model pass, one block and the shared output
layer per head, from the hidden state the target's last verify pass left (`DecodingRun.hidden`: the row whose
LM head gave the newest committed token).

Head i (0-based) guesses the token i + 1 places past that newest token, so head i drafts position i of a chain, or
depth i of a tree (fixed widths, or shaped per round). Its guess does not depend on the earlier drafts (a head never sees them): its q is the same
whatever they are, so it is the q each draft was drawn from, and the rejection sampler's test (algorithm/sampling.py,
algorithm/tree.py) keeps the output exact.
"""

from __future__ import annotations

import torch

from specviz.algorithm.sampling import SamplingSettings, draw, warp
from specviz.algorithm.shaped import Growth, grow_tree
from specviz.algorithm.tree import TreeShape
from specviz.engine.tree_pass import children


def head_logits(heads, hidden: torch.Tensor, n: int, vocab: int) -> torch.Tensor:
    """The first n heads' logits (n, vocab), float32 on CPU, from one hidden state (H,)."""
    return heads(hidden)[:n, :vocab].float().cpu()


def heads_chain(heads, hidden: torch.Tensor, k: int, sampling: SamplingSettings, vocab: int,
                generator: torch.Generator | None) -> tuple[list[int], torch.Tensor, torch.Tensor]:
    """(k drafts, q (k, vocab) the warped heads' rows they were drawn from, the raw logits): head i's top token at
    temperature 0, else a draw from its q."""
    logits = head_logits(heads, hidden, k, vocab)
    q = warp(logits, sampling)
    drafts = draw(q, sampling.greedy, generator)
    return drafts.tolist(), q, logits


def heads_tree(heads, hidden: torch.Tensor, root: int, tree: TreeShape, sampling: SamplingSettings, vocab: int,
               generator: torch.Generator | None, distinct: bool) -> tuple[list[int], torch.Tensor]:
    """A tree as tree_pass.draft_tree returns it, (tokens (n_nodes,) with tokens[0] the root, q (n_nodes, vocab)),
    from heads instead of draft passes: every node at depth d gets its children from head d's q (greedy: its top-w
    tokens); a leaf's row is zeros. The tree is at most heads.n deep (trained.check_depth, asked before any pass)."""
    logits = head_logits(heads, hidden, tree.max_depth, vocab)
    rows = warp(logits, sampling)
    tokens, qs = [int(root)], []
    for d, w in enumerate(tree.widths):
        nodes = len(tree.level(d))
        q = rows[d].expand(nodes, -1)
        qs.append(q)
        tokens.extend(children(logits[d].expand(nodes, -1), q, w, sampling, generator, distinct))
    qs.append(torch.zeros(len(tree.level(tree.max_depth)), vocab))  # leaves: no children drafted
    return tokens, torch.cat(qs)


def heads_shaped(heads, hidden: torch.Tensor, growth: Growth, sampling: SamplingSettings, vocab: int,
                 generator: torch.Generator | None) -> tuple[list[int], torch.Tensor, TreeShape]:
    """A tree shaped this round (algorithm/shaped.py) from heads, as tree_pass.draft_shaped returns it: every node at
    depth d draws its children from head d's q, the heads read once (no draft pass). At most heads.n deep
    (trained.check_depth, asked before any pass)."""
    logits = head_logits(heads, hidden, growth.max_depth, vocab)  # (depths, vocab): head d's row for depth d
    return grow_tree(growth, lambda g: logits[g.depth[-1]].expand(len(g.frontier()), -1), sampling, generator)

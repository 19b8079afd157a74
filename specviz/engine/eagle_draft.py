"""Drafting with the EAGLE-style layer (engine/eagle.py) from the target's own features: no target pass to draft.

The run keeps the target's features of the committed text as its verify passes computed them (`DecodingRun.features`,
the last row the one that gave the newest token) and the committed ids; the pair at position t is (f_t, x_{t+1}), so
the newest token closes the last pair. Step 1 guesses the feature at the newest token's position and reads the first
draft off the LM head; each later step appends (its guessed feature, the token just drafted) and guesses again. Every
draft is drawn from (greedy: the argmax of) the warped row q it returns, which depends only on the committed text
and the earlier drafts, so the verifier's min(1, p/q) test keeps the output exact, as with a draft model.
"""

from __future__ import annotations

import torch

from specviz.algorithm.sampling import SamplingSettings, draw, warp
from specviz.algorithm.shaped import Growth, grow_tree
from specviz.algorithm.tree import TreeShape
from specviz.engine.eagle import WINDOW
from specviz.engine.tree_pass import children


def _pairs(features: torch.Tensor, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """The last WINDOW committed pairs as a batch of one: features (1, L, H) and the tokens they gave (1, L)."""
    f = features[-WINDOW:]
    return f[None], torch.tensor([ids[-len(f):]], device=f.device)


def eagle_chain(eagle, features: torch.Tensor, ids: list[int], k: int, sampling: SamplingSettings, vocab: int,
                generator: torch.Generator | None, stop) -> tuple[list[int], torch.Tensor, torch.Tensor]:
    """(up to k drafts, q (n, vocab) the warped rows they were drawn from, their raw logits (n, vocab)): one EAGLE
    step a draft. `stop(i, logits_row, token)` -> True ends the chain after draft i (EOS, adaptive K's confidence)."""
    f, x = _pairs(features, ids)
    drafts, qs, raws = [], [], []
    for i in range(k):
        guess = eagle.predict(f, x)  # (1, H): the feature at the newest position
        logits = eagle.logits(guess)[:, :vocab].float().cpu()  # (1, vocab)
        q = warp(logits, sampling)
        token = int(draw(q, sampling.greedy, generator)[0])
        drafts.append(token)
        qs.append(q[0])
        raws.append(logits[0])
        if stop(i, logits[0], token):
            break
        f = torch.cat([f, guess[:, None].to(f.dtype)], 1)[:, -WINDOW:]
        x = torch.cat([x, torch.tensor([[token]], device=x.device)], 1)[:, -WINDOW:]
    if not drafts:
        return [], torch.zeros(0, vocab), torch.zeros(0, vocab)
    return drafts, torch.stack(qs), torch.stack(raws)


def eagle_tree(eagle, features: torch.Tensor, ids: list[int], tree: TreeShape, sampling: SamplingSettings,
               vocab: int, generator: torch.Generator | None, distinct: bool) -> tuple[list[int], torch.Tensor]:
    """A tree as tree_pass.draft_tree returns it (tokens (n_nodes,) with tokens[0] the root = the newest token; q
    (n_nodes, vocab), a leaf's row zeros), one EAGLE step per depth: every node of a depth at once, each on its own
    path (the committed pairs, then its ancestors' guessed features and tokens), so siblings' children differ."""
    f, x = _pairs(features, ids)  # the root's path: (1, L, H), (1, L)
    tokens, qs = [int(ids[-1])], []
    for d, w in enumerate(tree.widths):
        guess = eagle.predict(f, x)  # (nodes at depth d, H)
        logits = eagle.logits(guess)[:, :vocab].float().cpu()
        q = warp(logits, sampling)
        qs.append(q)
        kids = children(logits, q, w, sampling, generator, distinct)  # node by node, w each
        tokens.extend(kids)
        f = torch.cat([f, guess[:, None].to(f.dtype)], 1).repeat_interleave(w, 0)[:, -WINDOW:]  # each child's path
        x = torch.cat([x.repeat_interleave(w, 0), torch.tensor(kids, device=x.device)[:, None]], 1)[:, -WINDOW:]
    qs.append(torch.zeros(len(tree.level(tree.max_depth)), vocab))  # leaves: no children drafted
    return tokens, torch.cat(qs)


def eagle_shaped(eagle, features: torch.Tensor, ids: list[int], growth: Growth, sampling: SamplingSettings,
                 vocab: int, generator: torch.Generator | None) -> tuple[list[int], torch.Tensor, TreeShape]:
    """A tree shaped this round (algorithm/shaped.py), as tree_pass.draft_shaped returns it: one EAGLE step a depth
    for every node of the depth at once, each on its own path, as eagle_tree's."""
    return grow_tree(growth, _ShapedSteps(eagle, features, ids, vocab), sampling, generator)


class _ShapedSteps:
    """One EAGLE step a depth of a growing tree: each frontier node's path (the committed pairs, then its ancestors'
    guessed features and tokens), the last step's guesses kept for the children it grows."""

    def __init__(self, eagle, features: torch.Tensor, ids: list[int], vocab: int):
        self.eagle, self.vocab = eagle, vocab
        self.f, self.x = _pairs(features, ids)  # the root's path: (1, L, H), (1, L)
        self.nodes, self.guess = [0], None  # the nodes of the last step, in its rows, and their guessed features

    def __call__(self, g: Growth) -> torch.Tensor:
        frontier = g.frontier()
        if self.guess is not None:  # a child's path: its parent's, then the parent's guessed feature and its own token
            rows = torch.tensor([self.nodes.index(g.parents[c]) for c in frontier], device=self.f.device)
            self.f = torch.cat([self.f, self.guess[:, None].to(self.f.dtype)], 1)[rows][:, -WINDOW:]
            tokens = torch.tensor([[g.tokens[c]] for c in frontier], device=self.x.device)
            self.x = torch.cat([self.x[rows], tokens], 1)[:, -WINDOW:]
        self.guess, self.nodes = self.eagle.predict(self.f, self.x), frontier  # (frontier, H)
        return self.eagle.logits(self.guess)[:, :self.vocab].float().cpu()

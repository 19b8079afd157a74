"""A run of the tree drafter: each round the draft proposes a tree of continuations, the target scores every node
in ONE pass, and the longest surviving path is committed (tree.py's rule: exact at every temperature).

    trace = Engine(draft, target, tokenizer).run(prompt, RunSettings(drafter="tree", tree_widths=(2, 2, 1, 1)))

A round, with the same invariant between rounds as the chain (engine.py: `ids` holds prompt + committed tokens,
each cache every token of `ids` but the last, at most):
1. draft: tree_pass.draft_tree, one draft pass per depth (every node of a depth at once, with the tree's mask), or
   for a tree shaped per round tree_pass.draft_shaped, grown where the draft's path probabilities are highest;
2. score: tree_pass.score_tree, one target pass over the tokens its cache lacks and every node;
3. verify: tree.verify_tree walks from the root, accepting at most one child per node;
4. commit the path's tokens and the next token (cut after EOS or max_new_tokens, as the chain does), and both
   caches keep exactly the root and the committed part of the path (tree_pass.keep_path: an index-select, since
   the accepted nodes are not contiguous in the cache).
Round 1 is the target's prefill alone, as in a chain run, and the tree is cut shallower when fewer tokens are left
than its depth + 1 (a round with one token left is a plain target step).
"""

from __future__ import annotations

import time

import torch
from transformers import DynamicCache

from specviz.engine.decoding import DecodingRun, RunContext
from specviz.models.timer import synchronize
from specviz.algorithm.sampling import sample, warp
from specviz.record.trace import BONUS, DISCARDED, REPLACEMENT, CacheLengths, DraftPosition, Round, TokenProb, TreeRecord
from specviz.algorithm.shaped import Growth
from specviz.algorithm.tree import TreeShape, TreeVerdict, verify_tree
from specviz.drafters.trained import EAGLE
from specviz.engine.eagle_draft import eagle_shaped, eagle_tree
from specviz.engine.heads_draft import heads_shaped, heads_tree
from specviz.engine.tree_pass import draft_shaped, draft_tree, keep_path, score_tree


class TreeRun(DecodingRun):
    """One run of the tree drafter. Iterate it to get rounds; `trace()` at any point gives the record so far."""

    def __init__(self, ctx: RunContext, prompt: str, settings, details: bool = True):
        super().__init__(ctx, prompt, settings, details)
        self._shapes: dict[tuple[int, ...], TreeShape] = {}

    def _new_draft_cache(self) -> DynamicCache:
        """transformers' cache: a tree is drafted with a 4D mask and its path kept by an index-select (tree_pass.py),
        which the lean pass does not do."""
        return DynamicCache()

    def _shape(self, depth: int) -> TreeShape:
        """The set tree, cut to its first `depth` depths (near max_new_tokens)."""
        widths = self.s.tree_widths[:depth]
        if widths not in self._shapes:
            self._shapes[widths] = TreeShape(widths)
        return self._shapes[widths]

    def _round(self) -> Round:
        left = self.s.max_new_tokens - self.n_new
        # A round yields at most depth + 1 tokens: never draft past max_new_tokens. Round 1 is the prefill.
        depth = min(self.s.depth, left - 1) if self.rounds else 0
        return self._tree_round(depth) if depth else self._target_step()

    def _draft(self, depth: int) -> tuple[list[int], torch.Tensor, TreeShape, Growth | None]:
        """The round's tree, at most `depth` deep: (tokens, q, shape, and for a shaped tree its growth). Fixed widths:
        children i.i.d. from q, or distinct (greedy: the draft's top tokens); shaped: grown where the draft's path
        probabilities are highest (algorithm/shaped.py), its children distinct."""
        ctx, s, spec = self.ctx, self.s, self.s.drafter_spec
        eagle = self.reads_state and spec.trained == EAGLE
        if spec.shaped:
            growth = Growth(s.tree_budget, depth, s.sampling.greedy, self.ids[-1])
            if eagle:  # one EAGLE step a depth (eagle_draft.py)
                drafted = eagle_shaped(ctx.drafter, self.features, self.ids, growth, s.sampling, ctx.vocab, self.gen)
            elif self.reads_state:  # heads: head d's q at depth d, no draft pass (heads_draft.py)
                drafted = heads_shaped(ctx.drafter, self.hidden, growth, s.sampling, ctx.vocab, self.gen)
            else:
                drafted = draft_shaped(ctx.drafter, self.draft_cache, self.ids[self.draft_cache.get_seq_length():],
                                       growth, s.sampling, ctx.vocab, self.gen)
            return *drafted, growth
        tree = self._shape(depth)
        if eagle:
            tokens, q = eagle_tree(ctx.drafter, self.features, self.ids, tree, s.sampling, ctx.vocab, self.gen,
                                   spec.distinct)
        elif self.reads_state:
            tokens, q = heads_tree(ctx.drafter, self.hidden, self.ids[-1], tree, s.sampling, ctx.vocab, self.gen,
                                   spec.distinct)
        else:
            tokens, q = draft_tree(ctx.drafter, self.draft_cache, self.ids[self.draft_cache.get_seq_length():], tree,
                                   s.sampling, ctx.vocab, self.gen, spec.distinct)
        return tokens, q, tree, None

    def _tree_round(self, depth: int) -> Round:
        ctx, s = self.ctx, self.s
        root_slot = len(self.ids) - 1  # the root, the last committed token, sits here in both caches

        # 1. Draft: the tree, depth by depth (its widths, or shaped by the draft's path probabilities).
        before = self._cache_lengths()
        t0 = time.perf_counter()
        tokens, q, tree, growth = self._draft(depth)
        synchronize(ctx.device)
        t1 = time.perf_counter()
        drafted = self._cache_lengths()

        # 2. Target: ONE pass over the tokens its cache lacks and every node; p has a row per node.
        scored = score_tree(ctx.target, self.target_cache, self.ids[self.target_cache.get_seq_length():], tree, tokens,
                            self.reads_state)
        logits, self._states = scored if self.reads_state else (scored, None)
        self._kept = tree.n_nodes
        p = warp(logits[:, :ctx.vocab], s.sampling)

        # 3. Verify: the surviving path, then a replacement from the last residual or a bonus at a leaf.
        verdict = verify_tree(tree, tokens, p, q, self.gen, greedy=s.sampling.greedy,
                              distinct=s.drafter_spec.distinct)
        synchronize(ctx.device)
        t2 = time.perf_counter()
        verified = self._cache_lengths()

        # 4. Commit (cut at EOS or max_new_tokens); both caches keep the root and the committed path nodes only.
        committed = self._commit([tokens[i] for i in verdict.path] + [verdict.next_token])
        self._keep_state([0] + list(verdict.path))  # root and path; the last node's row gave the next token
        kept = [0] + verdict.path[:len(committed) - 1]  # the last committed token is fed next round
        keep_path(self.target_cache, root_slot, kept)
        if s.drafter_spec.has_draft_cache:  # heads keep none
            keep_path(self.draft_cache, root_slot, kept)
        lengths = [before, drafted, verified, self._cache_lengths()]  # (draft, target) at each moment
        cache = CacheLengths(draft=[d for d, _ in lengths], target=[t for _, t in lengths])
        return self._record(tree, tokens, p, q, verdict, committed, t1 - t0, t2 - t1, cache, growth)

    def _target_step(self) -> Round:
        """One target pass and one token, no drafts: round 1 (the prefill, exactly as in a chain run) or the last
        token before max_new_tokens."""
        ctx = self.ctx
        before = self._cache_lengths()
        t0 = time.perf_counter()
        logits = self._target_pass(self.ids[self.target_cache.get_seq_length():], 1)
        self._keep_state([0])
        p = warp(logits[:, :ctx.vocab], self.s.sampling)[0]
        x = int(sample(p[None], self.gen)[0])
        synchronize(ctx.device)
        t1 = time.perf_counter()
        after = self._cache_lengths()
        committed = self._commit([x])
        cache = CacheLengths(draft=[before[0]] * 4, target=[before[1], before[1], after[1], after[1]])
        return Round(index=len(self.rounds), k=0, drafts=[], n_accepted=0,
                     next_token=TokenProb(x, ctx.text(x), float(p[x])), next_kind=BONUS, residual=None,
                     bonus_candidates=self._bonus_top(p) if self.details else None, committed_ids=committed,
                     draft_time_s=0.0, verify_time_s=t1 - t0, stop=self.stop, cache=cache, drafter=self.s.drafter)

    def _record(self, tree: TreeShape, tokens: list[int], p: torch.Tensor, q: torch.Tensor, v: TreeVerdict,
                committed: list[int], draft_time: float, verify_time: float, cache: CacheLengths,
                growth: Growth | None) -> Round:
        """Turn one tree round's tensors into a Round: the drafted nodes as its drafts, breadth-first, each with p
        and q read at its parent (where it was drafted and tested), and the shape and path as its TreeRecord (a
        shaped tree's with its budget and each node's factor of its path score)."""
        ctx = self.ctx
        parents = torch.tensor(tree.parents[1:], dtype=torch.long)
        index = torch.tensor(tokens[1:], dtype=torch.long)
        p_x, q_x = p[parents, index].tolist(), q[parents, index].tolist()
        # sum(min(p, q)) at a node is the chance its FIRST child is accepted; later siblings face a residual
        overlaps = torch.minimum(p, q).sum(-1).tolist() if self.details else []
        drafts = []
        for i in range(1, tree.n_nodes):
            first = v.fates[i] != DISCARDED and tree.kids[tree.parents[i]][0] == i
            drafts.append(DraftPosition(
                token_id=tokens[i], text=ctx.text(tokens[i]), p=p_x[i - 1], fate=v.fates[i],
                q=q_x[i - 1] if v.test_q[i] is None else v.test_q[i],  # what its test compared with: q or q
                accept_prob=v.accept_probs[i], uniform=v.uniforms[i],
                overlap=overlaps[tree.parents[i]] if self.details and first else None))
        last, nxt = (v.path[-1] if v.path else 0), v.next_token
        rejected = v.next_kind == REPLACEMENT
        sampled = rejected and v.residual is not None  # greedy replaces with the target's argmax: no residual
        residual = self._residual_top(p[last], q[last], v.residual, nxt) if self.details and sampled else None
        next_prob = TokenProb(nxt, ctx.text(nxt), float(p[last, nxt]), float(q[last, nxt]) if rejected else None,
                              float(v.residual[nxt]) if sampled else None)
        record = TreeRecord(widths=list(tree.widths), parents=list(tree.parents), depth=list(tree.depth),
                            root_id=tokens[0], root_text=ctx.text(tokens[0]), path=list(v.path), test_p=v.test_p[1:],
                            budget=growth.budget if growth else 0, factors=growth.factors[1:] if growth else [])
        return Round(index=len(self.rounds), k=tree.n_nodes - 1, drafts=drafts, n_accepted=v.n_accepted,
                     next_token=next_prob, next_kind=v.next_kind, residual=residual,
                     bonus_candidates=self._bonus_top(p[last]) if self.details and not rejected else None,
                     committed_ids=committed, draft_time_s=draft_time, verify_time_s=verify_time, stop=self.stop,
                     cache=cache, drafter=self.s.drafter, tree=record)

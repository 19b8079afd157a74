"""A draft tree through the models: drafting it depth by depth (to fixed widths, or shaped per round by the draft's
path probabilities), scoring every node in one target pass, and keeping exactly the accepted path's entries in a KV
cache.

The tree's nodes (tree.TreeShape: breadth-first, node 0 the root = the last committed token) sit in the cache one
after another from the root's slot `tree_start` on, so node i's keys live at slot tree_start + i. One pass feeds
some of them at once with a 4D attention mask: a node attends to every slot before the root (the committed
prefix) and to the slots of its ancestors and itself, nothing else, and its position id is tree_start + depth (the
position it would have in a plain sequence along its own path). Its logits are then those of a plain forward over
prefix + path; tests/engine/test_tree_pass.py checks it.

transformers 5.24 (masking_utils._preprocess_mask_arguments) passes a 4D `attention_mask` through to the
attention functions as it is. `eager` adds it to the scores and `sdpa` hands it to
torch's scaled_dot_product_attention, so an additive float mask (0 where allowed, the dtype's minimum elsewhere)
works for both; flash-attention kernels take no such mask and flex attention wants a BlockMask, so those are
refused with a clear message. The Qwen2 family's models load with `sdpa` by default.
"""

from __future__ import annotations

from typing import Sequence

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

from specviz.algorithm.sampling import SamplingSettings, sample, warp
from specviz.algorithm.shaped import Growth, grow_tree
from specviz.algorithm.tree import TreeShape, sample_distinct
from specviz.models.attention import NAME as GROUPED
from specviz.models.kernels import activations
from specviz.engine.decoding import forward_states
from specviz.models.layers import largest

TREE_ATTENTION = ("eager", "sdpa", GROUPED)  # attention implementations that take a custom 4D additive mask


def check_tree_attention(model) -> None:
    """ValueError unless the model can score a tree in one pass (an attention that takes a custom 4D mask, and no
    sliding-window layers, whose window a custom mask would override)."""
    impl = getattr(model.config, "_attn_implementation", None)
    if impl not in TREE_ATTENTION:
        raise ValueError(f"tree drafting needs attention that takes a custom 4D mask ({' or '.join(TREE_ATTENTION)});"
                         f" this model uses {impl!r}. Load it with attn_implementation='sdpa'")
    if "sliding_attention" in (getattr(model.config, "layer_types", None) or ()):
        raise ValueError("tree drafting cannot use a model with sliding-window attention layers: "
                         "the tree's mask would override the window")


def tree_inputs(tree: TreeShape, tree_start: int, past: int, n_fed: int, dtype: torch.dtype,
                device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """The mask (1, 1, n_fed, past + n_fed) and position ids (1, n_fed) for feeding the tokens of cache slots
    past .. past + n_fed - 1: plain causal before the root's slot, the tree rule from it on.

    >>> mask, pos = tree_inputs(TreeShape((2,)), tree_start=2, past=2, n_fed=3, dtype=torch.float32)
    >>> (mask[0, 0] == 0).int().tolist(), pos.tolist()
    ([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 0, 1]], [[2, 3, 3]])
    """
    kv = past + n_fed
    slots = torch.arange(past, kv)
    allowed = torch.arange(kv)[None, :] <= slots[:, None]  # (n_fed, kv): causal, right for the prefix's tokens
    in_tree = slots >= tree_start
    nodes = slots[in_tree] - tree_start
    if len(nodes) and int(nodes.max()) >= tree.n_nodes:
        raise ValueError(f"slots past {tree_start} + {tree.n_nodes - 1} are not in this tree")
    seen = torch.zeros(len(nodes), kv, dtype=torch.bool)
    seen[:, :tree_start] = True  # the committed prefix
    width = kv - tree_start
    seen[:, tree_start:] = tree.ancestry()[nodes][:, :width]  # ancestors and itself: all in the cache or this pass
    allowed[in_tree] = seen
    positions = slots.clone()
    positions[in_tree] = tree_start + torch.tensor(tree.depth, dtype=torch.long)[nodes]
    mask = torch.zeros(n_fed, kv, dtype=dtype).masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None].to(device), positions[None].to(device)


def tree_forward(model, tokens: Sequence[int], cache: DynamicCache, tree: TreeShape, tree_start: int,
                 keep: int, states: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Feed tokens (cache slots cache_length .. + len(tokens) - 1) with the tree's mask; logits (keep, V) of the
    last `keep` fed tokens, float32 on CPU; with `states`, (logits, the hidden states their LM head read)."""
    check_tree_attention(model)
    past = cache.get_seq_length()
    if not tokens or not 0 <= tree_start < past + len(tokens):  # the root is in the cache or fed now
        raise ValueError(f"the root's slot {tree_start} is neither cached ({past}) nor fed ({len(tokens)} tokens)")
    device, dtype = activations(model)  # the hidden states' (a float16-fbgemm model keeps float16 embeddings)
    mask, positions = tree_inputs(tree, tree_start, past, len(tokens), dtype, device)
    inputs = dict(input_ids=torch.tensor([list(tokens)], device=device), attention_mask=mask,
                  position_ids=positions, cache=cache)
    if states:
        return forward_states(model, keep, **inputs)
    return model(**inputs, use_cache=True, logits_to_keep=keep).logits[0].float().cpu()


def score_tree(model, cache: DynamicCache, pending: Sequence[int], tree: TreeShape,
               tokens: Sequence[int], states: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """The target's ONE pass over a drafted tree: logits (n_nodes, V), row i after node i's path (row 0: the root);
    with `states`, (logits, each node's hidden state), which drafting heads read next round.

    pending: the committed tokens the cache lacks, ending with the root (tokens[0]); tokens: every node's token.
    Afterwards the cache holds the prefix and every node; keep_path(cache, tree_start, ...) trims it, with
    tree_start = the cache length before this call + len(pending) - 1."""
    if not pending or pending[-1] != tokens[0]:
        raise ValueError("pending must end with the root, the tree's node 0")
    tree_start = cache.get_seq_length() + len(pending) - 1
    return tree_forward(model, list(pending[:-1]) + list(tokens), cache, tree, tree_start, tree.n_nodes, states)


def draft_tree(model, cache: DynamicCache, pending: Sequence[int], tree: TreeShape, sampling: SamplingSettings,
               vocab: int, generator: torch.Generator | None = None,
               distinct: bool = False) -> tuple[list[int], torch.Tensor]:
    """Draft a tree, one draft pass per depth (every node of a depth at once, with the tree's mask):
    (tokens (n_nodes,) with tokens[0] the root, q (n_nodes, vocab) the warped draft distribution each node's
    children came from; a leaf's row is zeros). Children are i.i.d. samples from q, or at temperature 0 the
    draft's top-w distinct tokens (q is then the one-hot of its argmax, as warp gives); `distinct`: sampled children
    are drawn without replacement (algorithm/tree.py's sample_distinct).

    pending: the committed tokens the draft cache lacks, ending with the root. Afterwards the cache holds every
    node but the leaves (the deepest depth is never fed: nothing is drafted after it)."""
    if not pending:
        raise ValueError("pending must end with the root, the last committed token")
    tree_start = cache.get_seq_length() + len(pending) - 1
    tokens, qs = [int(pending[-1])], []
    fed = list(pending)
    for d, w in enumerate(tree.widths):
        level = tree.level(d)
        logits = tree_forward(model, fed, cache, tree, tree_start, len(level))[:, :vocab]  # (nodes at d, vocab)
        q = warp(logits, sampling)
        qs.append(q)
        fed = children(logits, q, w, sampling, generator, distinct)
        tokens.extend(fed)
    qs.append(torch.zeros(len(tree.level(tree.max_depth)), vocab))  # leaves: no children drafted
    return tokens, torch.cat(qs)


def draft_shaped(model, cache: DynamicCache, pending: Sequence[int], growth: Growth, sampling: SamplingSettings,
                 vocab: int, generator: torch.Generator | None = None) -> tuple[list[int], torch.Tensor, TreeShape]:
    """Draft a tree shaped this round (algorithm/shaped.py), one draft pass per depth over the nodes the last depth
    drew, with the mask of the tree grown so far: (tokens, q, the tree's shape), tokens and q as draft_tree gives them.

    pending: the committed tokens the draft cache lacks, ending with the root. Afterwards the cache holds every node
    but the deepest depth's (nothing is drafted after them), in node order, so keep_path trims it as after
    draft_tree."""
    if not pending:
        raise ValueError("pending must end with the root, the last committed token")
    tree_start = cache.get_seq_length() + len(pending) - 1

    def step(g: Growth) -> torch.Tensor:
        frontier = g.frontier()
        fed = list(pending) if not g.drafted else [g.tokens[i] for i in frontier]  # the root first, then each depth
        return tree_forward(model, fed, cache, g.shape(), tree_start, len(frontier))[:, :vocab]

    return grow_tree(growth, step, sampling, generator)


def children(logits: torch.Tensor, q: torch.Tensor, w: int, sampling: SamplingSettings,
             generator: torch.Generator | None, distinct: bool) -> list[int]:
    """w children for each row of q (rows: the nodes of one depth), breadth-first: node by node, w each. Greedy: the
    top-w distinct tokens of the row's logits (q is the one-hot of the argmax); sampled: w i.i.d. draws from q, or
    w distinct ones (`distinct`)."""
    if sampling.greedy:
        kids = largest(logits, w, ordered=True)  # distinct, best first
    elif distinct:
        kids = sample_distinct(q, w, generator)  # w distinct draws per node
    else:
        kids = sample(q.repeat_interleave(w, dim=0), generator)  # w i.i.d. draws per node
    return kids.flatten().tolist()


def keep_path(cache: DynamicCache, tree_start: int, nodes: Sequence[int]) -> int:
    """Keep the prefix before the root's slot and the slots of `nodes` (root-first, e.g. [0] + verdict.path),
    dropping every other node, in every layer's keys and values; the new length. Nodes past the end of the cache
    (the leaves a draft cache never saw) are skipped: they are fed next round, as after a chain's clean sweep.

    Unlike a crop, this moves the accepted path's entries next to the prefix, so the cache is the one a plain
    forward over prefix + path would have left (the keys were rotated with the path's own positions)."""
    length = cache.get_seq_length()
    if not 0 <= tree_start <= length or list(nodes) != sorted(set(nodes)):
        raise ValueError(f"keep_path wants a root slot within the cache ({tree_start} of {length}) and nodes "
                         f"root-first, increasing; got {list(nodes)}")
    slots = [tree_start + n for n in nodes if tree_start + n < length]
    keep = torch.tensor(list(range(tree_start)) + slots, dtype=torch.long)
    for layer in cache.layers:
        if isinstance(layer, DynamicSlidingWindowLayer) or not isinstance(layer, DynamicLayer):
            raise ValueError(f"keep_path handles full-attention DynamicCache layers, not {type(layer).__name__}")
        if layer.is_initialized and layer.keys.numel():
            index = keep.to(layer.keys.device)
            layer.keys = layer.keys.index_select(-2, index)
            layer.values = layer.values.index_select(-2, index)
    return cache.get_seq_length()

"""Attention as the fast CPU path computes it: one grouped matmul, softmax, matmul a layer, the same code for one new
token and for K + 1 (transformers' SDPA kernel on a CPU takes one path for a single query and another, slower, for
several with a mask, and repeats every key and value head for grouped-query attention).

    use_grouped_attention(model)   # the model's layers attend through `grouped_attention` from now on

Why it is exact: each query row's scores, softmax and weighted sum are computed from that row and the cached keys and
values alone, in the same operations whatever other rows come with it, so a verify pass scores each draft as a
one-token step would (tests/models/test_kernels.py measures the rows bit for bit on the float16-fbgemm path).
The mask is transformers' additive one ("eager": 0 where a query may look, the dtype's minimum elsewhere), so a
draft tree's 4D mask (tree_pass.py) passes through unchanged.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.masking_utils import eager_mask

NAME = "specviz-grouped"


def grouped_attention(module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                      **kwargs) -> tuple[torch.Tensor, None]:
    """query (B, H, L, D), key and value (B, Hkv, S, D), mask (B, 1, L, S) additive or None -> (B, L, H, D)."""
    b, heads, length, dim = query.shape
    kv_heads, seen = key.shape[1], key.shape[2]
    group = heads // kv_heads  # query heads sharing one key/value head: h = kv_head * group + j
    scores = torch.matmul(query.reshape(b, kv_heads, group * length, dim), key.transpose(-1, -2))
    scores.mul_(scaling if scaling is not None else dim ** -0.5)
    if attention_mask is not None:
        scores = scores.view(b, kv_heads, group, length, seen).add_(attention_mask[:, :, None, :, :seen])
        scores = scores.view(b, kv_heads, group * length, seen)
    out = torch.matmul(torch.softmax(scores, dim=-1), value)  # (B, Hkv, group·L, D)
    return out.view(b, heads, length, dim).transpose(1, 2).contiguous(), None


AttentionInterface.register(NAME, grouped_attention)
AttentionMaskInterface.register(NAME, eager_mask)


def use_grouped_attention(model) -> None:
    """Switch the model (every sub-config that names an attention implementation) to grouped_attention."""
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None and hasattr(config, "_attn_implementation"):
            config._attn_implementation = NAME

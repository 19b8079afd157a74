"""What a draft costs in memory, measured on the loaded models: its weights as stored (quantized ones at their size),
the part it shares with the target (self-speculation shares every weight), and its KV cache per token."""

from __future__ import annotations

import torch

from specviz.record.trace import DraftMemory


def _tensors(model) -> list:
    return [*model.parameters(), *model.buffers()]


def draft_memory(draft, target) -> DraftMemory | None:
    """The draft's memory beside the target's weights; None for no draft model (a drafter that copies text)."""
    if draft is None:
        return None
    owned_by_target = {t.data_ptr() for t in _tensors(target)}
    own = shared = 0
    for t in {id(t): t for t in _tensors(draft)}.values():
        size = t.numel() * t.element_size()
        shared, own = (shared + size, own) if t.data_ptr() in owned_by_target else (shared, own + size)
    config = getattr(draft, "config", None)
    if config is None:  # drafting heads (engine/medusa.py, eagle.py): blocks and the target's LM head, no KV cache of their own
        return DraftMemory(weights_bytes=own, shared_bytes=shared, kv_bytes_per_token=0)
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    element = torch.empty((), dtype=draft.dtype).element_size()  # the cache holds keys and values in compute dtype
    kv = 2 * config.num_hidden_layers * heads * head_dim * element
    return DraftMemory(weights_bytes=own, shared_bytes=shared, kv_bytes_per_token=kv)

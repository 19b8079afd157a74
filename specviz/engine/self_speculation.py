"""Self-speculation: the target's own first N layers, its final norm and its LM head, as a draft model.

LayerSkip-style early exit. The draft is a model object of the target's class whose modules ARE the target's (the
embedding, layers 0 … N−1, the final norm, the rotary embedding, the LM head): no weight is copied, so one model
sits in memory, and there is no second tokenizer to agree with. The draft keeps its own KV cache for its N layers
(the engine gives every draft one), so drafting never writes the target's cache; verification is the full target,
exactly as for a separate draft model, so the output is exact whatever the draft proposes.

Qwen2.5 was not trained to exit early: its hidden state after layer N < 28 was never meant for the LM head, so
expect a low acceptance rate at small N. That is the lesson the comparison teaches: Medusa, EAGLE, multi-token
prediction and LayerSkip train their draft heads or layers for it.

    >>> # view = early_exit(target, 8); Engine(view, target, tokenizer) drafts with layers 0-7
"""

from __future__ import annotations

import copy

import torch


def layer_count(model) -> int:
    """How many decoder layers the model has (what N may range over: 1 … count − 1)."""
    return len(decoder(model).layers)


def decoder(model):
    """The model's decoder stack (`model.model` for the Llama/Qwen family); ValueError for other shapes."""
    inner = getattr(model, "model", None)
    if inner is None or not hasattr(inner, "layers") or not hasattr(inner, "norm") or not hasattr(model, "lm_head"):
        raise ValueError(f"self-speculation needs a decoder with .model.layers, .model.norm and .lm_head; "
                         f"{type(model).__name__} has another shape")
    return inner


def check_layers(model, n) -> int:
    """N as a whole number from 1 to the layer count − 1 (N = all layers would be the target itself)."""
    count = layer_count(model)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n < count:
        raise ValueError(f"draft layers must be a whole number from 1 to {count - 1} (the target has {count} "
                         f"layers; N = {count} would be the target itself), got {n!r}")
    return n


def early_exit(target, n: int):
    """A model that runs `target`'s first n layers, then its final norm and LM head, sharing every weight."""
    n = check_layers(target, n)
    inner = decoder(target)
    config = copy.deepcopy(target.config)
    config.num_hidden_layers = n
    if getattr(config, "layer_types", None):
        config.layer_types = list(config.layer_types[:n])
    with torch.device("meta"):  # the skeleton allocates nothing: every module below is replaced by the target's
        view = type(target)(config)
    view.model.embed_tokens = inner.embed_tokens
    view.model.layers = torch.nn.ModuleList(inner.layers[:n])  # the same layer objects: layer_idx 0 … n−1
    view.model.norm = inner.norm
    view.model.rotary_emb = inner.rotary_emb
    view.lm_head = target.lm_head
    view.generation_config = target.generation_config
    view.eval()
    meta = [name for name, t in [*view.named_parameters(), *view.named_buffers()] if t.is_meta]
    if meta:  # an architecture with a module this function does not know: refuse rather than compute garbage
        raise ValueError(f"self-speculation cannot share {', '.join(meta[:3])} of {type(target).__name__}")
    return view

"""A lighter draft: its linear layers with int8 weights (one scale per output row).

Why only the draft, and why this is still exact: speculative decoding is lossless for ANY draft distribution
q, as long as verification uses the q the draft really sampled from, which the engine always does. A
quantized draft is simply another draft model; the target, whose distribution the output follows, keeps
its full weights. On a CPU a draft step is bound by reading its weights from memory, most of them in the
linear layers, so int8 weights make a step cheaper while the distribution barely moves (the measured step
times and acceptance are in docs/benchmarks.md).

The embedded draft is itself a dequantized GGUF (~6 bits per weight), so 8 bits per weight add little error.
"""

from __future__ import annotations

import torch
from torch import nn

from .options import DRAFT_WEIGHTS


class Int8Linear(nn.Module):
    """y = x W^T + b with W stored as int8 rows times one scale per row (symmetric, round to nearest)."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        w = linear.weight.detach().float()
        scale = w.abs().amax(dim=1).clamp(min=1e-12) / 127
        self.register_buffer("weight_int8", (w / scale[:, None]).round().clamp(-127, 127).to(torch.int8))
        self.register_buffer("scale", scale.to(linear.weight.dtype))
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(self.scale.dtype)
        y = torch.ops.aten._weight_int8pack_mm(flat, self.weight_int8, self.scale)  # one fused kernel
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)


def use_int8(draft_weights: str, device: str) -> bool:
    if draft_weights not in DRAFT_WEIGHTS:
        raise ValueError(f"draft weights must be one of {', '.join(DRAFT_WEIGHTS)}, got {draft_weights!r}")
    return draft_weights == "int8" or (draft_weights == "auto" and device == "cpu")


def int8_name(draft_name: str) -> str:
    """The name of a draft running with int8 weights, as the app, the CLI, traces and the bench show it."""
    return f"{draft_name} (int8)"


def quantize_linears(model: nn.Module) -> nn.Module:
    """Replace every nn.Linear of model by an Int8Linear, in place (the full-precision weights are freed,
    except where shared with an embedding)."""
    if next(model.parameters()).device.type != "cpu":
        raise ValueError("int8 draft weights are implemented for CPU only")
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, name, Int8Linear(child))
    return model

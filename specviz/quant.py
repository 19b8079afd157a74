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

import statistics
import time

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


def use_int8(draft_weights: str, device: str, dtype: torch.dtype = torch.float32) -> bool:
    """Whether the draft gets int8 weights. "auto": on CPU, only where this CPU's int8 kernel beats the full
    weights (int8_pays): on AVX2-only CPUs it is the slower one, and much slower for a prompt's many rows."""
    if draft_weights not in DRAFT_WEIGHTS:
        raise ValueError(f"draft weights must be one of {', '.join(DRAFT_WEIGHTS)}, got {draft_weights!r}")
    return draft_weights == "int8" or (draft_weights == "auto" and device == "cpu" and int8_pays(dtype))


_PAYS: dict[torch.dtype, bool] = {}  # measured once per process and dtype


def int8_pays(dtype: torch.dtype, shape: tuple[int, int] = (896, 4864)) -> bool:
    """Time one draft-sized linear layer (Qwen2.5-0.5B's MLP) both ways, for one row (a decoding step) and 32
    (a prompt): int8 pays when it is faster for one row and not much slower for many. A few tens of ms."""
    if dtype not in _PAYS:
        linear = nn.Linear(*shape, bias=False).to(dtype)
        packed = Int8Linear(linear)
        (full_one, int8_one), (full_many, int8_many) = [
            (_time(linear, x), _time(packed, x)) for x in (torch.randn(rows, shape[0], dtype=dtype) for rows in (1, 32))]
        _PAYS[dtype] = int8_one < 0.9 * full_one and int8_many < 1.5 * full_many
    return _PAYS[dtype]


def _time(layer: nn.Module, x: torch.Tensor, repeats: int = 5) -> float:
    """Median seconds of layer(x), after one warm-up call."""
    with torch.inference_mode():
        layer(x)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            layer(x)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


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

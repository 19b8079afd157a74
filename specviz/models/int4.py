"""Linear layers computed from 4-bit codes in groups of 32, by torch's CPU kernel (`_weight_int4pack_mm_for_cpu`):
the one layout both 4-bit layers share, the draft's own rounding (quant.Int4Linear) and the target's GGUF Q4_K blocks
as the file holds them (gguf_blocks.py, the gguf-int4 path of kernels.py).

A group of 32 inputs of a row holds codes 0…15, a step and a minimum: weight = code · step + minimum. torch's kernel
stores a group as (scale, zero) with weight = (code − 8) · scale + zero, in the activations' dtype (bfloat16: its fast
path; float32 activations take it 30 times longer), so zero = minimum + 8 · scale. Rounding scale and zero to
bfloat16 moves a weight a little (`moved_by` measures how far); each row's output is a sum over its own weights only,
so rows computed together equal rows computed alone (kernel_choice.rows_here measures it on each machine).
"""

from __future__ import annotations

import torch
from torch import nn

GROUP = 32  # inputs per step and minimum: the smallest group torch's kernel takes (and Q4_K's sub-block)


class Int4Groups(nn.Module):
    """y = x W^T + b, W given as codes (N, K) in 0…15 with a step and a minimum per group of GROUP inputs (N, K/GROUP).
    Inputs are cast to `dtype` (the kernel's), outputs to `out_dtype` (None: left in `dtype`)."""

    def __init__(self, codes: torch.Tensor, step: torch.Tensor, minimum: torch.Tensor, bias: torch.Tensor | None,
                 dtype: torch.dtype = torch.bfloat16, out_dtype: torch.dtype | None = None):
        super().__init__()
        n, k = codes.shape
        scale, zero = scale_and_zero(step, minimum, dtype)
        self.register_buffer("packed", torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes.to(torch.int32), 1))
        self.register_buffer("scales_and_zeros", torch.stack([scale, zero], -1).transpose(0, 1).contiguous())
        self.register_buffer("bias", None if bias is None else bias.detach().clone())
        self.in_features, self.out_features, self.out_dtype = k, n, out_dtype

    @staticmethod
    def fits(in_features: int, out_features: int) -> bool:
        """torch's kernel wants whole groups along the input and outputs in multiples of 16."""
        return in_features % GROUP == 0 and out_features % 16 == 0

    @property
    def packed_bytes(self) -> int:
        """Bytes read a step: half a byte a weight, and a scale and a zero per group."""
        return self.packed.numel() + self.scales_and_zeros.numel() * self.scales_and_zeros.element_size()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(self.scales_and_zeros.dtype)
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(flat, self.packed, GROUP, self.scales_and_zeros)
        if self.out_dtype is not None:
            y = y.to(self.out_dtype)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)


def scale_and_zero(step: torch.Tensor, minimum: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """A group's step and minimum as torch's kernel stores them, in `dtype`: the scale rounded first, so the zero
    (minimum + 8 · scale) makes up for the scale's rounding at the group's middle."""
    scale = step.to(dtype)
    return scale, (minimum.float() + 8 * scale.float()).to(dtype)


def weights_of(codes: torch.Tensor, step: torch.Tensor, minimum: torch.Tensor) -> torch.Tensor:
    """The weights (…, K) that codes (…, K) with a step and a minimum per group of GROUP (…, K/GROUP) stand for,
    float32: code · step + minimum, exactly as a GGUF file defines them."""
    groups = codes.float().reshape(*codes.shape[:-1], -1, GROUP)
    return (groups * step.float()[..., None] + minimum.float()[..., None]).reshape(codes.shape)


def rounded(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A weight (N, K) rounded to nearest in groups of GROUP: each group's minimum and step (max − min) / 15, and the
    codes; (codes, step, minimum) as Int4Groups takes them."""
    n, k = weight.shape
    groups = weight.detach().float().reshape(n, k // GROUP, GROUP)
    low, high = groups.amin(-1), groups.amax(-1)
    step = (high - low).clamp(min=1e-12) / 15
    codes = ((groups - low[..., None]) / step[..., None]).round().clamp(0, 15).reshape(n, k)
    return codes, step, low


def moved_by(step: torch.Tensor, minimum: torch.Tensor, dtype: torch.dtype = torch.bfloat16) -> tuple[float, float]:
    """How far weights move when their groups' step and minimum are re-expressed as Int4Groups stores them: (the
    most, relative to the largest weight of its group; the mean, the same way), over every code of every group. For
    scale, rounding each weight itself to bfloat16 moves it by up to 2⁻⁹ = 0.002 of its own size."""
    step, minimum = step.float(), minimum.float()
    scale, zero = (t.float() for t in scale_and_zero(step, minimum, dtype))
    largest = torch.maximum(minimum.abs(), (15 * step + minimum).abs()).clamp(min=1e-30)
    moved = torch.stack([((code - 8) * scale + zero - (code * step + minimum)).abs() / largest
                         for code in range(16)])
    return float(moved.max()), float(moved.mean())

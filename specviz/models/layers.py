"""The layers a kernel path or a lighter draft puts in place of torch's nn.Linear and nn.Embedding, each storing its
weights as its kernel wants them (all of them `PackedLayer`s): which path uses which is the table in kernels.py,
which draft weights quant.py.

- float16 for fbgemm (`Fp16Linear`, `Fp16Embedding`): the float16-fbgemm path, and on gguf-int4 every layer the file
  holds no 4-bit block for;
- int8 with one scale per row (`Int8Linear`, `Int8Embedding`): a lighter draft; dynamic int8 as fbgemm computes it
  (`Int8DynamicLinear`, plain tensor ops), one scale per tensor: kept to measure why int8-dynamic is refused;
- 4-bit codes in groups of 32 with a step and a minimum (`Int4Groups`): the one layout torch's CPU kernel
  (`_weight_int4pack_mm_for_cpu`) takes, shared by the draft's own rounding (`Int4Linear`) and the target's GGUF Q4_K
  blocks as the file holds them (gguf_blocks.py, the gguf-int4 path); `Int4Embedding` reads a token's row from the
  same codes; `Int4RescoredHead`, an int4 draft's output layer, reads its largest logits again from int8 rows.

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
PACK_ROWS = 64  # torch's CPU packing interleaves rows in blocks of 64: layers whose rows are whole blocks can be
#               joined by joining their packed tensors (measured: a part of 32 or 96 rows gives other outputs)


class PackedLayer(nn.Module):
    """A layer whose weights are stored as its kernel wants them: a model put on a path keeps them so while the rest
    of it turns float32 (kernels.apply_path)."""


# --- float16 for fbgemm -------------------------------------------------------------------------------------------

class Fp16Linear(PackedLayer):
    """y = x W^T + b with W stored in float16, packed for fbgemm's kernel (which converts W to float32 in registers
    and accumulates in float32): half the memory traffic of float32, x and y stay float32. `weight` keeps the float16
    values unpacked only where asked (`keep_weight`: an output layer that heads and training read row by row)."""

    def __init__(self, linear: nn.Linear, keep_weight: bool = False):
        super().__init__()
        half = linear.weight.detach().to(torch.float16)  # the weights as loaded, where they are float16 already
        bias = None if linear.bias is None else linear.bias.detach().float()
        self.packed = torch.ops.quantized.linear_prepack_fp16(half.float(), bias)  # a float32 copy, one layer at once
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("weight", half if keep_weight else None)

    @property
    def packed_bytes(self) -> int:
        """The packed weights' size (not a tensor torch counts among parameters or buffers): 2 bytes a weight."""
        return 2 * self.in_features * self.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features)
        return torch.ops.quantized.linear_dynamic_fp16(flat, self.packed).reshape(*x.shape[:-1], self.out_features)


class Fp16Embedding(PackedLayer):
    """A token's row of a float16 table, as float32 (the activations' dtype on the float16-fbgemm path)."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.register_buffer("weight", table)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return nn.functional.embedding(ids, self.weight).float()


# --- int8 ---------------------------------------------------------------------------------------------------------

def int8_rows(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 codes, one scale per row in the weight's dtype): each row symmetric, rounded to nearest, its largest
    magnitude 127 steps."""
    w = weight.detach().float()
    scale = w.abs().amax(dim=1).clamp(min=1e-12) / 127
    return (w / scale[:, None]).round().clamp(-127, 127).to(torch.int8), scale.to(weight.dtype)


class Int8Linear(PackedLayer):
    """y = x W^T + b with W stored as int8 rows times one scale per row (int8_rows); `rows`: an Int8Embedding made from
    this layer's own weights (a tied model's one table), whose rows are shared rather than stored twice."""

    def __init__(self, linear: nn.Linear, rows: Int8Embedding | None = None):
        super().__init__()
        codes, scale = (rows.weight_int8, rows.scale) if rows is not None else int8_rows(linear.weight)
        self.register_buffer("weight_int8", codes)
        self.register_buffer("scale", scale)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(self.scale.dtype)
        y = torch.ops.aten._weight_int8pack_mm(flat, self.weight_int8, self.scale)  # one fused kernel
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)


class Int8Embedding(PackedLayer):
    """A token's row of a table kept as int8 times one scale per row (int8_rows, as Int8Linear keeps a layer's), in the
    scale's dtype (the table's, or float32 where a path turns the rest of the model float32): half a bfloat16 table's
    memory (the packaged draft's 151,936 × 896 rows: 0.14 GB, not 0.27). Its rounding moves the draft's q a little,
    never the output (quant.py's docstring)."""

    def __init__(self, embedding: nn.Module):
        super().__init__()
        codes, scale = int8_rows(embedding.weight)
        self.register_buffer("weight_int8", codes)
        self.register_buffer("scale", scale)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.weight_int8[ids].to(self.scale.dtype) * self.scale[ids].unsqueeze(-1)


class Int8DynamicLinear(PackedLayer):
    """Dynamic int8 as fbgemm's dynamic linear computes it, one scale per tensor: the weights int8 once (−128…127,
    a scale and a zero point for the whole tensor), each pass's inputs 7-bit (0…127, a scale and a zero point for
    all its rows together), their products summed as integers, then scaled back. Written with plain tensor ops
    (torch's quantized tensors, which `torch.ao`'s layer used, are deprecated); it equals that layer up to the last
    float rounding (tests/models/test_kernels.py). Kept to measure why int8-dynamic is refused, never to run a model."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        weight = linear.weight.detach().float()
        scale, zero = per_tensor_params(weight, -128, 127)
        self.register_buffer("weight_int8", per_tensor_codes(weight, scale, zero, -128, 127).to(torch.int8))
        self.register_buffer("weight_scale", scale)
        self.weight_zero = zero
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().float().clone())
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).float()
        scale, zero = per_tensor_params(flat, 0, 127)  # the one scale every row of this pass shares: why it is refused
        centred = (per_tensor_codes(flat, scale, zero, 0, 127) - zero).to(torch.int8)  # −127…127
        # Σ x·(w − zero_w) in int32: the int8 product, less the weights' zero point times each row's sum
        row_sums = centred.sum(1, dtype=torch.int32)[:, None]
        sums = torch._int_mm(centred, self.weight_int8.t()) - self.weight_zero * row_sums
        y = sums.float() * (scale * self.weight_scale)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)


def per_tensor_params(t: torch.Tensor, low_code: int, high_code: int) -> tuple[torch.Tensor, int]:
    """(scale as float32, zero point) mapping t's range, widened to hold 0, onto codes low_code…high_code, as torch's
    quantization chooses them (quant_utils::ChooseQuantizationParams): the zero point from whichever end rounds less."""
    low, high = min(float(t.min()), 0.0), max(float(t.max()), 0.0)
    scale = (high - low) / (high_code - low_code)
    if float(torch.tensor(scale, dtype=torch.float32)) == 0.0:
        scale = 0.1  # an all-zero tensor
    from_low, from_high = low_code - low / scale, high_code - high / scale
    zero = from_low if abs(low_code) - abs(low / scale) < abs(high_code) - abs(high / scale) else from_high
    return torch.tensor(scale, dtype=torch.float32), int(min(max(round(zero), low_code), high_code))


def per_tensor_codes(t: torch.Tensor, scale: torch.Tensor, zero: int, low_code: int, high_code: int) -> torch.Tensor:
    """t's codes: zero + t / scale rounded half to even, as one fused multiply-add (computed in float64, rounded once
    to float32, as torch's vectorised kernel does), clamped to the code range."""
    fused = (t.double() * (1 / scale).double() + zero).float()
    return torch.round(fused).clamp(low_code, high_code)


# --- 4-bit codes in groups of GROUP -------------------------------------------------------------------------------

class Int4Groups(PackedLayer):
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

    @classmethod
    def joined(cls, parts: list[nn.Module]) -> "Int4Groups | None":
        """One layer giving the outputs of `parts` side by side (the same bits: each output is its own row's sum), so a
        layer's q/k/v or gate/up is one kernel call, not two or three; None where they cannot be joined: not all 4-bit
        layers of one input and dtype, or a part whose rows are not whole blocks of torch's packing (PACK_ROWS)."""
        if not all(isinstance(p, Int4Groups) and p.out_features % PACK_ROWS == 0 for p in parts):
            return None
        first = parts[0]
        if any((p.in_features, p.out_dtype, p.scales_and_zeros.dtype, p.bias is None)
               != (first.in_features, first.out_dtype, first.scales_and_zeros.dtype, first.bias is None)
               for p in parts):
            return None
        joined = cls.__new__(cls)
        PackedLayer.__init__(joined)
        joined.register_buffer("packed", torch.cat([p.packed for p in parts]))
        joined.register_buffer("scales_and_zeros", torch.cat([p.scales_and_zeros for p in parts], 1))
        joined.register_buffer("bias", None if first.bias is None else torch.cat([p.bias for p in parts]))
        joined.in_features, joined.out_features = first.in_features, sum(p.out_features for p in parts)
        joined.out_dtype = first.out_dtype
        return joined

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


class Int4Linear(Int4Groups):
    """y = x W^T + b with W stored as 4-bit codes: each group of 32 weights along a row keeps its minimum and a step
    (max − min) / 15, and a weight is code · step + minimum (asymmetric, round to nearest), in Int4Groups' layout for
    torch's CPU kernel, which computes with the dequantized weights in one pass."""

    GROUP = GROUP

    @classmethod
    def fits(cls, linear: nn.Linear) -> bool:
        return Int4Groups.fits(linear.in_features, linear.out_features)

    def __init__(self, linear: nn.Linear):
        super().__init__(*rounded(linear.weight), linear.bias, dtype=linear.weight.dtype)


class Int4RescoredHead(Int8Linear):
    """An output layer read at 4 bits, its largest logits read again at 8: every logit of a row from 4-bit groups
    (Int4Linear), then the TOP largest of them computed again from its int8 rows (kept as Int8Linear keeps them, `rows`
    shared as there).

    Why: the packaged draft's output layer (151,936 × 896) is a third of its step at int8, and an int4 kernel reads it
    in a third of the time, but 4-bit rounding of the logits themselves cost the draft 4 % of its greedy agreement with
    the target (docs/engine.md, "The draft's output layer"). The top token, and nearly all of q's mass, comes from the
    largest logits: read again at 8 bits they decide as the int8 layer's do, while the rest of the row keeps its 4-bit
    values. Any q is exact for the output (quant.py), so this only moves speed and agreement."""

    TOP = 64  # logits of each row computed again at 8 bits: far more than a draft's top token is ever among

    def __init__(self, linear: nn.Linear, rows: Int8Embedding | None = None):
        super().__init__(linear, rows)
        self.coarse = Int4Linear(linear)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(self.scale.dtype)
        logits = self.coarse(flat)
        top = largest(logits, min(self.TOP, self.out_features))  # (rows, TOP)
        fine = torch.bmm(self.weight_int8[top].to(flat.dtype), flat.unsqueeze(-1)).squeeze(-1) * self.scale[top]
        if self.bias is not None:
            fine = fine + self.bias[top]
        return logits.scatter(-1, top, fine.to(logits.dtype)).reshape(*x.shape[:-1], self.out_features)


CHUNK = 128  # logits a chunk in `largest`: the vocabulary's 151,936 in 1,187 chunks, the candidates 64 · 128 = 8,192


def largest(values: torch.Tensor, k: int, ordered: bool = False) -> torch.Tensor:
    """The ids of the k largest values of each row ((rows, V) -> (rows, k); (V,) -> (k,)), in no order, or largest
    first where `ordered`: the k chunks of CHUNK values with the largest maxima hold them all (a chunk outside them has
    its largest value below k others), so the k are chosen among those chunks' k · CHUNK values. Where values tie at
    the k-th it may keep other ids of that value than torch.topk would: any k largest.

    Why: torch's topk over a real row of the vocabulary took 1.1–1.6 ms on the AMD EPYC (0.25 ms over random values:
    its selection slows on the many ties of real rows), this 0.11 ms; a draft step makes one (the rescored head) and
    a recorded round two more (the cards' candidates): about 3 % of a story run's time (2026-12-06)."""
    if values.dim() == 1:
        return largest(values[None], k, ordered)[0]
    rows, n = values.shape
    if k * CHUNK >= n:
        return values.topk(k, dim=-1, sorted=ordered).indices
    pad = (-n) % CHUNK
    chunks = (nn.functional.pad(values, (0, pad), value=float("-inf")) if pad else values).view(rows, -1, CHUNK)
    best = chunks.amax(-1).topk(k, dim=-1).indices  # (rows, k): the chunks
    inside = chunks.gather(1, best[..., None].expand(-1, -1, CHUNK)).reshape(rows, -1).topk(k, dim=-1, sorted=ordered)
    return best.gather(1, inside.indices // CHUNK) * CHUNK + inside.indices % CHUNK


class Int4Embedding(PackedLayer):
    """A token's row of a table kept as a GGUF file's 4-bit codes (two a byte), steps and minimums: the row computed
    as code · step + minimum, float32, exactly the file's values; a quarter of a float16 table's memory (the packaged
    target's: 0.18 GB, not 0.47)."""

    def __init__(self, q4k):
        super().__init__()
        self.register_buffer("codes", pack(q4k.codes))
        self.register_buffer("step", q4k.step.float())
        self.register_buffer("minimum", q4k.minimum.float())

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        flat = ids.reshape(-1)
        rows = weights_of(unpack(self.codes[flat]), self.step[flat], self.minimum[flat])
        return rows.reshape(*ids.shape, -1)


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


def pack(codes: torch.Tensor) -> torch.Tensor:
    """4-bit codes two a byte (the even column in the low nibble): half the memory and disk."""
    return codes[:, 0::2] | (codes[:, 1::2] << 4)


def unpack(packed: torch.Tensor) -> torch.Tensor:
    return torch.stack([packed & 0x0F, packed >> 4], -1).reshape(packed.shape[0], -1)

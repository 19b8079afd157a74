"""The paths a pair's linear layers (nine tenths of a pass) can run on a CPU: what each path is, where it can run,
and how a model, or a drafter's own layers, is put on one. Which path is exact here, which is fastest, and which a
pair loads on is measured in kernel_choice.py.

    apply_path(model, choice.path)        # its linear layers on that path, in place
    put_linears_on(medusa_blocks, path)   # a drafter's own layers on the pair's path

The paths (`PATHS`):
- float32: torch's own float32 kernels (MKL, oneDNN): the reference, what transformers computes.
- bfloat16: weights and activations in bfloat16, fast where the CPU computes it natively (avx512_bf16 or AMX).
  Whether its rows are independent depends on the CPU and the shapes: on an AVX-512 EPYC a row computed beside
  others rounds differently (2e-4 of its size); on a Xeon with AMX rows together equal rows alone up to 17 rows but
  not at 33 (a full draft tree's pass) or on the down projection's shape. So it is measured, like every path.
- float16-fbgemm: weights stored in float16 and multiplied by fbgemm's kernel (float16 → float32 inside, float32
  accumulation), activations float32: half the bytes of float32 to read a step, on any x86 CPU with AVX2; and
  attention through one grouped matmul for any number of rows (attention.py), not transformers' SDPA.
- gguf-int4: the packaged target at its own bits. Every layer its GGUF file stores as Q4_K is computed from those
  4-bit codes, steps and minimums (gguf_blocks.py) by torch's int4 kernel (int4.py), a quarter of float16's bytes
  to read a step; its inputs are rounded to bfloat16 for that kernel (its fast path; its outputs come back float32).
  The layers the file stores otherwise (Q6_K: the output layer, half of attn_v and ffn_down), and every layer of a
  model with no blocks (the draft, a hub model), run as float16-fbgemm does. Offered only where the CPU computes
  bfloat16 natively and the model was loaded from a GGUF file.
- int8-dynamic: int8 weights and activations through fbgemm, the activations scaled by one number per tensor: a
  row's result then depends on the rows computed with it, so a verify pass over K + 1 tokens would not compute what
  K + 1 one-token steps compute. Measured like the others, it is refused everywhere with the difference.

The weights of a target are never quantized to integers here: a path changes how the numbers are multiplied, not
which model runs (float16 storage rounds each weight to 11 significant bits; gguf-int4 reads the integers the
packaged file already holds, its steps and minimums rounded to bfloat16: int4.moved_by).
"""

from __future__ import annotations

import platform

import torch
from torch import nn

from specviz.models.attention import use_grouped_attention
from specviz.models.fingerprint import fingerprint
from specviz.models.gguf_blocks import EMBEDDING, pack, unpack
from specviz.models.int4 import Int4Groups, rounded, weights_of
from specviz.models.machine import native_bf16

FLOAT32, BFLOAT16, FP16_FBGEMM, INT8_DYNAMIC = "float32", "bfloat16", "float16-fbgemm", "int8-dynamic"
GGUF_INT4 = "gguf-int4"
PATHS = (FLOAT32, BFLOAT16, FP16_FBGEMM, GGUF_INT4, INT8_DYNAMIC)  # what --kernels names (with "auto")
DTYPE_OF = {FLOAT32: "float32", BFLOAT16: "bfloat16", FP16_FBGEMM: "float32", GGUF_INT4: "float32",
            INT8_DYNAMIC: "float32"}  # the activations between layers
PACKED_FP16 = (FP16_FBGEMM, GGUF_INT4)  # the paths whose layers without blocks are float16 through fbgemm
STACK = 6  # layers of the target's MLP shape in a stack (stack_of): more than a CPU's caches hold, as a pass reads


class Fp16Linear(nn.Module):
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


class Int8DynamicLinear(nn.Module):
    """fbgemm's dynamic int8 linear (activations quantized with one scale per tensor): kept to measure why it is
    refused, never to run a model."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.inner = torch.ao.nn.quantized.dynamic.Linear(linear.in_features, linear.out_features, dtype=torch.qint8)
        self.inner.set_weight_bias(torch.quantize_per_tensor_dynamic(linear.weight.detach(), torch.qint8, False),
                                   None if linear.bias is None else linear.bias.detach())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


def available(path: str, device: str = "cpu") -> str | None:
    """Why `path` cannot run here, or None where it can."""
    if device != "cpu":
        return None if path == FLOAT32 else f"{path} is a CPU path; on {device} the dtype alone chooses the kernels"
    if path in (FP16_FBGEMM, GGUF_INT4, INT8_DYNAMIC) and "fbgemm" not in torch.backends.quantized.supported_engines:
        return f"this torch build has no fbgemm kernels ({platform.machine()}), which {path} needs"
    if path in (BFLOAT16, GGUF_INT4) and not native_bf16():
        return (f"this CPU has no native bfloat16 (no avx512_bf16 or AMX): {path} would compute it emulated, many "
                f"times slower")
    return None


def apply_path(model: nn.Module, path: str, keep_output_rows: bool = False, blocks: dict | None = None) -> nn.Module:
    """Put the model's linear layers on `path`, in place (a dtype's own kernels: the dtype it was loaded in decides, so
    nothing changes); its fingerprint is kept from before, as its weights were loaded (engine/trained.py).
    `keep_output_rows`: the output layer's weights stay readable row by row (`lm_head.weight`, float16), as training
    heads reads them; a run never does, and the copy costs 0.47 GB for the packaged target. `blocks`: on gguf-int4,
    the model's Q4_K tensors by module name (gguf_blocks.q4k_blocks); a layer without one runs as float16-fbgemm."""
    model.specviz_fingerprint = fingerprint(model)  # read from the parameters that the path replaces
    if path in PACKED_FP16:
        blocks = (blocks or {}) if path == GGUF_INT4 else {}
        _replace_linears(model, lambda linear, name: _from_blocks(blocks[name], linear) if name in blocks else
                         Fp16Linear(linear, keep_weight=keep_output_rows and name == "lm_head"))
        _tie_embedding(model, blocks)
        _rest_in_float32(model)
        use_grouped_attention(model)  # one attention code for 1 and K + 1 rows (attention.py)
        model.specviz_path = GGUF_INT4 if blocks else FP16_FBGEMM
    return model


def layers_said(model: nn.Module) -> str:
    """On gguf-int4, which layers compute from the file's 4-bit blocks and which do not, in words ('' elsewhere): a
    tensor type no 4-bit kernel reads is run another exact way and said so, never silently."""
    if path_of(model) != GGUF_INT4:
        return ""
    four = sum(isinstance(m, Int4Groups) for m in model.modules())
    other = sum(isinstance(m, Fp16Linear) for m in model.modules())
    embedding = isinstance(model.get_input_embeddings(), Int4Embedding)
    return (f"{four} linear layers computed from the GGUF file's Q4_K blocks by the int4 kernel"
            f"{', the embedding read from its 4-bit rows' if embedding else ''}; {other} the file stores otherwise "
            f"(Q6_K: no 6-bit kernel here) run as float16-fbgemm")


def _from_blocks(q4k, linear: nn.Linear) -> Int4Groups:
    if tuple(q4k.codes.shape) != (linear.out_features, linear.in_features):
        raise ValueError(f"the GGUF's 4-bit blocks are {tuple(q4k.codes.shape)}, the layer {linear.out_features} × "
                         f"{linear.in_features}: they are not this model's")
    return _int4_layer(q4k.codes, q4k.step, q4k.minimum, linear.bias)


def _int4_layer(codes, step, minimum, bias) -> Int4Groups:
    """A gguf-int4 layer: bfloat16 into torch's int4 kernel (its fast path), float32 out (the path's activations)."""
    return Int4Groups(codes, step, minimum, bias, torch.bfloat16, out_dtype=torch.float32)


def _rest_in_float32(model: nn.Module) -> None:
    """Every weight but the float16 tables in float32 (the norms, a bias, the rotary frequencies): a model loaded in
    float16 to save memory computes its activations in float32 on this path (its config says so too: transformers
    builds attention masks in the config's dtype)."""
    if getattr(model, "config", None) is not None:
        model.config.dtype = torch.float32
    for module in model.modules():
        if isinstance(module, (Fp16Linear, Fp16Embedding, Int4Groups, Int4Embedding)):
            continue
        for name, tensor in [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]:
            if tensor is not None and tensor.is_floating_point() and tensor.dtype != torch.float32:
                tensor.data = tensor.data.float()


def activations(model: nn.Module) -> tuple[torch.device, torch.dtype]:
    """(device, dtype) of the hidden states a model computes: its final norm's (on every path the norms keep the
    activations' dtype, while the output layer's weights may be stored in float16)."""
    norm = getattr(getattr(model, "model", None), "norm", None)
    weight = getattr(norm, "weight", None)
    if weight is None:
        weight = next(p for p in model.parameters() if p.is_floating_point())
    return weight.device, weight.dtype


def path_of(model: nn.Module) -> str:
    """The kernel path a loaded model's linear layers run on: FP16_FBGEMM or GGUF_INT4 where apply_path packed them,
    else '' (its dtype's own kernels)."""
    return getattr(model, "specviz_path", "")


def put_linears_on(module: nn.Module, path: str) -> nn.Module:
    """A drafter's own layers (Medusa blocks, the EAGLE layer) on the pair's path, in place (for a dtype's own
    kernels nothing changes): a draft may be computed any way, verification uses the q it drew from."""
    if path in PACKED_FP16:
        if isinstance(module, nn.Linear):  # a layer alone: it is its own only linear layer
            raise ValueError("put_linears_on replaces the linear layers inside a module; wrap a lone one first")
        _replace_linears(module, lambda linear, name: Fp16Linear(linear))
    return module


def _replace_linears(model: nn.Module, make) -> None:
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, child_name, make(child, f"{name}.{child_name}".lstrip(".")))


class Int4Embedding(nn.Module):
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


def _tie_embedding(model: nn.Module, blocks: dict | None = None) -> None:
    """The input embedding in float16 too: the output layer's kept rows where the model ties them (Qwen2.5 does: one
    151,936 × 1536 table, not two), else its own table rounded the same way."""
    if blocks and EMBEDDING in blocks:  # gguf-int4: the file's own 4-bit rows
        model.set_input_embeddings(Int4Embedding(blocks[EMBEDDING]))
        return
    embed = model.get_input_embeddings()
    if not isinstance(embed, nn.Embedding):  # a table of its own already (an int8 draft's: quant.Int8Embedding)
        return
    tied = getattr(model.config, "tie_word_embeddings", False) and getattr(model.lm_head, "weight", None) is not None
    table = model.lm_head.weight if tied else embed.weight.detach().to(torch.float16)
    model.set_input_embeddings(Fp16Embedding(table))


class Fp16Embedding(nn.Module):
    """A token's row of a float16 table, as float32 (the activations' dtype on the float16-fbgemm path)."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.register_buffer("weight", table)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return nn.functional.embedding(ids, self.weight).float()


# --- a stand-in: a stack of one path's layers ---------------------------------------------------------------------

def stack_of(path: str, hidden: int, inner: int, layers: int = STACK, seed: int = 0) -> list[nn.Module]:
    """`layers` random linear layers hidden → inner on `path` (the timed stand-in for a model's MLPs)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(layers):
        linear = nn.Linear(hidden, inner, bias=False)
        with torch.no_grad():
            linear.weight.copy_(torch.randn(inner, hidden, generator=gen) / hidden ** 0.5)
        out.append(Fp16Linear(linear) if path == FP16_FBGEMM else Int8DynamicLinear(linear) if path == INT8_DYNAMIC
                   else linear.to(torch.bfloat16) if path == BFLOAT16 else
                   _int4_layer(*rounded(linear.weight), None) if path == GGUF_INT4
                   else linear)
    return out

"""The paths a pair's linear layers (nine tenths of a pass) can run on a CPU, as one table: a row (`KernelPath`) per
path says what the CPU needs, which layer computes it, how a model's weights are loaded and packed for it, why its rows
could depend on the rows beside them, and what of a GGUF file it reads. The loader (pairs.py) and the choice
(kernel_choice.py: which path is exact here, which is fastest, which a pair loads on) read the row, never the path's
name; adding a path is adding a row (the model: llama.cpp's CPU type-traits table, one row per quant type naming
what it needs and which functions pack and multiply it). The layers themselves are layers.py.

    apply_path(model, choice.path)        # its linear layers on that path, in place
    put_linears_on(medusa_blocks, path)   # a drafter's own layers on the pair's path

The paths (`TABLE`; their names `PATHS`):
- float32: torch's own float32 kernels (MKL, oneDNN): the reference, what transformers computes.
- bfloat16: weights and activations in bfloat16, fast where the CPU computes it natively (avx512_bf16 or AMX).
  Whether its rows are independent depends on the CPU and the shapes: on an AVX-512 EPYC a row computed beside
  others rounds differently (2e-4 of its size); on a Xeon with AMX rows together equal rows alone up to 17 rows but
  not at 33 (a full draft tree's pass) or on the down projection's shape. So it is measured, like every path.
- float16-fbgemm: weights stored in float16 and multiplied by fbgemm's kernel (float16 → float32 inside, float32
  accumulation), activations float32: half the bytes of float32 to read a step, on any x86 CPU with AVX2; and
  attention through one grouped matmul for any number of rows (attention.py), not transformers' SDPA.
- gguf-int4: the packaged target at its own bits. Every layer its GGUF file stores as Q4_K is computed from those
  4-bit codes, steps and minimums (gguf_blocks.py) by torch's int4 kernel (layers.Int4Groups), a quarter of
  float16's bytes to read a step; its inputs are rounded to bfloat16 for that kernel (its fast path; its outputs
  come back float32).
  The layers the file stores otherwise (Q6_K: the output layer, half of attn_v and ffn_down), and every layer of a
  model with no blocks (the draft, a hub model), run as float16-fbgemm does. Offered only where the CPU computes
  bfloat16 natively and the model was loaded from a GGUF file.
- gguf-ort: the packaged target at its own bits through onnxruntime's MatMulNBits: every layer its file stores as Q4_K
  or Q6_K (the output layer among them) computed from those blocks (ort_blocks.py, ort_linear.py), a block's q/k/v and
  gate/up one call each, inputs rounded to int8 per block inside the kernel (accuracy_level 4: the level whose rows
  are independent); the embedding as gguf-int4 reads it, the rest as float16-fbgemm. Offered where onnxruntime is
  installed and the model was loaded from a GGUF file, and only when asked for by name (`why_not_auto`).
- int8-dynamic: int8 weights and activations as fbgemm's dynamic int8 computes them (written in plain tensor ops:
  torch's quantized tensors are deprecated), the activations scaled by one number per tensor: a row's result then
  depends on the rows computed with it, so a verify pass over K + 1 tokens would not compute what
  K + 1 one-token steps compute. Measured like the others, it is refused everywhere with the difference.

The weights of a target are never quantized to integers here: a path changes how the numbers are multiplied, not
which model runs (float16 storage rounds each weight to 11 significant bits; gguf-int4 reads the integers the
packaged file already holds, its steps and minimums rounded to bfloat16: layers.moved_by).
"""

from __future__ import annotations

import importlib.util
import platform
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

from specviz.models.attention import use_grouped_attention
from specviz.models.fingerprint import fingerprint
from specviz.models.gguf_blocks import EMBEDDING, q4k_blocks
from specviz.models.layers import (Fp16Embedding, Fp16Linear, Int4Embedding, Int4Groups, Int8DynamicLinear,
                                   PackedLayer, rounded)
from specviz.models.machine import native_bf16
from specviz.models.ort_linear import Member, ort_said, q4_stand_in, read_for_ort
from specviz.settings.bounds import Progress

FLOAT32, BFLOAT16, FP16_FBGEMM, INT8_DYNAMIC = "float32", "bfloat16", "float16-fbgemm", "int8-dynamic"
GGUF_INT4, GGUF_ORT = "gguf-int4", "gguf-ort"


@dataclass(frozen=True)
class Need:
    """Something a path needs of this CPU or torch build: whether it is met here, and what to say where it is not."""

    met: Callable[[], bool]
    lacking: str  # the sentence; "{path}" stands for the path's name


@dataclass(frozen=True)
class FileBlocks:
    """What a path computes from a GGUF file's own blocks, and how: read once from a packaged model's file and kept in
    the cache, a layer made of each block (a layer the file holds no such block for runs as float16-fbgemm)."""

    reads: str  # what it reads, in words
    read: Callable[[str, Progress | None], dict]  # a packaged model's blocks by module name (EMBEDDING: its table's)
    linear: Callable[[Any, nn.Linear], nn.Module]  # a linear layer from its blocks (the layer replaced gives the bias)
    embedding: Callable[[Any], nn.Module]  # the input embedding from its blocks
    layers_said: Callable[[nn.Module], str]  # which layers of a model on the path compute from them, in words


@dataclass(frozen=True)
class KernelPath:
    """A row of the table: one path, everything the loader and the choice need to know of it."""

    name: str  # what --kernels names
    activations: str  # the hidden states' dtype between layers: a Choice's dtype, and the inputs its rows are
    #                   checked and timed with
    weights: str  # the linear layers' weights as its kernels multiply them, in words (the model line says it)
    needs: tuple[Need, ...]  # what this CPU and torch build must offer; a path lacking one is not offered here
    layer: Callable[[nn.Linear], nn.Module]  # a float32 layer as this path computes it: the stand-in whose rows are
    #                                          checked against their batch-mates and whose stack is timed
    why_not: str  # why its rows could depend on the rows beside them: the refusal's reason where they measure so
    packs_fp16: bool = False  # a model put on it stores its layers in float16 for fbgemm (those its file holds no
    #                           blocks for), the rest of it float32; its weights are loaded in float16
    file: FileBlocks | None = None  # what it reads of a GGUF file: offered only for a model loaded from one
    why_not_auto: str = ""  # where set, the path runs only when asked for by name (--kernels), never chosen by auto:
    #                          why, in the words the model line gives

    @property
    def auto(self) -> bool:
        """Whether the automatic choice may take it (kernel_choice times it beside the others)."""
        return not self.why_not_auto

    @property
    def load_dtype(self) -> str:
        """The dtype to load a model's weights in before they are put on this path: float16 where it packs them so (the
        pair never passes through float32 in memory: twice the size), else its activations'."""
        return "float16" if self.packs_fp16 else self.activations

    @property
    def inputs(self) -> torch.dtype:
        """The dtype of the rows its stand-in layers are checked and timed with: its activations'."""
        return getattr(torch, self.activations)

    def lacking(self) -> str | None:
        """Why this path cannot run on this CPU, or None where it can."""
        for need in self.needs:
            if not need.met():
                return need.lacking.format(path=self.name)
        return None


# --- the table ------------------------------------------------------------------------------------------------------

FBGEMM = Need(lambda: "fbgemm" in torch.backends.quantized.supported_engines,
              f"this torch build has no fbgemm kernels ({platform.machine()}), which {{path}} needs")
NATIVE_BF16 = Need(lambda: native_bf16(), "this CPU has no native bfloat16 (no avx512_bf16 or AMX): {path} would "
                                          "compute it emulated, many times slower")


def _int4_layer(codes, step, minimum, bias) -> Int4Groups:
    """A gguf-int4 layer: bfloat16 into torch's int4 kernel (its fast path), float32 out (the path's activations)."""
    return Int4Groups(codes, step, minimum, bias, torch.bfloat16, out_dtype=torch.float32)


def _from_q4k(q4k, linear: nn.Linear) -> Int4Groups:
    if tuple(q4k.codes.shape) != (linear.out_features, linear.in_features):
        raise ValueError(f"the GGUF's 4-bit blocks are {tuple(q4k.codes.shape)}, the layer {linear.out_features} × "
                         f"{linear.in_features}: they are not this model's")
    return _int4_layer(q4k.codes, q4k.step, q4k.minimum, linear.bias)


def _q4k_layers_said(model: nn.Module) -> str:
    """Which layers compute from the file's 4-bit blocks and which do not: a tensor type no 4-bit kernel reads is run
    another exact way and said so, never silently."""
    four = sum(isinstance(m, Int4Groups) for m in model.modules())
    other = sum(isinstance(m, Fp16Linear) for m in model.modules())
    embedding = isinstance(model.get_input_embeddings(), Int4Embedding)
    return (f"{four} linear layers computed from the GGUF file's Q4_K blocks by the int4 kernel"
            f"{', the embedding read from its 4-bit rows' if embedding else ''}; {other} the file stores otherwise "
            f"(Q6_K: no 6-bit kernel here) run as float16-fbgemm")


def _as_loaded(linear: nn.Linear) -> nn.Module:
    return linear


def _in_bfloat16(linear: nn.Linear) -> nn.Module:
    return linear.to(torch.bfloat16)


def _rounded_to_int4(linear: nn.Linear) -> nn.Module:
    """A layer's weights rounded to 4-bit groups, as a GGUF file's Q4_K blocks would hold them."""
    return _int4_layer(*rounded(linear.weight), None)


ONNXRUNTIME = Need(lambda: importlib.util.find_spec("onnxruntime") is not None,
                   "onnxruntime is not installed (pip install -r requirements.txt), which {path} needs")


def _rounded_to_ort(linear: nn.Linear) -> nn.Module:
    """A layer's weights rounded to 4-bit groups, on onnxruntime as the file's Q4_K layers are (ort_linear.py)."""
    return q4_stand_in(*rounded(linear.weight))


def _ort_layers_said(model: nn.Module) -> str:
    """Which layers onnxruntime computes from the file's blocks, and which run otherwise."""
    other = sum(isinstance(m, Fp16Linear) for m in model.modules())
    embedding = isinstance(model.get_input_embeddings(), Int4Embedding)
    return (ort_said(model) + (", the embedding read from its 4-bit rows" if embedding else "")
            + (f"; {other} without blocks run as float16-fbgemm" if other else ""))


SUMMED_ANOTHER_WAY = "its kernel sums a row in another order beside other rows"
TABLE = (
    KernelPath(FLOAT32, activations="float32", weights="float32", needs=(), layer=_as_loaded,
               why_not="its small-matrix kernels sum a row in another order beside other rows"),
    KernelPath(BFLOAT16, activations="bfloat16", weights="bfloat16", needs=(NATIVE_BF16,), layer=_in_bfloat16,
               why_not="it rounds a row's sums to bfloat16 differently beside other rows"),
    KernelPath(FP16_FBGEMM, activations="float32", weights="float16", needs=(FBGEMM,), layer=Fp16Linear,
               why_not=SUMMED_ANOTHER_WAY, packs_fp16=True),
    KernelPath(GGUF_INT4, activations="float32", weights="4-bit where the GGUF file holds Q4_K, else float16",
               needs=(FBGEMM, NATIVE_BF16), layer=_rounded_to_int4, why_not=SUMMED_ANOTHER_WAY, packs_fp16=True,
               file=FileBlocks(reads="a GGUF file's 4-bit blocks", read=q4k_blocks, linear=_from_q4k,
                               embedding=Int4Embedding, layers_said=_q4k_layers_said)),
    KernelPath(GGUF_ORT, activations="float32",
               weights="4- and 6-bit where the GGUF file holds Q4_K or Q6_K, else float16",
               needs=(ONNXRUNTIME, FBGEMM), layer=_rounded_to_ort, why_not=SUMMED_ANOTHER_WAY, packs_fp16=True,
               file=FileBlocks(reads="a GGUF file's blocks", read=read_for_ort, linear=Member.layer,
                               embedding=Int4Embedding, layers_said=_ort_layers_said),
               why_not_auto="it is never chosen automatically: on an AMD EPYC (2 cores, quiet) its whole target step "
                            "took 104 ms against gguf-int4's 81 at t(1) (medians of 7 interleaved rounds, "
                            "tools/measure_ort_path.py), and its int8 input rounding turns "
                            "attention's last-bit differences into occasional code steps, so a batch's greedy "
                            "output can differ from one sequence alone (2026-12-06; docs/engine.md)"),
    KernelPath(INT8_DYNAMIC, activations="float32", weights="int8", needs=(), layer=Int8DynamicLinear,
               why_not="its activations are scaled by one number per tensor"),
)
KERNELS = {row.name: row for row in TABLE}


def weights_said(path: str) -> str:
    """The weights' type on the path named `path`, in words ('' for a name this table lacks: a trace from elsewhere)."""
    row = KERNELS.get(path)
    return row.weights if row else ""
PATHS = tuple(KERNELS)  # what --kernels names (with "auto")
PACKS_FP16 = tuple(row.name for row in TABLE if row.packs_fp16)  # the paths that store a model's layers in float16
#            for fbgemm: every one on float16-fbgemm, on gguf-int4 those the file holds no 4-bit blocks for


def available(path: str, device: str = "cpu") -> str | None:
    """Why `path` cannot run here, or None where it can."""
    if device != "cpu":
        return None if path == FLOAT32 else f"{path} is a CPU path; on {device} the dtype alone chooses the kernels"
    return KERNELS[path].lacking()


# --- a model on a path --------------------------------------------------------------------------------------------

def apply_path(model: nn.Module, path: str, keep_output_rows: bool = False, blocks: dict | None = None) -> nn.Module:
    """Put the model's linear layers on `path`, in place (a dtype's own kernels: the dtype it was loaded in decides, so
    nothing changes); its fingerprint is kept from before, as its weights were loaded (engine/trained.py).
    `keep_output_rows`: the output layer's weights stay readable row by row (`lm_head.weight`, float16), as training
    heads reads them; a run never does, and the copy costs 0.47 GB for the packaged target. `blocks`: on a path that
    reads a GGUF file's blocks, the model's by module name (its FileBlocks.read); a layer without one, and every layer
    where none are given, runs as float16-fbgemm."""
    model.specviz_fingerprint = fingerprint(model)  # read from the parameters that the path replaces
    row = KERNELS.get(path)  # None: a dtype's own kernels on a GPU ("float16")
    if row is not None and row.packs_fp16:
        file = row.file if blocks else None

        def packed(linear: nn.Linear, name: str) -> nn.Module:
            if file is not None and name in blocks and not (keep_output_rows and name == "lm_head"):
                return file.linear(blocks[name], linear)
            return Fp16Linear(linear, keep_weight=keep_output_rows and name == "lm_head")

        _replace_linears(model, packed)
        _tie_embedding(model, file.embedding(blocks[EMBEDDING]) if file and EMBEDDING in blocks else None)
        _rest_in_float32(model)
        use_grouped_attention(model)  # one attention code for 1 and K + 1 rows (attention.py)
        model.specviz_path = path if file else FP16_FBGEMM
    return model


def _rest_in_float32(model: nn.Module) -> None:
    """Every weight but the packed layers' (layers.PackedLayer: the float16 tables, the 4-bit groups) in float32 (the
    norms, a bias, the rotary frequencies): a model loaded in float16 to save memory computes its activations in
    float32 on this path (its config says so too: transformers builds attention masks in the config's dtype)."""
    if getattr(model, "config", None) is not None:
        model.config.dtype = torch.float32
    for module in model.modules():
        if isinstance(module, PackedLayer):
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
    """The kernel path a loaded model's linear layers run on: a path of PACKS_FP16 where apply_path packed them
    (gguf-int4 only where it computes from the file's blocks), else '' (its dtype's own kernels)."""
    return getattr(model, "specviz_path", "")


def put_linears_on(module: nn.Module, path: str) -> nn.Module:
    """A drafter's own layers (Medusa blocks, the EAGLE layer) on the pair's path, in place (for a dtype's own
    kernels nothing changes): a draft may be computed any way, verification uses the q it drew from."""
    if path in PACKS_FP16:
        if isinstance(module, nn.Linear):  # a layer alone: it is its own only linear layer
            raise ValueError("put_linears_on replaces the linear layers inside a module; wrap a lone one first")
        _replace_linears(module, lambda linear, name: Fp16Linear(linear))
    return module


def _replace_linears(model: nn.Module, make) -> None:
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, child_name, make(child, f"{name}.{child_name}".lstrip(".")))


def _tie_embedding(model: nn.Module, from_file: nn.Module | None) -> None:
    """The input embedding in float16 too: the output layer's kept rows where the model ties them (Qwen2.5 does: one
    151,936 × 1536 table, not two), else its own table rounded the same way; `from_file`, where the path read it
    from the file's blocks (gguf-int4: its 4-bit rows), instead."""
    if from_file is not None:
        model.set_input_embeddings(from_file)
        return
    embed = model.get_input_embeddings()
    if not isinstance(embed, nn.Embedding):  # a table of its own already (an int8 draft's: layers.Int8Embedding)
        return
    tied = getattr(model.config, "tie_word_embeddings", False) and getattr(model.lm_head, "weight", None) is not None
    table = model.lm_head.weight if tied else embed.weight.detach().to(torch.float16)
    model.set_input_embeddings(Fp16Embedding(table))

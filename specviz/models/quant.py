"""A lighter draft: its linear layers with int8 weights (one scale per output row) or int4 weights (a scale and a
zero per group of 32 inputs), and its input embedding with int8 rows, on CPU (the layers themselves: layers.py):
which weights a draft runs with, and which this CPU runs fastest.

Why only the draft, and why this is still exact: speculative decoding is lossless for ANY draft distribution
q, as long as verification uses the q the draft really sampled from, which the engine always does. A
quantized draft is simply another draft model; the target, whose distribution the output follows, keeps
its full weights. On a CPU a draft step is bound by reading its weights from memory, most of them in the
linear layers, so fewer bits per weight make a step cheaper while the distribution moves a little (the
measured step times and acceptance are in docs/engine.md).

The embedded draft is itself a dequantized GGUF (~6 bits per weight), so 8 bits per weight add little error and
4 bits some; `--draft-weights auto` takes whichever this CPU runs fastest (`fastest_weights`).
"""

from __future__ import annotations

import torch
from torch import nn

from specviz.models.attention import use_grouped_attention
from specviz.models.kernels import FLOAT32, PACKS_FP16
from specviz.models.layers import Fp16Linear, Int4Linear, Int4RescoredHead, Int8Embedding, Int8Linear
from specviz.models.machine import native_bf16
from specviz.models.timer import median_s
from specviz.settings.bounds import DRAFT_WEIGHTS

FULL, INT8, INT4 = "full", "int8", "int4"  # the weights a draft can run with (bounds.DRAFT_WEIGHTS adds "auto")
PACKED = {INT8: Int8Linear, INT4: Int4Linear}  # the layers of each (layers.py)


def pick_weights(draft_weights: str, device: str, dtype: torch.dtype = torch.float32, path: str = FLOAT32) -> str:
    """The weights the draft runs with: FULL (on the pair's kernel path), INT8 or INT4. "auto": on CPU, whichever
    this CPU runs a draft fastest (fastest_weights), full weights elsewhere (int8 and int4 are CPU kernels here)."""
    if draft_weights not in DRAFT_WEIGHTS:
        raise ValueError(f"draft weights must be one of {', '.join(DRAFT_WEIGHTS)}, got {draft_weights!r}")
    if draft_weights != "auto":
        return draft_weights
    return fastest_weights(dtype, path=path) if device == "cpu" else FULL


def packed_dtype(dtype: torch.dtype, path: str = FLOAT32) -> torch.dtype:
    """The activations an int8 or int4 draft computes in: bfloat16 beside a path that packs float16 for fbgemm
    (kernels.PACKS_FP16: float16-fbgemm, gguf-int4) on a CPU that computes bfloat16 natively, the pair's own dtype
    elsewhere. Why the draft may leave the target's dtype: the output
    follows the target whatever q the draft draws from (this module's docstring), and these kernels are fast in
    bfloat16 only (on an avx512_bf16 EPYC, 8 draft-sized MLP layers for one row: int4 1.6 ms in bfloat16 and
    32 ms in float32, against 2.8 ms for the float16-fbgemm full weights; 2026-12-03)."""
    return torch.bfloat16 if path in PACKS_FP16 and native_bf16() else dtype


_FASTEST: dict[tuple, str] = {}  # measured once per process, dtype and path
_STEPS_PER_PROMPT = 48  # a run's draft steps for each prompt the draft encodes (a 48-token answer, about K per round)


def fastest_weights(dtype: torch.dtype, shape: tuple[int, int] = (896, 4864), layers: int = 8,
                    path: str = FLOAT32) -> str:
    """Time a stack of draft-sized linear layers (Qwen2.5-0.5B's MLP) with each kind of weights, for one row (a
    decoding step) and for 32 (a prompt), and return the kind whose typical run costs least: 48 steps and one
    prompt. The stack is larger than a CPU's caches (8 layers: 70 MB in bfloat16), so it is timed reading from
    memory as a draft's step does; one layer timed alone stays in cache and misleads. It runs once per process.

    Why both row counts: an int8 or int4 kernel that wins a step several times over can lose a prompt's many rows.
    A kind no faster than the full weights at one row is not timed on 32: it cannot win, and where its kernel is
    slow (an AVX2-only CPU's int8 and int4) that timing alone would take seconds. The per-layer times on both
    CPUs, and how long this takes, are dated in docs/engine.md ("Which one auto takes")."""
    if (dtype, path) not in _FASTEST:
        with torch.inference_mode():
            one, many = (torch.randn(rows, shape[0], dtype=dtype) for rows in (1, 32))
            stack = [nn.Linear(*shape, bias=False).to(dtype) for _ in range(layers)]
            full = [Fp16Linear(linear) for linear in stack] if path in PACKS_FP16 else stack  # as the draft runs
            full_one = stack_time(full, one)
            costs = {FULL: _STEPS_PER_PROMPT * full_one + stack_time(full, many)}
            small = packed_dtype(dtype, path)  # what a packed draft computes in (bfloat16 where native)
            one, many = one.to(small), many.to(small)
            stack = [linear.to(small) for linear in stack]  # Module.to works in place: the full ones are timed above
            for kind in (INT8, INT4):
                try:
                    packed = [PACKED[kind](linear) for linear in stack]
                    packed_one = stack_time(packed, one, repeats=3)
                    if packed_one < 0.9 * full_one:
                        costs[kind] = _STEPS_PER_PROMPT * packed_one + stack_time(packed, many, repeats=3)
                except RuntimeError:  # a kernel this torch build or CPU lacks (int4 for float16, say)
                    continue
        _FASTEST[dtype, path] = min(costs, key=costs.get)
    return _FASTEST[dtype, path]


def stack_time(stack: list[nn.Module], x: torch.Tensor, repeats: int = 5) -> float:
    """Median seconds of running x through every layer of the stack in turn, after one warm-up pass."""
    return median_s(lambda i: [layer(x) for layer in stack], x.device, repeats)


def weights_name(draft_name: str, weights: str) -> str:
    """The name of a draft as the app, the CLI, traces and the bench show it: "… (int8)", "… (int4)" or as is."""
    return draft_name if weights == FULL else f"{draft_name} ({weights})"


def quantize_weights(model: nn.Module, weights: str = INT8) -> nn.Module:
    """Replace the model's nn.Linear layers by int8 or int4 ones and its input embedding by int8 rows, in place (the
    full-precision weights are freed; a table the LM head shares with the embedding too, as both are replaced).

    int4 treats two kinds of layer otherwise: the LM head, whose rounding moves the logits themselves, is read at 4
    bits and its 64 largest logits a row again at 8 (layers.Int4RescoredHead: on an AMD EPYC an int8 head was a third
    of the packaged draft's step, and 4 bits alone cost 4 % of its greedy agreement; docs/engine.md, "The draft's
    output layer"); and any layer int4's kernel cannot take (Int4Linear.fits) is int8. The embedding is int8 on
    both: a step reads one row of it, so it costs memory, not time; a head that shares the embedding's table reads
    the embedding's int8 rows on both, rather than a copy (the packaged draft's: 0.14 GB). Its attention becomes
    models/attention.py's grouped matmuls: on an AMD EPYC one bfloat16 query over 120 cached positions took 102 µs a
    layer in SDPA and 55 in them (400 positions: 314 and 61)."""
    if weights not in PACKED:
        raise ValueError(f"quantize to {' or '.join(PACKED)}, not {weights!r}")
    if next(model.parameters()).device.type != "cpu":
        raise ValueError(f"{weights} draft weights are implemented for CPU only")
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    embedding = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    rows = Int8Embedding(embedding) if isinstance(embedding, nn.Embedding) else None
    shared = rows if head is not None and embedding is not None and head.weight is embedding.weight else None
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, name, _packed_layer(child, weights, child is head, shared))
    if rows is not None:
        model.set_input_embeddings(rows)
    use_grouped_attention(model)  # a CPU draft: torch's SDPA takes 2–5 times as long for one query in bfloat16
    return model


def _packed_layer(linear: nn.Linear, weights: str, is_head: bool, shared: Int8Embedding | None) -> nn.Module:
    """A linear layer as a draft with `weights` runs it (quantize_weights says why the head and odd shapes differ);
    `shared`: the embedding's int8 rows where the head's table is the embedding's."""
    if weights != INT4 or not Int4Linear.fits(linear):
        return Int8Linear(linear, shared if is_head else None)
    return Int4RescoredHead(linear, shared) if is_head else Int4Linear(linear)

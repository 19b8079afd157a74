"""The packaged target's 4-bit blocks as its GGUF file holds them, for the gguf-int4 path (kernels.py): every Q4_K
tensor's codes, steps and minimums, read once from the joined chunks and kept beside the prepared folder, so a later
start loads them in seconds.

A Q4_K super-block holds 256 weights of a row: a float16 d and dmin, and for each of its 8 sub-blocks of 32 a 6-bit
scale sc and a 6-bit min m; a weight is d·sc·code − dmin·m with a 4-bit code. So each group of 32 has a step d·sc and a
minimum −dmin·m, computed here in float32 exactly (an 11-bit d times a 6-bit integer), which is what layers.Int4Groups
takes; the embedding's rows (token_embd, Q4_K too) are read from the same codes (layers.Int4Embedding). The target's
other tensors (Q6_K: its output layer, half of attn_v and ffn_down; float32 norms and biases) have
no 4-bit kernel and stay as the prepared folder holds them (kernels.py).

    blocks = q4k_blocks("Qwen2.5-Coder-1.5B-Instruct", progress)   # {"model.layers.0.mlp.up_proj": Q4K, …}
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from specviz.models.layers import pack, unpack, weights_of
from specviz.models.packaged import PACKAGED, cache_root, join_chunks
from specviz.settings.bounds import Progress

Q4K_BYTES = 144  # one super-block of 256 weights: d, dmin (2 bytes each), 12 bytes of scales and mins, 128 of codes
SUFFIX = "-q4k-blocks.safetensors"  # the linears and the embedding
NAMES = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
         "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
         "ffn_down": "mlp.down_proj"}  # llama.cpp's names of a block's linear layers → transformers' (Qwen2, Llama)


@dataclass(frozen=True)
class Q4K:
    """One tensor's groups: codes (N, K) uint8 in 0…15, step and minimum (N, K/32) float32."""

    codes: torch.Tensor
    step: torch.Tensor
    minimum: torch.Tensor

    def weights(self) -> torch.Tensor:
        """The weights as the file defines them, float32 (N, K)."""
        return weights_of(self.codes, self.step, self.minimum)


EMBEDDING = "model.embed_tokens"  # the input embedding's module (llama.cpp's token_embd)


def linear_name(gguf_name: str) -> str | None:
    """transformers' module name of a GGUF tensor that is a block's linear weight ('blk.3.ffn_up.weight' →
    'model.layers.3.mlp.up_proj') or the input embedding; None for anything else (norms, biases, the output layer:
    its rows are not the embedding's in this file)."""
    if gguf_name == "token_embd.weight":
        return EMBEDDING
    parts = gguf_name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[3] == "weight" and parts[2] in NAMES:
        return f"model.layers.{parts[1]}.{NAMES[parts[2]]}"
    return None


def decode_q4k(raw: np.ndarray, rows: int, cols: int) -> Q4K:
    """A Q4_K tensor's raw bytes (rows, cols/256 · 144) as codes, steps and minimums."""
    from gguf.quants import Q4_K

    blocks = np.ascontiguousarray(raw).reshape(-1, Q4K_BYTES)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    dmin = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    sc, m = Q4_K.get_scale_min(blocks[:, 4:16])
    step = d * sc.astype(np.float32)  # (blocks, 8)
    minimum = -(dmin * m.astype(np.float32))
    qs = blocks[:, 16:].reshape(-1, 4, 1, 32) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
    codes = (qs & np.uint8(0x0F)).reshape(rows, cols)  # sub-blocks 2j and 2j+1 share 32 bytes: low then high nibbles
    return Q4K(torch.from_numpy(codes), torch.from_numpy(step.reshape(rows, -1)),
               torch.from_numpy(minimum.reshape(rows, -1)))


def read_gguf(path: Path) -> dict[str, Q4K]:
    """Every block linear of a GGUF file stored as Q4_K, and its embedding where so stored, by transformers' module
    name."""
    from gguf import GGUFReader

    out = {}
    for tensor in GGUFReader(path).tensors:
        name = linear_name(tensor.name)
        if name is not None and tensor.tensor_type.name == "Q4_K":
            cols, rows = (int(n) for n in tensor.shape)  # GGUF lists the fastest-varying dimension first
            out[name] = decode_q4k(tensor.data, rows, cols)
    return out


def blocks_file(name: str, suffix: str = SUFFIX) -> Path:
    """Where a packaged model's blocks are kept beside its prepared folder (one file per form: `suffix`)."""
    packaged = PACKAGED[name]
    return cache_root() / f"{name}-{packaged.sha256[:12]}{suffix}"


def q4k_blocks(name: str, progress: Progress | None = None) -> dict[str, Q4K]:
    """The Q4_K tensors of a packaged model, read from its GGUF chunks once (about a minute: they are joined and
    checked again) and kept beside the prepared folder; ValueError where they cannot be read."""
    return _load(keep_from_gguf(name, SUFFIX, _write_q4k, "4-bit blocks", "gguf-int4", progress))


def _write_q4k(gguf: Path, dest: Path) -> None:
    from safetensors.torch import save_file

    tensors = {}
    for module, q in read_gguf(gguf).items():
        tensors |= {f"{module}.codes": pack(q.codes), f"{module}.step": q.step, f"{module}.minimum": q.minimum}
    save_file(tensors, str(dest), metadata={"format": "specviz-q4k"})


def keep_from_gguf(name: str, suffix: str, write, what: str, path_name: str, progress: Progress | None = None) -> Path:
    """The file of one form of a packaged model's blocks (`blocks_file(name, suffix)`), written on first use by
    `write(gguf, dest)` run on the joined file (the chunks are joined into a scratch folder of the cache and checked,
    then removed); ValueError for a model that is not packaged (`path_name`: the kernel path that asked) or where the
    cache has no room."""
    if name not in PACKAGED:
        raise ValueError(f"no GGUF blocks for {name!r}: the {path_name} path reads a packaged model's file "
                         f"({', '.join(PACKAGED)})")
    path = blocks_file(name, suffix)
    if path.exists():
        return path
    work = Path(tempfile.mkdtemp(prefix=f".{name}-blocks-", dir=cache_root()))
    try:
        if progress:
            progress(0.0, f"reading {name}'s {what} from its GGUF (first use only)")
        join_chunks(PACKAGED[name], work / "model.gguf")
        write(work / "model.gguf", work / "blocks.part")
        os.replace(work / "blocks.part", path)  # atomic: a killed build leaves no file a later start trusts
    except OSError as e:
        raise ValueError(f"could not keep {name}'s {what} in {cache_root()}: {e.strerror or e}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return path


def _load(path: Path) -> dict[str, Q4K]:
    """The kept blocks, read into memory of their own (not mapped: a tensor left viewing a mapped file keeps the whole
    file counted as the process's memory)."""
    from safetensors.torch import load

    tensors = load(path.read_bytes())
    return {key.removesuffix(".codes"): Q4K(unpack(tensors[key]), tensors[key.replace(".codes", ".step")],
                                            tensors[key.replace(".codes", ".minimum")])
            for key in tensors if key.endswith(".codes")}

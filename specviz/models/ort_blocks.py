"""The packaged target's GGUF blocks as onnxruntime's MatMulNBits takes them, for the gguf-ort path (ort_linear.py):
every linear layer of the file, Q4_K and Q6_K alike (the output layer among them), and its 4-bit embedding, repacked
once from the joined chunks into one file beside the prepared folder, which onnxruntime maps rather than copies
(external data), so a later start builds its sessions in seconds and holds each weight once.

MatMulNBits computes y = x Wᵀ from W in blocks along each row: codes of `bits` bits, a float32 scale per block and a
uint8 zero point, w = scale · (code − zero). Both block types of the target fit it (`KINDS`):
- Q6_K (256 weights: 6-bit codes q, an int8 scale sc per 16, a float16 d): w = d·sc·(q − 32): 8-bit codes in blocks of
  16, zero point 32, the scale d·sc in float32 (exact: an 11-bit d times an 8-bit integer). Exactly the file's weight.
- Q4_K (codes 0…15 in groups of 32, a step d·sc and a minimum −dmin·m each): w = step·code + minimum: 4-bit codes in
  blocks of 32, zero point 0, scale = step. The minimum is not a whole multiple of the step, so it stays outside the
  codes: y += Σ over groups of minimum · (the group's input sum), a small matmul (ort_linear.py).

The layers that read one input (a block's q, k and v; its gate and up: `FUSED`) are kept as one group, their rows
stacked, one `Part` per block type in it, so one session run computes them all.

    blocks = ort_blocks("Qwen2.5-Coder-1.5B-Instruct", progress)   # OrtBlocks: its groups' parts, its embedding
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from specviz.models.gguf_blocks import EMBEDDING, Q4K, decode_q4k, keep_from_gguf, linear_name, pack, unpack
from specviz.settings.bounds import Progress

SUFFIX = "-ort-blocks.safetensors"
OUTPUT = "lm_head"  # the output layer's module (llama.cpp's output.weight)
GROUP = 32  # inputs per Q4_K minimum: a group's input sum multiplies it
Q6K_BYTES = 210  # one Q6_K super-block of 256 weights: 128 bytes of low 4 bits, 64 of high 2 bits, 16 scales, d
FUSED = (("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"), ("mlp.gate_proj", "mlp.up_proj"))
#        the layers of a block that read the same input, computed by one call


@dataclass(frozen=True)
class Kind:
    """How one GGUF block type sits in MatMulNBits."""

    name: str  # the GGUF type
    bits: int  # per code
    block: int  # codes per scale and zero point
    zero: int  # the code of weight 0
    minimum: bool  # a minimum per GROUP inputs, added from the group's input sum

    def shapes(self, n: int, k: int) -> dict[str, tuple[tuple[int, ...], str]]:
        """The tensors of a node of n outputs and k inputs, (shape, numpy dtype), as MatMulNBits takes them: codes
        (n, k/block, block·bits/8), scales and zero points flat (bits/8 a byte each), the minimums transposed for
        the correction's matmul."""
        blocks = k // self.block
        out = {"packed": ((n, blocks, self.block * self.bits // 8), "uint8"), "scale": ((n * blocks,), "float32"),
               "zero": ((n * -(-blocks * self.bits // 8),), "uint8")}
        return out | ({"minimum": ((k // GROUP, n), "float32")} if self.minimum else {})


KINDS = {"Q4_K": Kind("Q4_K", 4, 32, 0, True), "Q6_K": Kind("Q6_K", 8, 16, 32, False)}


@dataclass(frozen=True)
class NBits:
    """One weight (N, K) in MatMulNBits' terms: codes (N, K) uint8, a scale per block (N, K/block) float32, and for
    Q4_K a minimum per GROUP (N, K/GROUP) float32."""

    kind: Kind
    codes: np.ndarray
    scale: np.ndarray
    minimum: np.ndarray | None = None

    def weights(self) -> np.ndarray:
        """The weights as the file defines them, float32 (N, K): scale · (code − zero) + minimum."""
        n, k = self.codes.shape
        blocks = (self.codes.reshape(n, -1, self.kind.block).astype(np.float32) - self.kind.zero)
        w = (blocks * self.scale[..., None]).reshape(n, k)
        if self.minimum is not None:
            w = (w.reshape(n, -1, GROUP) + self.minimum[..., None]).reshape(n, k)
        return w


def q4k_nbits(raw: np.ndarray, rows: int, cols: int) -> NBits:
    """A Q4_K tensor's raw bytes as 4-bit codes in blocks of 32, zero point 0, scale = step, and its minimums."""
    q = decode_q4k(raw, rows, cols)
    return NBits(KINDS["Q4_K"], q.codes.numpy(), q.step.numpy(), q.minimum.numpy())


def q6k_nbits(raw: np.ndarray, rows: int, cols: int) -> NBits:
    """A Q6_K tensor's raw bytes (rows, cols/256 · 210) as 8-bit codes 0…63 in blocks of 16, zero point 32, scale
    d·sc: the layout gguf's own decoder reads (gguf.quants.Q6_K)."""
    blocks = np.ascontiguousarray(raw).reshape(-1, Q6K_BYTES)
    low = blocks[:, :128].reshape(-1, 2, 1, 64) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
    high = blocks[:, 128:192].reshape(-1, 2, 1, 32) >> np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)
    codes = (low & 0x0F).reshape(-1, 8, 32) | ((high & 0x03).reshape(-1, 8, 32) << 4)  # (blocks, 8, 32): in order
    sc = blocks[:, 192:208].copy().view(np.int8).astype(np.float32)  # (blocks, 16)
    d = blocks[:, 208:210].copy().view(np.float16).astype(np.float32)  # (blocks, 1)
    return NBits(KINDS["Q6_K"], codes.reshape(rows, cols), (d * sc).reshape(rows, -1))


DECODERS = {"Q4_K": q4k_nbits, "Q6_K": q6k_nbits}


class UntakeableBlocks(ValueError):
    """A GGUF file stores a layer in a block type the gguf-ort path does not take: the load keeps another path
    (pairs.blocks_or_fallback)."""


def nbits_of(name: str, type_name: str, raw: np.ndarray, rows: int, cols: int) -> NBits:
    """A GGUF tensor in MatMulNBits' terms; ValueError for a block type the gguf-ort path cannot take."""
    if type_name not in DECODERS:
        raise UntakeableBlocks(f"{name} is stored as {type_name}: the gguf-ort path takes {' and '.join(DECODERS)} blocks "
                         f"only, so this file keeps the other paths")
    return DECODERS[type_name](raw, rows, cols)


def module_name(gguf_name: str) -> str | None:
    """transformers' module name of a GGUF tensor the path reads: a block's linear weight, the output layer or the
    embedding (gguf_blocks.linear_name); None for the rest (norms, biases)."""
    return OUTPUT if gguf_name == "output.weight" else linear_name(gguf_name)


def groups_of(names) -> list[tuple[str, ...]]:
    """The layers one call computes, in order: a block's FUSED layers together where all are present, every other
    alone. ['model.layers.0.self_attn.k_proj', '….q_proj', '….v_proj', 'lm_head'] → [(q, k, v), ('lm_head',)]."""
    names, out, taken = list(names), [], set()
    for name in names:
        for fused in FUSED:
            prefix = next((name.removesuffix(member) for member in fused if name.endswith("." + member)), None)
            group = tuple(prefix + member for member in fused) if prefix is not None else ()
            if group and group[0] not in taken and all(g in names for g in group):
                out.append(group)
                taken |= set(group)
        if name not in taken:
            out.append((name,))
            taken.add(name)
    return out


@dataclass(frozen=True)
class Stored:
    """A tensor kept in the blocks file: where its bytes lie, for onnxruntime to map (external data)."""

    path: Path
    offset: int
    shape: tuple[int, ...]
    dtype: str

    @property
    def length(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize

    def load(self) -> np.ndarray:
        return np.fromfile(self.path, self.dtype, int(np.prod(self.shape)), offset=self.offset).reshape(self.shape)


@dataclass(frozen=True)
class Part:
    """One MatMulNBits node: a group's members of one block type, their rows stacked in order. `tensors` as
    Kind.shapes names them, in memory (np.ndarray) or in the blocks file (Stored)."""

    kind: Kind
    members: tuple[str, ...]
    outs: tuple[int, ...]  # each member's outputs
    k: int
    tensors: dict

    def array(self, name: str) -> np.ndarray:
        t = self.tensors[name]
        return t.load() if isinstance(t, Stored) else t

    def member(self, name: str) -> NBits:
        """One member's weight read back from the stacked tensors (a reference model's, a layer timed alone)."""
        i = self.members.index(name)
        first = sum(self.outs[:i])
        last = first + self.outs[i]
        packed = self.array("packed")[first:last].reshape(last - first, -1)
        codes = unpack(torch.from_numpy(packed)).numpy() if self.kind.bits == 4 else packed
        scale = self.array("scale").reshape(sum(self.outs), -1)[first:last]
        minimum = self.array("minimum")[:, first:last].T.copy() if self.kind.minimum else None
        return NBits(self.kind, codes, scale, minimum)


def part_of(members: list[tuple[str, NBits]]) -> Part:
    """The node of these layers (one block type, one input width), in memory: codes packed (two a byte at 4 bits,
    the even one low), every zero point the kind's, the minimums transposed."""
    kind, k = members[0][1].kind, members[0][1].codes.shape[1]
    if any(w.kind != kind or w.codes.shape[1] != k for _, w in members):
        raise ValueError(f"{[m for m, _ in members]}: one node takes one block type and one input width")
    codes = np.concatenate([w.codes for _, w in members])
    n = codes.shape[0]
    shapes = kind.shapes(n, k)
    if kind.bits == 4:
        codes = pack(codes)
    zero = kind.zero | (kind.zero << 4) if kind.bits == 4 else kind.zero
    tensors = {"packed": np.ascontiguousarray(codes).reshape(shapes["packed"][0]),
               "scale": np.concatenate([w.scale for _, w in members]).reshape(-1).astype(np.float32),
               "zero": np.full(shapes["zero"][0], zero, np.uint8)}
    if kind.minimum:
        tensors["minimum"] = np.ascontiguousarray(np.concatenate([w.minimum for _, w in members]).T, np.float32)
    return Part(kind, tuple(m for m, _ in members), tuple(w.codes.shape[0] for _, w in members), k, tensors)


def parts_of(group: list[tuple[str, NBits]]) -> list[Part]:
    """A group's nodes: its members split by block type, each type's in the group's order."""
    kinds = list(dict.fromkeys(w.kind.name for _, w in group))
    return [part_of([(m, w) for m, w in group if w.kind.name == kind]) for kind in kinds]


@dataclass(frozen=True)
class OrtBlocks:
    """What the gguf-ort path reads of a model: its groups' parts, and its embedding's 4-bit rows where it has some
    (gguf_blocks.Q4K, as kernels.Int4Embedding takes them)."""

    groups: list[list[Part]]
    embedding: Q4K | None = None

    def modules(self) -> set[str]:
        """Every layer with blocks."""
        return {m for parts in self.groups for part in parts for m in part.members}


def blocks_of(weights: dict[str, NBits], embedding: Q4K | None = None) -> OrtBlocks:
    """Weights in memory (a test's, a timed stand-in's) grouped as a file's are."""
    return OrtBlocks([parts_of([(m, weights[m]) for m in group]) for group in groups_of(weights)], embedding)


# --- the file kept beside the prepared folder -----------------------------------------------------------------------

def ort_blocks(name: str, progress: Progress | None = None) -> OrtBlocks:
    """The packaged model's blocks for the gguf-ort path, repacked from its GGUF chunks once (a minute or two: they
    are joined and checked again) and kept beside the prepared folder; ValueError where they cannot be (a block type
    the path does not take, no room in the cache)."""
    return read_blocks(keep_from_gguf(name, SUFFIX, write_blocks, "blocks for onnxruntime", "gguf-ort", progress))


def write_blocks(gguf: Path, dest: Path) -> None:
    """Every linear layer of a GGUF file and its embedding where Q4_K, repacked, into `dest` (safetensors' layout: an
    8-byte header size, a JSON header, the bytes), one group at a time, so memory holds one group, not the file."""
    from gguf import GGUFReader

    tensors = {module_name(t.name): t for t in GGUFReader(gguf).tensors if module_name(t.name)}
    embedding = tensors.pop(EMBEDDING, None)  # read as it is where Q4_K; any other type stays with the other paths
    refused = [f"{t.name} ({t.tensor_type.name})" for t in tensors.values() if t.tensor_type.name not in DECODERS]
    if refused:
        raise UntakeableBlocks(f"the gguf-ort path takes {' and '.join(DECODERS)} blocks only; this file stores "
                         f"{', '.join(refused)}")
    groups = groups_of(tensors)
    header = _header(tensors, groups, embedding if embedding and embedding.tensor_type.name == "Q4_K" else None)
    with open(dest, "wb") as out:
        _write_header(out, header)
        start = out.tell()
        for i, part in enumerate(p for group in groups for p in parts_of([(m, _decode(tensors[m])) for m in group])):
            for tensor, array in part.tensors.items():
                _write_at(out, start, header[f"{i}.{tensor}"], array)
        if EMBEDDING + ".codes" in header:
            q = decode_q4k(embedding.data, *(int(n) for n in reversed(embedding.shape)))
            for tensor, array in (("codes", pack(q.codes)), ("step", q.step), ("minimum", q.minimum)):
                _write_at(out, start, header[f"{EMBEDDING}.{tensor}"], array.contiguous().numpy())


def _header(tensors: dict, groups: list[tuple[str, ...]], embedding) -> dict:
    """The file's header: every part's tensors (`{part}.{tensor}`, in Kind.shapes' order), the embedding's, where
    each lies, and the parts' groups, members and shapes (`__metadata__`)."""
    header, metadata, offset = {}, [], 0
    for i, group in enumerate(groups):
        for kind in dict.fromkeys(tensors[m].tensor_type.name for m in group):
            members = [m for m in group if tensors[m].tensor_type.name == kind]
            outs, k = [int(tensors[m].shape[1]) for m in members], int(tensors[members[0]].shape[0])
            metadata.append({"group": i, "kind": kind, "members": members, "outs": outs, "k": k})
            for tensor, (shape, dtype) in KINDS[kind].shapes(sum(outs), k).items():
                offset = _entry(header, f"{len(metadata) - 1}.{tensor}", shape, dtype, offset)
    if embedding is not None:
        cols, rows = (int(n) for n in embedding.shape)
        for tensor, shape, dtype in (("codes", (rows, cols // 2), "uint8"), ("step", (rows, cols // GROUP), "float32"),
                                     ("minimum", (rows, cols // GROUP), "float32")):
            offset = _entry(header, f"{EMBEDDING}.{tensor}", shape, dtype, offset)
    header["__metadata__"] = {"format": "specviz-ort-blocks", "parts": json.dumps(metadata)}
    return header


def _write_at(out, start: int, entry: dict, array: np.ndarray) -> None:
    """One tensor's bytes, where the header said they would lie."""
    first, last = entry["data_offsets"]
    if out.tell() != start + first or array.nbytes != last - first:
        raise ValueError(f"a tensor {array.shape} does not fit its header entry {entry}")
    out.write(np.ascontiguousarray(array).tobytes())


def _decode(tensor) -> NBits:
    cols, rows = (int(n) for n in tensor.shape)  # GGUF lists the fastest-varying dimension first
    return nbits_of(tensor.name, tensor.tensor_type.name, tensor.data, rows, cols)


SAFETENSORS_DTYPE = {"uint8": "U8", "float32": "F32"}


def _entry(header: dict, key: str, shape, dtype: str, offset: int) -> int:
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    header[key] = {"dtype": SAFETENSORS_DTYPE[dtype], "shape": list(shape), "data_offsets": [offset, offset + size]}
    return offset + size


def _header_bytes(header: dict) -> bytes:
    text = json.dumps(header, separators=(",", ":")).encode()
    return text + b" " * (-len(text) % 8)  # the data starts 8-byte aligned


def _write_header(out, header: dict) -> None:
    text = _header_bytes(header)
    out.write(len(text).to_bytes(8, "little") + text)


def read_blocks(path: Path) -> OrtBlocks:
    """The blocks file: its groups' parts (their tensors left in the file for onnxruntime to map) and its
    embedding's 4-bit rows (read into memory)."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    dtypes = {v: k for k, v in SAFETENSORS_DTYPE.items()}
    stored = {key: Stored(Path(path), 8 + size + entry["data_offsets"][0], tuple(entry["shape"]),
                          dtypes[entry["dtype"]]) for key, entry in header.items() if key != "__metadata__"}
    groups: list[list[Part]] = []
    for i, p in enumerate(json.loads(header["__metadata__"]["parts"])):
        kind = KINDS[p["kind"]]
        if p["group"] == len(groups):
            groups.append([])
        groups[p["group"]].append(Part(kind, tuple(p["members"]), tuple(p["outs"]), p["k"],
                                       {t: stored[f"{i}.{t}"] for t in kind.shapes(1, p["k"])}))
    embedding = None
    if f"{EMBEDDING}.codes" in stored:
        packed, step, minimum = (torch.from_numpy(stored[f"{EMBEDDING}.{t}"].load())
                                 for t in ("codes", "step", "minimum"))
        embedding = Q4K(unpack(packed), step, minimum)
    return OrtBlocks(groups, embedding)

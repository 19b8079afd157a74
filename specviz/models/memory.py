"""What a draft costs in memory, measured on the loaded models: its weights as stored (quantized ones at their size),
the part it shares with the target (self-speculation shares every weight), and its KV cache per token; and what a
load asks of the allocator so that the memory it frees goes back to the system (`keep_large_blocks_apart`,
`give_back_freed_memory`)."""

from __future__ import annotations

import ctypes
import ctypes.util

import torch

from specviz.record.trace import DraftMemory


def _tensors(model) -> list:
    return [*model.parameters(), *model.buffers()]


def draft_memory(draft, target) -> DraftMemory | None:
    """The draft's memory beside the target's weights; None for no draft model (a drafter that copies text)."""
    if draft is None:
        return None
    owned_by_target = {t.data_ptr() for t in _tensors(target)}
    own = shared = 0
    for t in {id(t): t for t in _tensors(draft)}.values():
        size = t.numel() * t.element_size()
        shared, own = (shared + size, own) if t.data_ptr() in owned_by_target else (shared, own + size)
    target_modules = {id(m) for m in target.modules()}
    for m in draft.modules():  # weights packed for a kernel (layers.Fp16Linear) are no tensor torch counts
        packed = getattr(m, "packed_bytes", 0)
        shared, own = (shared + packed, own) if id(m) in target_modules else (shared, own + packed)
    config = getattr(draft, "config", None)
    if config is None:  # drafting heads (engine/medusa.py, eagle.py): blocks and the target's LM head, no KV cache of their own
        return DraftMemory(weights_bytes=own, shared_bytes=shared, kv_bytes_per_token=0)
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    element = torch.empty((), dtype=draft.dtype).element_size()  # the cache holds keys and values in compute dtype
    kv = 2 * config.num_hidden_layers * heads * head_dim * element
    return DraftMemory(weights_bytes=own, shared_bytes=shared, kv_bytes_per_token=kv)


def own_copies(model) -> None:
    """Every tensor of the model in memory of its own, in place: a tensor loaded in its file's own dtype stays a view
    of the file's mapped pages, and once the model's other layers are replaced, one such view keeps the whole file
    mapped and counted as the process's memory (the packaged draft's 0.96 GB, its int4 layers made from it). One
    tensor at a time, so the copies never double the model."""
    for tensor in [*model.parameters(), *model.buffers()]:
        tensor.data = tensor.data.clone()


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter: the size from which a block gets a mapping of its own
LARGE_BLOCK = 128 * 1024  # glibc's own starting threshold, held fixed


def keep_large_blocks_apart() -> bool:
    """Ask glibc to give every block of LARGE_BLOCK bytes or more a mapping of its own, returned to the system as soon
    as it is freed; True where it agreed. By default glibc raises that threshold after each large block freed (up to
    32 MB), so loading a pair, which frees gigabytes of weights once repacked, leaves most of them inside the heap,
    where give_back_freed_memory cannot return them. Measured 2026-12-06 on the AMD EPYC, the packaged pair on
    gguf-int4 after loading and one run: 4.0-4.4 GiB resident by default, 2.63 GiB with the threshold held (its
    weights 2.1 GiB), its steps as fast (target 79-80 ms, draft 33-35 ms; 78-99 and 34-44 by default)."""
    libc = _libc()
    return bool(libc is not None and hasattr(libc, "mallopt") and libc.mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))


def _libc():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:  # not glibc (macOS, musl): nothing to ask
        return None


def give_back_freed_memory() -> None:
    """Return the memory freed while loading to the system (glibc keeps freed blocks for reuse otherwise: a pair put
    on a kernel path frees the weights it repacked, and the process would go on holding their gigabytes)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)

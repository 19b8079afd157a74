"""Model pairs: named presets, the device and dtype a pair runs in, and `load_pair` (and `load_target`, for
training). The default pair is the packaged offline one, Qwen2.5-Coder-0.5B-Instruct (draft) ->
Qwen2.5-Coder-1.5B-Instruct (target), prepared from PyPI's GGUF chunks by packaged.py.
"""

from __future__ import annotations

import os
import re
import dataclasses
from dataclasses import dataclass

import torch

from specviz.settings.bounds import DTYPE_CHOICES, Progress
from specviz.models.kernel_choice import Choice, check_loaded, choose_path
from specviz.models.kernels import apply_path
from specviz.models.machine import native_bf16
from specviz.models.ort_blocks import UntakeableBlocks
from specviz.models.memory import give_back_freed_memory, keep_large_blocks_apart, own_copies
from specviz.models.packaged import cache_root
from specviz.models.packaged import PACKAGED_PREFIX, prepare_packaged
from specviz.models.quant import FULL, packed_dtype, pick_weights, quantize_weights, weights_name


@dataclass(frozen=True)
class Preset:
    label: str
    draft: str  # a hub id, a local folder, or "packaged:<name>"
    target: str
    offline: bool  # True when it needs no download


PRESETS = {
    "qwen2.5-coder-0.5b-1.5b-offline": Preset(
        "Qwen2.5-Coder 0.5B → 1.5B (offline, packaged)",
        PACKAGED_PREFIX + "Qwen2.5-Coder-0.5B-Instruct", PACKAGED_PREFIX + "Qwen2.5-Coder-1.5B-Instruct", True),
    "qwen2.5-0.5b-7b": Preset(
        "Qwen2.5 0.5B → 7B Instruct (hub, GPU)", "Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-7B-Instruct", False),
    "qwen2.5-coder-0.5b-7b": Preset(
        "Qwen2.5-Coder 0.5B → 7B Instruct (hub, GPU)",
        "Qwen/Qwen2.5-Coder-0.5B-Instruct", "Qwen/Qwen2.5-Coder-7B-Instruct", False),
    "smollm2-135m-1.7b": Preset(
        "SmolLM2 135M → 1.7B Instruct (hub)",
        "HuggingFaceTB/SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-1.7B-Instruct", False),
}
DEFAULT_PRESET = "qwen2.5-coder-0.5b-1.5b-offline"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class ModelPair:
    draft: torch.nn.Module
    target: torch.nn.Module
    tokenizer: object
    draft_name: str
    target_name: str
    device: str
    dtype: str
    dtype_why: str = ""  # why these kernels and dtype on this device, and their check (the page shows it)
    kernels: str = ""  # the path the linear layers run on (kernels.py; on a GPU the dtype's own)


# --- device and dtype ------------------------------------------------------------------------------------

def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps and mps.is_available())


def pick_device(device: str | None = None) -> str:
    """auto: a CUDA GPU, else Apple silicon's GPU (mps), else the CPU."""
    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "mps" if _mps_available() else "cpu"
    if device not in ("cpu", "cuda", "mps") and not device.startswith("cuda:"):
        raise ValueError(f"device must be auto, cpu, cuda or mps, got {device!r}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for, but no CUDA GPU is available")
    if device == "mps" and not _mps_available():
        raise ValueError("device 'mps' was asked for, but no Apple-silicon GPU is available")
    return device


def pick_dtype(dtype: str | None, device: str) -> str:
    """The dtype to load in: as asked, or for auto the one auto_dtype gives this device."""
    if dtype in (None, "", "auto"):
        return auto_dtype(device)[0]
    if dtype not in DTYPE_CHOICES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_CHOICES)}; got {dtype!r}")
    return dtype


def auto_dtype(device: str) -> tuple[str, str]:
    """(dtype, why): on a GPU bfloat16 only where it computes it natively, else float16 (T4 and older, Apple
    silicon); on a CPU float32, the activations of every exact kernel path (kernels.py)."""
    if device.startswith("cuda"):
        name = torch.cuda.get_device_name(device)
        if torch.cuda.is_bf16_supported(including_emulation=False):
            return "bfloat16", f"{name} computes bfloat16 natively"
        major, minor = torch.cuda.get_device_capability(device)
        return "float16", (f"{name} (compute capability {major}.{minor}) has no native bfloat16; float16 keeps "
                           f"half the memory of float32")
    if device == "mps":
        return "float16", "Apple-silicon GPUs compute float16 natively (bfloat16 needs a recent macOS)"
    native = ("it computes bfloat16 natively, so bfloat16 is timed too where its rows measure independent" if
              native_bf16() else "bfloat16 would be emulated here, so it is not offered")
    return "float32", (f"on a CPU the kernels decide (models/kernel_choice.py): the fastest path whose rows measure "
                       f"independent on this machine, float32 the reference; {native}")


# --- loading ---------------------------------------------------------------------------------------------

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def resolve_model(model_id: str, progress: Progress | None = None) -> str:
    """A loadable folder or hub id for a model id; ValueError for ids that cannot name a model."""
    model_id = (model_id or "").strip()
    if not model_id:
        raise ValueError("model id is empty")
    if model_id.startswith(PACKAGED_PREFIX):
        return str(prepare_packaged(model_id[len(PACKAGED_PREFIX):], progress))
    if os.path.isdir(model_id):
        return model_id
    if not _HUB_ID.match(model_id):
        raise ValueError(f"unknown model {model_id!r}: not a preset, a local folder or a hub id like owner/name")
    return model_id


def load_model(path: str, device: str, dtype: str):
    from transformers import AutoModelForCausalLM

    try:
        # safetensors only: a pytorch_model.bin is a pickle, which can run code when loaded
        model = AutoModelForCausalLM.from_pretrained(path, dtype=DTYPES[dtype], trust_remote_code=False,
                                                     use_safetensors=True)
    except Exception as e:  # hub errors come in many types; one readable message is what the user needs
        raise ValueError(f"could not load model {path!r}: {type(e).__name__}: {str(e).splitlines()[0][:200]}") from None
    return model.to(device).eval()


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path, trust_remote_code=False)
    except Exception as e:
        raise ValueError(f"could not load the tokenizer of {path!r}: {type(e).__name__}: {str(e).splitlines()[0][:200]}") from None


def check_same_tokenizer(a, b, names: tuple[str, str]) -> None:
    """Speculative decoding compares p and q token by token: both models must share one vocabulary."""
    if a.get_vocab() != b.get_vocab():
        raise ValueError(f"tokenizer mismatch: {names[0]} and {names[1]} use different vocabularies; "
                         "draft and target must share one tokenizer")


def load_pair(preset: str | None = None, draft: str | None = None, target: str | None = None,
              device: str | None = None, dtype: str | None = None,
              progress: Progress | None = None, draft_weights: str = "auto", kernels: str | None = None) -> ModelPair:
    """Load a draft/target pair by preset name, or by two model ids (hub ids, local folders or
    "packaged:<name>"). Raises ValueError with a readable message for anything that cannot work.

    kernels: on a CPU, the path the linear layers run on (kernels.py; auto: the fastest exact one measured here,
    kernel_choice.py; or a name); on a GPU the dtype's own. draft_weights: "int8" or "int4" gives the draft int8 or int4 weights
    (quant.py: a lighter draft, still exact), "full" keeps them as loaded (on the kernels' path), "auto" takes on
    CPU whichever of the three this CPU runs fastest, full weights elsewhere. The target's weights are never
    quantized to integers."""
    draft, target = pair_ids(preset, draft, target)
    device = pick_device(device)
    keep_large_blocks_apart()  # what the load frees goes back to the system: 2.6 GiB resident after it, not 4.0
    draft_path = resolve_model(draft, _scaled(progress, 0.0, 0.4))
    target_path = resolve_model(target, _scaled(progress, 0.4, 0.85))
    if progress:
        progress(0.85, "reading the tokenizers")
    tok_draft, tok_target = load_tokenizer(draft_path), load_tokenizer(target_path)
    check_same_tokenizer(tok_draft, tok_target, (draft, target))
    if progress:
        progress(0.87, "choosing the kernels")
    choice = choose_kernels(target_path, device, dtype, kernels, gguf=packaged_name(target) is not None)
    choice, blocks = blocks_or_fallback(target, target_path, choice, device, dtype, progress)
    weights = pick_weights(draft_weights, device, DTYPES[choice.dtype], choice.path)
    if progress:
        progress(0.89, f"loading the draft's weights ({choice.path or choice.dtype})")
    draft_model = load_draft(draft_path, device, choice, weights)
    if progress:
        progress(0.9, f"loading the target's weights ({choice.path or choice.dtype})")
    target_model = apply_path(load_model(target_path, device, choice.load_dtype), choice.path, blocks=blocks)
    give_back_freed_memory()
    if progress:
        progress(0.95, "checking the target's rows on its kernels")
    return ModelPair(draft_model, target_model, tok_target, weights_name(_short(draft), weights), _short(target),
                     device, choice.dtype, check_loaded(target_model, choice), choice.path)


def load_draft(path: str, device: str, choice: Choice, weights: str) -> torch.nn.Module:
    """The draft at `path` with full weights on the kernels' path, or with int8 or int4 weights (quant.py) computing
    in quant.packed_dtype: on the float16-fbgemm path of a CPU with native bfloat16, bfloat16, where those kernels
    are fast (the packed layers then take no other path: the float16-fbgemm one would turn its activations float32)."""
    if weights == FULL:
        return apply_path(load_model(path, device, choice.load_dtype), choice.path)
    packed = packed_dtype(DTYPES[choice.dtype], choice.path)
    draft = quantize_weights(load_model(path, device, str(packed).removeprefix("torch.")), weights)
    own_copies(draft)  # what quantizing left (the norms, a bias) may still view the file it was loaded from
    return draft if packed != DTYPES[choice.dtype] else apply_path(draft, choice.path)


def pair_ids(preset: str | None, draft: str | None, target: str | None) -> tuple[str, str]:
    """(draft id, target id) of a preset, or of the two models named; ValueError for anything else."""
    if draft or target:
        if not (draft and target):
            raise ValueError("give both draft and target, or a preset")
        if preset:  # it would do nothing: the two models name the pair
            raise ValueError(f"give a preset or a draft and a target, not both (preset {preset!r} names a pair "
                             f"too)")
        return draft, target
    name = preset or DEFAULT_PRESET
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[name].draft, PRESETS[name].target


def packaged_name(model_id: str) -> str | None:
    """The packaged model a model id names (its GGUF file's blocks can be read), or None."""
    return model_id[len(PACKAGED_PREFIX):] if model_id.startswith(PACKAGED_PREFIX) else None


def blocks_for(model_id: str, choice: Choice, progress: Progress | None = None) -> dict | None:
    """The GGUF file's blocks a model computes from on its path (the path's FileBlocks: gguf-int4 reads the Q4_K ones,
    gguf_blocks.py); None on a path that reads none, or for a model from no packaged file."""
    name, file = packaged_name(model_id), choice.kernel.file if choice.kernel else None
    return file.read(name, _scaled(progress, 0.87, 0.89)) if file and name else None


def blocks_or_fallback(model_id: str, path: str, choice: Choice, device: str, dtype: str | None,
                       progress: Progress | None = None) -> tuple[Choice, dict | None]:
    """(the choice, the file's blocks it computes from): as chosen, or where the file stores a layer in blocks the
    chosen path cannot take (ort_blocks.UntakeableBlocks: gguf-ort takes Q4_K and Q6_K), the path auto takes instead,
    its reason saying why, as the page's model line and the CLI print it."""
    try:
        return choice, blocks_for(model_id, choice, progress)
    except UntakeableBlocks as e:
        kept = choose_kernels(path, device, dtype, "auto", gguf=True)
        kept = dataclasses.replace(kept, why=f"--kernels {choice.path} was asked, but {e}; so the pair runs on "
                                             f"{kept.path}, the path auto takes: {kept.why}")
        return kept, blocks_for(model_id, kept, progress)


def choose_kernels(path: str, device: str, dtype: str | None, kernels: str | None, gguf: bool = False) -> Choice:
    """The kernels for a model at `path` (its config's shapes) on `device`, by kernel_choice.choose_path (`gguf`: the
    model has a GGUF file's blocks); on a GPU the dtype auto_dtype gives it (or the one asked)."""
    from transformers import AutoConfig

    if device != "cpu":
        dtype = pick_dtype(dtype, device)
        return choose_path(0, 0, device, dtype, kernels)
    config = AutoConfig.from_pretrained(path)
    return choose_path(config.hidden_size, config.intermediate_size, device, dtype, kernels, cache_root(), gguf)


def load_target(preset: str | None = None, target: str | None = None, dtype: str | None = None,
                progress: Progress | None = None, kernels: str | None = None) -> tuple[torch.nn.Module, object, str]:
    """(the target alone on CPU, on the kernels chosen as load_pair chooses them; its tokenizer; its name as a pair
    names it): what training heads for it reads."""
    if preset and target:  # one would be ignored
        raise ValueError(f"give a preset or a target, not both (preset {preset!r} names a target too)")
    if not target:
        name = preset or DEFAULT_PRESET
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
        target = PRESETS[name].target
    path = resolve_model(target, progress)
    choice = choose_kernels(path, "cpu", dtype, kernels, gguf=packaged_name(target) is not None)
    choice, blocks = blocks_or_fallback(target, path, choice, "cpu", dtype)
    if progress:
        progress(0.9, "loading the target's weights")
    model = apply_path(load_model(path, "cpu", choice.load_dtype), choice.path, keep_output_rows=True, blocks=blocks)
    return model, load_tokenizer(path), _short(target)


def _short(model_id: str) -> str:
    return packaged_name(model_id) or model_id


def _scaled(progress: Progress | None, lo: float, hi: float) -> Progress | None:
    if progress is None:
        return None
    return lambda f, msg: progress(lo + (hi - lo) * f, msg)

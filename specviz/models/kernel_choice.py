"""Which kernel path a pair runs on here, measured on this machine: which paths are exact here, how fast each is,
the one chosen and remembered, and the loaded model checked on it. The paths themselves are kernels.py's table: a
path is checked and timed on its row's stand-in layer, refused with its row's reason, and loaded as its row says
(`Choice.kernel`).

    choice = choose_path(hidden, inner, "cpu", dtype_asked=None, kernels_asked="auto")  # a Choice: the path and why
    apply_path(model, choice.path)                                                      # kernels.py
    check_loaded(model, choice)                                                         # its reason, checked on it

Exact means a row's output does not depend on which rows are computed with it (`row_difference`): then the verify
pass scores each draft as a one-token step of the same path would, and speculative decoding's output follows the
target alone on that path. Which paths are exact is measured on this machine (`rows_here`: both of the MLP's shapes,
every size of pass a run makes, ROW_COUNTS), never assumed per path: a path is offered where its rows are
independent here, refused with its measured difference where not.

`auto` times each path exact here (less those asked for by name only: KernelPath.why_not_auto, gguf-ort) on a stack
of its stand-in layers of the target's shapes (`stack_of`; one row, a decoding step, and K + 1 rows, a verify pass),
takes the one whose token costs least (`Timing.cost`: the target alone or a speculative round, whichever is cheaper
on that path), and remembers it, with every path's row check and timings, per machine and torch build beside the
model cache (`kernels.json`), so later starts read it.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import torch
from torch import nn

from specviz.models.kernels import FLOAT32, KERNELS, PATHS, TABLE, KernelPath, available
from specviz.algorithm.theory import expected_tokens_per_pass
from specviz.models.remembered import read_entries, remember
from specviz.models.machine import cpu_flags, machine
from specviz.models.timer import median_s
from specviz.settings.bounds import MAX_BATCH, MAX_K, MAX_TREE_NODES

ROWS = 5  # rows of a verify pass the choice times and the load check scores: K + 1 for the default K = 4
ROW_COUNTS = (2, ROWS, MAX_K + 1, MAX_TREE_NODES + 1, MAX_BATCH * (MAX_K + 1))  # the passes whose rows must be
#             independent: the smallest verify pass, the default one, the longest chain's, a full tree's, the largest
#             batch's (engine/batched.py: every sequence's K + 1 rows in one pass)
ROW_TOLERANCE = 1e-5  # the largest difference (relative to the outputs' size) still counted as row-independent:
#                       float32 measures up to 7e-7 (its small-matrix kernel sums in another order), float16-fbgemm
#                       0; bfloat16 0 to 3e-3 by CPU, shape and rows; int8-dynamic 2e-2
STACK = 6  # layers of the target's MLP shape in a stack (stack_of): more than a CPU's caches hold, as a pass reads
CACHE_FILE = "kernels.json"
ISA_LIMITS = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA", "FBGEMM_ENABLE_INSTRUCTIONS")
#             variables that make torch's libraries use less of the CPU than it has (an AVX2-only CPU emulated): a
#             choice measured under them holds only under them


# --- exact: a row's output independent of its batch-mates ---------------------------------------------------------

def row_difference(layer: nn.Module, x: torch.Tensor) -> float:
    """The largest difference between the rows of x computed together and the same rows one at a time, relative to
    the outputs' largest size: 0 (or rounding, 1e-7) where each row is computed alone whatever its batch-mates."""
    with torch.inference_mode():
        together = layer(x).float()
        alone = torch.cat([layer(x[i:i + 1]) for i in range(len(x))]).float()
    return float((together - alone).abs().max() / together.abs().max().clamp(min=1e-12))


@dataclass(frozen=True)
class RowTest:
    """A path's rows measured on this machine: the largest difference between rows computed together and alone over
    both of the MLP's shapes (hidden → inner, inner → hidden), each pass size of ROW_COUNTS and two random inputs."""

    path: str
    difference: float  # relative to the outputs' size (row_difference)
    rows: int  # the pass size where it was largest
    shape: str  # the layer where it was largest, "inputs × outputs"

    @property
    def exact(self) -> bool:
        return self.difference <= ROW_TOLERANCE

    def __str__(self) -> str:
        return (f"{self.rows} rows computed together differ from the same rows one at a time by "
                f"{self.difference:.1e} of the outputs' size (a {self.shape} layer)")


def row_test(path: str, layers: list[tuple[nn.Module, int]]) -> RowTest:
    """RowTest of `path` on these (layer, input width) pairs: every pass size of ROW_COUNTS, two inputs each."""
    worst = (-1.0, 0, "")
    for layer, width in layers:
        for rows in ROW_COUNTS:
            for seed in range(2):
                x = torch.randn(rows, width, generator=torch.Generator().manual_seed(seed)).to(KERNELS[path].inputs)
                difference = row_difference(layer, x)
                if difference > worst[0]:
                    worst = (difference, rows, f"{width} × {layer.out_features}")
    return RowTest(path, *worst)


@lru_cache(maxsize=None)
def rows_here(path: str, hidden: int = 1536, inner: int = 8960) -> RowTest:
    """`path`'s RowTest on layers of the target's MLP shapes, measured once a process (a fraction of a second)."""
    up, down = stack_of(path, hidden, inner, layers=1)[0], stack_of(path, inner, hidden, layers=1)[0]
    return row_test(path, [(up, hidden), (down, inner)])


def refusal(path: str, hidden: int = 1536, inner: int = 8960) -> str:
    """Why a path that is not exact here is refused, measured on this machine on layers of the given shapes."""
    return (f"--kernels {path} is not exact on this machine, so specviz refuses it: {rows_here(path, hidden, inner)}"
            f" (measured here; an exact path differs by at most {ROW_TOLERANCE:.0e}): {KERNELS[path].why_not}, so a "
            f"draft's score in a verify pass would depend on the drafts beside it. Here: "
            f"{offered_here('cpu', hidden, inner)}")


def stack_of(path: str, hidden: int, inner: int, layers: int = STACK, seed: int = 0) -> list[nn.Module]:
    """`layers` random linear layers hidden → inner as `path` computes them (its row's stand-in layer): the timed
    stand-in for a model's MLPs, and the layers whose rows are checked."""
    gen, make = torch.Generator().manual_seed(seed), KERNELS[path].layer
    out = []
    for _ in range(layers):
        linear = nn.Linear(hidden, inner, bias=False)
        with torch.no_grad():
            linear.weight.copy_(torch.randn(inner, hidden, generator=gen) / hidden ** 0.5)
        out.append(make(linear))
    return out


# --- the choice --------------------------------------------------------------------------------------------------

ROUND_ALPHA, ROUND_C = 0.8, 0.3  # the round a path is priced by: the packaged pair's acceptance on code (0.8 to 0.9
#                                  in its recorded examples) and its draft step's cost in target steps (0.31 to 0.37
#                                  measured on float16-fbgemm), at the default K = ROWS - 1


@dataclass(frozen=True)
class Timing:
    """A path's stack timed here: seconds for one row and for ROWS rows, the least of five."""

    path: str
    one_s: float
    rows_s: float

    @property
    def cost(self) -> float:
        """Seconds a token, in the stack's terms, of the cheaper way to run on this path: the target alone, t(1), or
        a speculative round, (K·c·t(1) + t(K + 1)) / E(α, K) at K = ROWS − 1, α = ROUND_ALPHA, c = ROUND_C. A path's
        t(1) buys every step, its t(K + 1) every verify pass: a 4-bit kernel that halves t(1) but triples v can lose."""
        k = ROWS - 1
        spec = (k * ROUND_C * self.one_s + self.rows_s) / expected_tokens_per_pass(ROUND_ALPHA, k)
        return min(self.one_s, spec)


@dataclass(frozen=True)
class Choice:
    """The path a pair runs on, the dtype its activations have, and why, in words the page and the CLI print."""

    path: str  # a name of PATHS on a CPU; on a GPU the dtype's own kernels (the dtype's name)
    dtype: str
    why: str
    timings: tuple[Timing, ...] = ()  # the measurement behind an auto choice (empty: asked for, or read)
    rows: tuple[RowTest, ...] = ()  # every path's row check behind an auto choice
    exact: bool = False  # chosen as exact (auto, --kernels, float32): the load then checks the loaded target's rows

    @property
    def kernel(self) -> KernelPath | None:
        """Its row of the table (kernels.py); None for a dtype's own kernels on a GPU ("float16")."""
        return KERNELS.get(self.path)

    @property
    def load_dtype(self) -> str:
        """The dtype to load the weights in: its path's (KernelPath.load_dtype), else the activations'."""
        return self.dtype if self.kernel is None else self.kernel.load_dtype


def time_paths(hidden: int, inner: int, paths: tuple[str, ...]) -> list[Timing]:
    """Each path's stack of the target's MLP shape, one row and ROWS rows, interleaved path by path, the least of five
    after a warm-up: on two cores a moment of other work stalls a two-thread kernel by a scheduler's time slice, so
    the least time is the kernel's own (a median taken on a busy machine once ranked the paths wrongly)."""
    stacks = {path: stack_of(path, hidden, inner) for path in paths}
    one, rows = torch.randn(1, hidden), torch.randn(ROWS, hidden)
    times: dict[str, list[list[float]]] = {path: [[], []] for path in paths}
    with torch.inference_mode():
        for _ in range(5):
            for path, stack in stacks.items():
                for j, x in enumerate((one, rows)):
                    x = x.to(KERNELS[path].inputs)
                    times[path][j].append(median_s(lambda i: [layer(x) for layer in stack], "cpu", 1))
    return [Timing(path, min(one_t), min(rows_t)) for path, (one_t, rows_t) in times.items()]


def paths_for(gguf: bool) -> tuple[str, ...]:
    """The paths a model can take: one that reads a GGUF file's blocks (gguf-int4) only for a model loaded from one."""
    return tuple(row.name for row in TABLE if gguf or row.file is None)


def auto_paths(gguf: bool) -> tuple[str, ...]:
    """The paths `auto` measures and may take: those a model can take, less those run only when asked for by name
    (KernelPath.why_not_auto: gguf-ort)."""
    return tuple(p for p in paths_for(gguf) if KERNELS[p].auto)


def choose_path(hidden: int, inner: int, device: str, dtype_asked: str | None, kernels_asked: str | None,
                cache: Path | None = None, gguf: bool = False) -> Choice:
    """The path a pair of these shapes runs on here (`gguf`: its target has a GGUF file's 4-bit blocks). Asked for by
    name: that path, or ValueError saying why it cannot run here and what can; a dtype asked for (float32 is the
    reference, what transformers computes): its own kernels; neither: the fastest exact path this machine offers,
    measured once and remembered in `cache`."""
    kernels_asked = kernels_asked or "auto"
    if kernels_asked not in ("auto", *PATHS):
        raise ValueError(f"--kernels must be auto or one of {', '.join(PATHS)}, got {kernels_asked!r}; here: "
                         f"{offered_here(device, gguf=gguf)}")
    file = KERNELS[kernels_asked].file if kernels_asked != "auto" else None
    if file is not None and not gguf:
        raise ValueError(f"--kernels {kernels_asked} computes from {file.reads}, and this target was not loaded from "
                         f"one (the packaged pair's was); here: {offered_here(device)}")
    if kernels_asked != "auto":
        return _asked(kernels_asked, device, dtype_asked, hidden, inner, gguf)
    if device != "cpu":
        return Choice(dtype_asked, dtype_asked, f"the dtype's own kernels on {device}", exact=dtype_asked == FLOAT32)
    if dtype_asked not in (None, "", "auto"):
        said = _rows_said(dtype_asked, hidden, inner) if dtype_asked in PATHS else "not a path specviz measures"
        return Choice(dtype_asked, dtype_asked, f"--dtype {dtype_asked} as asked, torch's own kernels: {said}",
                      exact=dtype_asked == FLOAT32)
    return _measured(hidden, inner, cache, gguf)


def offered_here(device: str = "cpu", hidden: int = 1536, inner: int = 8960, gguf: bool = False) -> str:
    """The paths this machine runs exactly, in words, and those refused with their measured difference: 'float32,
    float16-fbgemm (refused here: bfloat16, 33 rows differ by 1.6e-03; int8-dynamic, 2 rows … 2.3e-02)'."""
    if device != "cpu":
        return FLOAT32
    runs = [p for p in paths_for(gguf) if available(p) is None]
    exact = [p for p in runs if rows_here(p, hidden, inner).exact]
    refused = [rows_here(p, hidden, inner) for p in runs if p not in exact]
    return ", ".join(exact) + ("" if not refused else " (refused here, not exact: " + "; ".join(
        f"{t.path}, {t.rows} rows differ by {t.difference:.1e}" for t in refused) + ")")


def _asked(path: str, device: str, dtype_asked: str | None, hidden: int, inner: int, gguf: bool = False) -> Choice:
    problem = available(path, device)
    if problem is not None:
        raise ValueError(f"--kernels {path} cannot run here: {problem}. Here: "
                         f"{offered_here(device, hidden, inner, gguf)}")
    if device == "cpu" and not rows_here(path, hidden, inner).exact:
        raise ValueError(refusal(path, hidden, inner))
    computes = KERNELS[path].activations
    if dtype_asked not in (None, "", "auto") and dtype_asked != computes:
        raise ValueError(f"--kernels {path} computes in {computes}, but --dtype {dtype_asked} was asked: leave "
                         f"--dtype out, or set it to {computes}")
    not_auto = f"; {KERNELS[path].why_not_auto}" if KERNELS[path].why_not_auto else ""
    return Choice(path, computes, f"as asked (--kernels); {_rows_said(path, hidden, inner)}{not_auto}", exact=True)


def _rows_said(path: str, hidden: int, inner: int) -> str:
    """A path's row check in words, for its reason."""
    rows = rows_here(path, hidden, inner)
    return (f"its rows measured independent on this machine ({ROW_COUNTS[0]} to {ROW_COUNTS[-1]} rows, the most "
            f"difference {rows.difference:.0e})" if rows.exact else f"not exact on this machine: {rows}")


def _measured(hidden: int, inner: int, cache: Path | None, gguf: bool = False) -> Choice:
    key = machine_key(hidden, inner, gguf)
    remembered = read_entries(Path(cache) / CACHE_FILE).get(key) if cache else None
    if remembered and remembered.get("path") in auto_paths(gguf) and available(remembered["path"]) is None:
        return Choice(remembered["path"], KERNELS[remembered["path"]].activations,
                      remembered["why"] + " (measured before on this machine and remembered beside the model cache)",
                      exact=True)
    tests = [rows_here(p, hidden, inner) for p in auto_paths(gguf) if available(p) is None]
    timings = time_paths(hidden, inner, tuple(t.path for t in tests if t.exact))
    best = min(timings, key=lambda t: t.cost)
    refused = [t for t in tests if not t.exact]
    why = (f"the fastest path exact on this CPU, measured at load: a stack of {STACK} {hidden} × {inner} layers, "
           f"t(1) and t({ROWS}): " + ", ".join(f"{t.path} {t.one_s * 1000:.1f} and {t.rows_s * 1000:.1f} ms "
                                                f"({t.cost * 1000:.1f} ms a token)"
                                                for t in sorted(timings, key=lambda t: t.cost))
           + f"; a token costs the less of t(1) and a round of K = {ROWS - 1} at α {ROUND_ALPHA}, c {ROUND_C}, "
             f"(K·c·t(1) + t({ROWS})) / E"
           + f"; rows checked here at {', '.join(map(str, ROW_COUNTS))} rows"
           + "".join(f"; {t.path} refused: {t}" for t in refused))
    if cache:
        remember(Path(cache) / CACHE_FILE, key, {"path": best.path, "why": why, "timings": [asdict(t) for t in timings],
                            "rows": [asdict(t) | {"exact": t.exact} for t in tests]})
    return Choice(best.path, KERNELS[best.path].activations, why, tuple(timings), tuple(tests), exact=True)


def machine_key(hidden: int, inner: int, gguf: bool = False) -> str:
    """What a remembered choice holds for: this CPU (model and speed flags), this torch build, these shapes, and
    whether the model has GGUF blocks (gguf-int4 is offered only then)."""
    limits = " ".join(f"{name}={os.environ[name]}" for name in ISA_LIMITS if name in os.environ)  # an emulation
    return (f"{machine('cpu').split(',')[0]} | {cpu_flags()} | {torch.backends.cpu.get_cpu_capability()} {limits} | "
            f"torch {torch.__version__} | {hidden}x{inner}" + (" | gguf blocks" if gguf else ""))


# --- the loaded model, checked -------------------------------------------------------------------------------------

TV_TOLERANCE = 1e-4  # the most total variation between a row's next-token distribution computed beside others and
#                      alone that still counts as exact: float32 and float16-fbgemm measure about 2e-6 on the packaged
#                      target, bfloat16 0.03


@dataclass(frozen=True)
class RowCheck:
    """ROWS new tokens through the loaded model at once, against the same tokens one at a time on the same cache."""

    total_variation: float  # the largest over the rows, between their next-token distributions
    argmax_same: bool  # every row's most likely next token the same both ways

    @property
    def exact(self) -> bool:
        return self.argmax_same and self.total_variation <= TV_TOLERANCE

    def __str__(self) -> str:
        return (f"{ROWS} tokens scored together and one at a time differ by total variation "
                f"{self.total_variation:.1e}, argmax {'identical' if self.argmax_same else 'DIFFERENT'}")


def check_loaded(target, choice: Choice) -> str:
    """The choice's reason, with the loaded target checked on its path (check_rows) and, on a path that reads a GGUF
    file's blocks, which layers compute from them (FileBlocks.layers_said: a tensor no kernel of the path reads runs
    another exact way, and is said so): ValueError where the path that should be exact measures otherwise on this
    model."""
    if not choice.exact:
        return choice.why
    rows = check_rows(target)
    if not rows.exact:
        raise ValueError(f"the {choice.path} kernels are not exact on this target ({rows}): run with --kernels "
                         f"float32, the reference")
    file = choice.kernel.file if choice.kernel else None
    said = file.layers_said(target) + "; " if file else ""
    return f"{choice.why}; {said}checked on the loaded target: {rows}"


def check_rows(model, context: int = 24) -> RowCheck:
    """The check itself on the loaded model: `context` cached tokens, then ROWS more together and one at a time."""
    from transformers import DynamicCache

    vocab = model.config.vocab_size
    ids = torch.arange(context + ROWS).remainder(vocab - 1).add(1)[None]  # any ids the model has
    device = next(model.parameters()).device
    with torch.inference_mode():
        cache = DynamicCache()
        model(input_ids=ids[:, :context].to(device), cache=cache, use_cache=True)
        together = model(input_ids=ids[:, context:].to(device), cache=cache, use_cache=True).logits[0]
        cache.crop(-ROWS)  # transformers 5: crop(-n) drops the last n
        alone = torch.cat([model(input_ids=ids[:, context + i:context + i + 1].to(device), cache=cache,
                                 use_cache=True).logits[0] for i in range(ROWS)])
    p, q = torch.softmax(together.float(), -1), torch.softmax(alone.float(), -1)
    return RowCheck(float(0.5 * (p - q).abs().sum(-1).max()), bool(torch.equal(p.argmax(-1), q.argmax(-1))))

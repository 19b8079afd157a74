"""Medusa heads (Cai et al. 2024): n small blocks on the target's last hidden state, head i guessing the token i + 1
places past the next one, each read out through the target's own output layer (frozen, shared, not copied).

    heads = MedusaHeads(target, n=3)          # W = 0: every head starts as the target's own next-token guess
    logits = heads(hidden)                    # (n, V) from the hidden state (H,) of one position
    save_heads(heads, provenance, folder)     # beside the model cache; load_heads refuses another target's

A head is a residual block, x + SiLU(W x + b), then the target's final LM head: hidden² + hidden parameters a head
(7.1 M floats a head for the packaged 1.5B target), not a copy of its 151936 × 1536 vocabulary matrix. W and b start
at zero, so an untrained head is exactly the next-token guess, and training moves it from there (Medusa zeroes W).
The hidden state is what the target's decoder stack outputs after its final norm, the row its LM head reads.

Heads are trained for one target (engine/heads_train.py); a file of heads records the target's fingerprint
(`fingerprint`: its shapes and a sample of its weights, rounded to bfloat16 so a float32 and a bfloat16 load of the
same weights agree), and loading them for another target is refused with a sentence.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from specviz.drafters.heads import EAGLE, KIND_NAMES, MEDUSA, TRAIN_COMMAND, how_to_train
from specviz.engine.pairs import PACKAGED_PREFIX, cache_root

WEIGHTS, PROVENANCE = "heads.safetensors", "provenance.json"
FOLDER = "drafting-heads"  # under the model cache: FOLDER / target name / kind


class ResBlock(torch.nn.Module):
    """x + SiLU(W x + b), with W and b zero at first: the identity until trained."""

    def __init__(self, hidden: int):
        super().__init__()
        self.linear = torch.nn.Linear(hidden, hidden)
        torch.nn.init.zeros_(self.linear.weight)
        torch.nn.init.zeros_(self.linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.nn.functional.silu(self.linear(x))


class MedusaHeads(torch.nn.Module):
    """n residual blocks sharing the target's LM head. `lm_head` is the target's own module (its parameters count as
    shared, engine/memory.py); only `blocks` are trained, saved and moved between dtypes."""

    kind = MEDUSA

    def __init__(self, target, n: int = 3):
        super().__init__()
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 8:
            raise ValueError(f"the number of heads must be a whole number from 1 to 8, got {n!r}")
        hidden = target.config.hidden_size
        self.blocks = torch.nn.ModuleList(ResBlock(hidden) for _ in range(n))
        self.lm_head = target.lm_head
        weight = target.lm_head.weight
        self.blocks.to(device=weight.device, dtype=weight.dtype)
        self.provenance: Provenance | None = None

    @property
    def n(self) -> int:
        return len(self.blocks)

    @property
    def own(self) -> torch.nn.Module:
        """What is trained and saved: the blocks (the LM head is the target's)."""
        return self.blocks

    def to_target_dtype(self) -> "MedusaHeads":
        """The blocks in the LM head's dtype, as they run once loaded (training keeps them in float32)."""
        self.blocks.to(self.lm_head.weight.dtype)
        return self

    @property
    def title(self) -> str:
        """What a trace names the drafter: '3 Medusa heads'."""
        return f"{self.n} Medusa head{'s' * (self.n != 1)}"

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits (..., n, V) from hidden states (..., H): head i's guess at the token i + 1 places past the next."""
        x = hidden.to(self.blocks[0].linear.weight.dtype)
        return self.lm_head(torch.stack([block(x) for block in self.blocks], dim=-2).to(self.lm_head.weight.dtype))

    def head(self, i: int, hidden: torch.Tensor) -> torch.Tensor:
        """Head i's logits (..., V) alone (training reads one head at a time; its blocks may be float32 there)."""
        block = self.blocks[i]
        return self.lm_head(block(hidden.to(block.linear.weight.dtype)).to(self.lm_head.weight.dtype))


@dataclass
class Provenance:
    """Where a file of heads comes from: what a student (or a loader) reads before trusting it."""

    kind: str  # MEDUSA or EAGLE
    target_name: str
    target_hash: str  # fingerprint(target) when they were trained
    heads: int  # how many heads (EAGLE: the steps it was trained to draft)
    hidden: int
    data: str  # the text trained on, in words
    train_tokens: int
    heldout_tokens: int
    steps: int
    loss: float  # the last steps' mean training loss
    agreement: list[float] = field(default_factory=list)  # per head: top-1 agreement with the target, held out
    seconds: float = 0.0
    created: str = ""  # UTC, ISO 8601
    untrained: list[float] = field(default_factory=list)  # the same agreement before training (where it started)
    subset: int = 0  # the vocabulary subset the training's softmax ran over (heads_teacher.Subset; 0: all of it)
    subset_mass: float = 0.0  # the share of the soft labels' probability that subset kept
    phases: dict = field(default_factory=dict)  # seconds each phase took: teacher, training, held-out check
    machine: str = ""  # where it was trained, in words (engine/machine.py)


def draft_cost(heads, target, repeats: int = 5) -> tuple[float, float]:
    """(seconds for one draft: every Medusa head from one hidden state, or one EAGLE step over a full window; seconds
    for one target pass over one token at an empty context), each the median of `repeats` timed calls after one
    untimed: what a draft costs beside a pass."""
    device = heads.lm_head.weight.device
    hidden = torch.zeros(target.config.hidden_size, device=device)
    token = torch.tensor([[0]], device=device)
    if heads.kind == EAGLE:
        from specviz.engine.eagle import WINDOW
        window, tokens = hidden.expand(1, WINDOW, -1), token.expand(1, WINDOW)
        step = lambda: heads.logits(heads.predict(window, tokens))  # noqa: E731
    else:
        step = lambda: heads(hidden)  # noqa: E731

    def median(call) -> float:
        call()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        return sorted(times)[len(times) // 2]

    with torch.inference_mode():
        return median(step), median(lambda: target(input_ids=token))


def fingerprint(model) -> str:
    """A hash of the model's parameter names and shapes and of 64 values of each, rounded to bfloat16 (so the same
    weights loaded in float32 or bfloat16 agree); 16 hex digits. Reads a few kilobytes, not the model."""
    digest = hashlib.sha256()
    for name, p in model.named_parameters():
        flat = p.detach().reshape(-1)
        sample = flat[:: max(1, flat.numel() // 64)][:64].to("cpu", torch.bfloat16).float()
        digest.update(f"{name}{tuple(p.shape)}".encode())
        digest.update(sample.numpy().tobytes())
    return digest.hexdigest()[:16]


def heads_folder(root: Path, target_name: str, kind: str = MEDUSA) -> Path:
    """Where heads for the target named so live under the model cache `root` (pairs.cache_root())."""
    return Path(root) / FOLDER / re.sub(r"[^A-Za-z0-9._-]+", "_", target_name) / kind


def check_heads_trained(settings, target_id: str) -> None:
    """ValueError saying how to train them, before any model loads, where a run would draft with heads that were never
    trained for the target `target_id` names (a preset's "packaged:<name>", a hub id or a folder)."""
    spec = settings.drafter_spec
    name = target_id.removeprefix(PACKAGED_PREFIX)
    if spec.trained and read_provenance(heads_folder(cache_root(), name, spec.trained)) is None:
        raise ValueError(how_to_train(spec.trained, name))


def save_heads(heads: MedusaHeads, provenance: Provenance, folder: Path) -> Path:
    """Write the blocks' weights and the provenance; the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().float().cpu().contiguous() for k, v in heads.own.state_dict().items()}
    save_file(weights, str(folder / WEIGHTS))
    (folder / PROVENANCE).write_text(json.dumps(asdict(provenance), indent=1))
    heads.provenance = provenance
    return folder


def read_provenance(folder: Path) -> Provenance | None:
    """The provenance saved in folder, or None where no heads were saved there."""
    path = Path(folder) / PROVENANCE
    if not path.is_file() or not (Path(folder) / WEIGHTS).is_file():
        return None
    try:
        return Provenance(**json.loads(path.read_text()))
    except (ValueError, TypeError) as e:
        raise ValueError(f"the heads' provenance in {folder} is unreadable ({e}); train them again with "
                         f"`{TRAIN_COMMAND}`") from None


def builder(kind: str):
    """The class that holds drafting weights of `kind`: MedusaHeads, or eagle.EagleDrafter."""
    if kind == EAGLE:
        from specviz.engine.eagle import EagleDrafter  # eagle.py imports this module's neighbours, not this module
        return EagleDrafter
    return MedusaHeads


def load_heads(folder: Path, target, target_name: str, build=None):
    """The heads (or EAGLE layer) saved in folder, on the target's device and dtype; None where none were saved
    there; ValueError, in a sentence, for weights trained for another target (another fingerprint)."""
    provenance = read_provenance(folder)
    if provenance is None:
        return None
    build = build or builder(provenance.kind)
    mine = fingerprint(target)
    if provenance.target_hash != mine:
        were = "were" if provenance.kind == MEDUSA else "was"
        raise ValueError(f"the {KIND_NAMES.get(provenance.kind, provenance.kind)} in {folder} {were} trained for "
                         f"{provenance.target_name} "
                         f"(fingerprint {provenance.target_hash}), not for this target, {target_name} (fingerprint "
                         f"{mine}): heads guess from one model's hidden states only. Train heads for it with "
                         f"`{TRAIN_COMMAND}`")
    heads = build(target, provenance.heads)
    weights = load_file(str(Path(folder) / WEIGHTS))
    heads.own.load_state_dict({k: v.to(heads.lm_head.weight.dtype) for k, v in weights.items()})
    heads.provenance = provenance
    return heads.eval()

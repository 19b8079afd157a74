"""What every trained drafter (Medusa heads, the EAGLE-style layer) keeps beside the model cache: where its weights
come from (`Provenance`), the target they were trained for (`fingerprint`), and saving, finding and loading them.

    save_trained(drafter, provenance, trained_folder(cache_root(), target_name, drafter.kind))
    drafter = load_trained(folder, target, target_name)   # None where none was saved; another target's refused

A file of weights records the target's fingerprint (its shapes and a sample of its weights, rounded to bfloat16 so a
float32 and a bfloat16 load of the same weights agree), and loading them for another target is refused with a
sentence. The models themselves are engine/medusa.py and engine/eagle.py; their training is specviz/train/.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from specviz.drafters.trained import EAGLE, KIND_NAMES, MEDUSA, TRAIN_COMMAND, how_to_train
from specviz.engine.eagle import WINDOW, EagleDrafter
from specviz.engine.medusa import MedusaHeads
from specviz.models.packaged import PACKAGED_PREFIX, cache_root
from specviz.models.fingerprint import fingerprint
from specviz.models.kernels import put_linears_on
from specviz.models.timer import median_s

WEIGHTS, PROVENANCE = "heads.safetensors", "provenance.json"
VOCAB_KEY = "vocab_ids"  # in WEIGHTS beside the drafter's own weights: the tokens it drafts over, where not all
FOLDER = "drafting-heads"  # under the model cache: FOLDER / target name / kind


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
    subset: int = 0  # the vocabulary subset the training's softmax ran over (train/teacher.Subset; 0: all of it)
    subset_mass: float = 0.0  # the share of the soft labels' probability that subset kept
    phases: dict = field(default_factory=dict)  # seconds each phase took: teacher, training, held-out check
    machine: str = ""  # where it was trained, in words (models/machine.py)
    chain: list[float] = field(default_factory=list)  # held out: per k, the share where heads (steps) 1 … k all agree
    tree: float = 0.0  # held out: tokens a target pass would give with the default tree, greedy (0: not measured)
    draft_vocab: int = 0  # the tokens it drafts over (readout.SubsetReadout; 0: every token)
    draft_vocab_mass: float = 0.0  # the share of the target's own next-token probability on its text those keep
    vocab_agreement: dict = field(default_factory=dict)  # held out: head 1's agreement drafting over n tokens, by n


def draft_cost(heads, target, repeats: int = 5) -> tuple[float, float]:
    """(seconds for one draft: every Medusa head from one hidden state, or one EAGLE step over a full window; seconds
    for one target pass over one token at an empty context), each the median of `repeats` timed calls after one
    untimed (timer.median_s): what a draft costs beside a pass."""
    device = heads.device
    hidden = torch.zeros(target.config.hidden_size, device=device)
    token = torch.tensor([[0]], device=device)
    if heads.kind == EAGLE:
        window, tokens = hidden.expand(1, WINDOW, -1), token.expand(1, WINDOW)
        step = lambda i: heads.logits(heads.predict(window, tokens))  # noqa: E731
    else:
        step = lambda i: heads(hidden)  # noqa: E731
    with torch.inference_mode():
        return median_s(step, device, repeats), median_s(lambda i: target(input_ids=token), device, repeats)


def trained_folder(root: Path, target_name: str, kind: str = MEDUSA) -> Path:
    """Where a trained drafter (Medusa heads or the EAGLE layer) of `kind` for the target named so lives under the
    model cache `root` (packaged.cache_root()). The folder is still named FOLDER, "drafting-heads", so that weights
    saved before keep loading."""
    return Path(root) / FOLDER / re.sub(r"[^A-Za-z0-9._-]+", "_", target_name) / kind


def check_trained(settings, target_id: str) -> None:
    """ValueError saying how to train it, before any model loads, where a run would draft with a trained drafter
    (Medusa heads or the EAGLE layer) never trained for the target `target_id` names (a preset's "packaged:<name>", a
    hub id or a folder)."""
    spec = settings.drafter_spec
    name = target_id.removeprefix(PACKAGED_PREFIX)
    if spec.trained and read_provenance(trained_folder(cache_root(), name, spec.trained)) is None:
        raise ValueError(how_to_train(spec.trained, name))


def save_trained(drafter, provenance: Provenance, folder: Path) -> Path:
    """Write a trained drafter's own weights (Medusa heads or the EAGLE layer) and the provenance; the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().float().cpu().contiguous() for k, v in drafter.own.state_dict().items()}
    if drafter.vocab_ids is not None:  # the tokens it drafts over (readout.SubsetReadout)
        weights[VOCAB_KEY] = drafter.vocab_ids.cpu().contiguous()
    save_file(weights, str(folder / WEIGHTS))
    (folder / PROVENANCE).write_text(json.dumps(asdict(provenance), indent=1))
    drafter.provenance = provenance
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
    """The class that holds drafting weights of `kind`: medusa.MedusaHeads, or eagle.EagleDrafter."""
    return EagleDrafter if kind == EAGLE else MedusaHeads


def load_trained(folder: Path, target, target_name: str, build=None, path: str = ""):
    """The trained drafter (Medusa heads or the EAGLE layer) saved in folder, on the target's device and dtype, its
    own layers and its output rows on the kernel `path` (models/kernels.py); None where none was saved there;
    ValueError, in a sentence, for weights trained for another target (another fingerprint)."""
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
                         f"{mine}): a trained drafter guesses from one model's hidden states only. Train one for it "
                         f"with `{TRAIN_COMMAND}`")
    drafter = build(target, provenance.heads)
    weights = load_file(str(Path(folder) / WEIGHTS))
    vocab = weights.pop(VOCAB_KEY, None)
    drafter.own.load_state_dict({k: v.to(drafter.dtype) for k, v in weights.items()})
    put_linears_on(drafter.own, path)
    if vocab is not None:
        drafter.use_vocab(vocab, path)
    drafter.provenance = provenance
    return drafter.eval()

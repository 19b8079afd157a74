"""The teacher's side of training drafting heads: what the frozen target says about the offline text (text.py),
read once, kept on disk beside the model cache, and the vocabulary subset the training's softmax runs over.

    held, train, seconds = read_teacher(target, data, top=32, folder=..., report=..., deadline=...)
    subset = Subset.of([held, train], size=8192)      # the tokens the target ranked in its top 32 anywhere, capped

1. Per window of text the target reads once (inference mode, in the dtype it was loaded in) and keeps per position
   its feature (the hidden state its LM head reads, after the final norm: what Medusa heads and the EAGLE layer read),
   the window's tokens, and its next-token distribution as its top `top` tokens and their probabilities (the soft
   labels, renormalised over those `top`; the rest, usually a few percent of the mass, is dropped to keep 150k-wide
   rows out of memory).
2. On disk (`teacher.safetensors` under drafting-heads/<target>/): the windows read so far, keyed by the target's
   fingerprint, the window length, the held-out rate and `top`. A later training (more text, or EAGLE after Medusa)
   reuses every window whose tokens match and reads only the ones it lacks: the teacher is by far the dearest phase
   on a CPU (docs/drafters.md gives its throughput).
3. The subset: a training step's softmax over all 151,936 tokens of the packaged target is 3 × 256 × 1536 × 151,936
   multiply-adds forward for three heads, more backward. The soft labels only ever name the tokens the target put in
   its top `top` on this text; the loss is taken over those tokens (the most probable `size` of them by total label
   mass), so a step costs a 20th. This approximates the full softmax's normaliser by the subset's: tokens outside it
   get no gradient pushing them down. Drafting still reads the full LM head, every token included, and the held-out
   agreement is measured through it (fit.py).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from safetensors.torch import load_file, save_file

Report = Callable[[str, float, float], None]  # (phase, fraction done, seconds left) -> None
TEACHER_FILE = "teacher.safetensors"


@dataclass
class Teacher:
    """What the target said about a set of windows: per position its feature, the token there, its top tokens."""

    hidden: torch.Tensor  # (windows, length, H) the target's feature at each position, bfloat16 (half the memory)
    tokens: torch.Tensor  # (windows, length) the text's token at each position
    ids: torch.Tensor  # (windows, length, top) the target's top tokens at each position (the next token's distribution)
    probs: torch.Tensor  # (windows, length, top) their probabilities, renormalised to sum to 1, float16

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def positions(self) -> int:
        return self.tokens.numel()

    def take(self, n: int) -> "Teacher":
        """The first n windows."""
        return Teacher(self.hidden[:n], self.tokens[:n], self.ids[:n], self.probs[:n])


def empty_teacher(length: int, hidden: int, top: int) -> Teacher:
    return Teacher(torch.zeros(0, length, hidden, dtype=torch.bfloat16), torch.zeros(0, length, dtype=torch.long),
                   torch.zeros(0, length, top, dtype=torch.long), torch.zeros(0, length, top, dtype=torch.float16))


def cat_teachers(a: Teacher, b: Teacher) -> Teacher:
    return Teacher(*(torch.cat([x, y]) for x, y in zip((a.hidden, a.tokens, a.ids, a.probs),
                                                       (b.hidden, b.tokens, b.ids, b.probs))))


def teach(target, windows: list[list[int]], top: int, report: Report | None = None, deadline: float = math.inf,
          phase: str = "target reads") -> Teacher:
    """The target's features and soft labels on `windows` (stops before `deadline`, a perf_counter time, having read
    at least one)."""
    device = next(target.parameters()).device
    hidden, tokens, ids, probs, t0 = [], [], [], [], time.perf_counter()
    for i, window in enumerate(windows):
        if time.perf_counter() > deadline and hidden:
            break
        with torch.inference_mode():
            states = target.model(input_ids=torch.tensor([window], device=device)).last_hidden_state[0]
            p = torch.softmax(target.lm_head(states).float(), -1)
            values, index = torch.topk(p, top, dim=-1)
        hidden.append(states.to("cpu", torch.bfloat16))
        tokens.append(torch.tensor(window))
        ids.append(index.cpu())
        probs.append((values / values.sum(-1, keepdim=True)).half().cpu())
        if report:
            spent = time.perf_counter() - t0
            report(f"{phase} {len(windows)} windows", (i + 1) / len(windows), spent / (i + 1) * (len(windows) - i - 1))
    if not hidden:
        return empty_teacher(len(windows[0]) if windows else 0, target.config.hidden_size, top)
    return Teacher(torch.stack(hidden), torch.stack(tokens), torch.stack(ids), torch.stack(probs))


# --- the disk cache ----------------------------------------------------------------------------------------------

def _key(fingerprint: str, length: int, holdout: int, top: int) -> dict:
    return {"target": fingerprint, "length": length, "holdout": holdout, "top": top}


def load_teacher(folder: Path, key: dict) -> tuple[Teacher, Teacher] | None:
    """(held out, train) saved in folder under the same key, or None (none saved, another key, unreadable)."""
    return load_parts(folder, TEACHER_FILE, key, ("held", "train"))


def save_teacher(folder: Path, key: dict, held: Teacher, train: Teacher) -> None:
    save_parts(folder, TEACHER_FILE, key, {"held": held, "train": train})


def load_parts(folder: Path, file: str, key: dict, parts: tuple[str, ...]) -> tuple[Teacher, ...] | None:
    """The Teachers saved in folder/file under `key`, one per part, or None (none saved, another key, unreadable)."""
    path, meta = Path(folder) / file, Path(folder) / (file + ".json")
    try:
        if not path.is_file() or json.loads(meta.read_text()) != key:
            return None
        t = load_file(str(path))
        return tuple(Teacher(t[f"{part}.hidden"], t[f"{part}.tokens"], t[f"{part}.ids"], t[f"{part}.probs"])
                     for part in parts)
    except (OSError, ValueError, KeyError):
        return None


def save_parts(folder: Path, file: str, key: dict, parts: dict[str, Teacher]) -> None:
    """Save the Teachers under `key`, written whole and then renamed (a killed save leaves the old file)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {f"{part}.{name}": getattr(t, name).contiguous()
               for part, t in parts.items() for name in ("hidden", "tokens", "ids", "probs")}
    save_file(tensors, str(folder / (file + ".part")))
    (folder / (file + ".part")).replace(folder / file)
    (folder / (file + ".json")).write_text(json.dumps(key))


def _matching(cached: Teacher, windows: list[list[int]]) -> int:
    """How many of the first windows the cache holds with exactly these tokens (another Python or other packages
    give other text: those are read again)."""
    n = 0
    for window, saved in zip(windows, cached.tokens):
        if saved.tolist() != window:
            break
        n += 1
    return n


@dataclass
class TeacherRead:
    """The teacher's data for a training, and how it came: read now or from the disk cache."""

    held: Teacher
    train: Teacher
    cached_windows: int  # windows taken from the disk cache
    read_windows: int  # windows the target read now
    read_seconds: float  # the time the target spent reading them


def read_teacher(target, fingerprint: str, held_windows: list[list[int]], train_windows: list[list[int]], holdout: int,
                 top: int, folder: Path | None, report: Report | None = None, deadline: float = math.inf,
                 held_deadline: float = math.inf) -> TeacherRead:
    """The target's features and soft labels on the held-out windows until `held_deadline` (read first, at least one:
    the check never loses all its text to the clock), then on the training windows until `deadline` (at least one);
    windows saved in `folder` before are reused, and what was read now is saved there (folder None: no disk cache),
    so a later training reads on where this one stopped."""
    length = len((held_windows or train_windows)[0])
    key = _key(fingerprint, length, holdout, top)
    empty = empty_teacher(length, target.config.hidden_size, top)
    c_held, c_train = (load_teacher(folder, key) if folder is not None else None) or (empty, empty)
    n_held, n_train = _matching(c_held, held_windows), _matching(c_train, train_windows)
    if n_held < min(len(c_held), len(held_windows)):  # other text than the cache's: read it all again
        c_held, c_train, n_held, n_train = empty, empty, 0, 0
    t0 = time.perf_counter()
    held = c_held.take(n_held)
    if n_held < len(held_windows):
        held = cat_teachers(held, teach(target, held_windows[n_held:], top, report, held_deadline,
                                        "target reads held-out"))
    train = c_train.take(n_train)
    if n_train < len(train_windows):
        train = cat_teachers(train, teach(target, train_windows[n_train:], top, report, deadline))
    read, seconds = len(held) - n_held + len(train) - n_train, time.perf_counter() - t0
    if folder is not None and read:  # keep the longer of what was cached and what is known now
        save_teacher(folder, key, held if len(held) >= len(c_held) else c_held,
                     train if len(train) >= len(c_train) else c_train)
    return TeacherRead(held, train, n_held + n_train, read, seconds)


# --- the vocabulary subset ---------------------------------------------------------------------------------------

def ranked_tokens(teachers: list[Teacher]) -> tuple[torch.Tensor, torch.Tensor]:
    """(every token the teachers' labels name, most used first; its total label probability): how much the target
    uses each token on this text (FR-Spec ranks a drafter's vocabulary by such counts)."""
    ids = torch.cat([t.ids.reshape(-1) for t in teachers])
    probs = torch.cat([t.probs.reshape(-1).float() for t in teachers])
    named, where = torch.unique(ids, return_inverse=True)
    mass = torch.zeros(len(named)).index_add_(0, where, probs)
    order = torch.argsort(mass, descending=True)
    return named[order], mass[order]


@dataclass(frozen=True)
class Subset:
    """The tokens a training's softmax runs over, and the label mass they keep."""

    ids: torch.Tensor  # (S,) vocabulary ids, ascending
    mass: float  # the share of all soft-label probability the subset keeps
    seen: int  # how many distinct tokens the labels named at all

    @classmethod
    def of(cls, teachers: list[Teacher], size: int) -> "Subset":
        """The `size` tokens with the most total label probability over the teachers' positions (all of them where
        fewer were named)."""
        ranked, mass = ranked_tokens(teachers)
        keep = min(size, len(ranked))
        return cls(ranked[:keep].sort().values, float(mass[:keep].sum() / mass.sum()), len(ranked))

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, lm_head: torch.nn.Module) -> torch.Tensor:
        """The LM head's rows (S, H) for these tokens, float32 (the training's output layer; frozen)."""
        return lm_head.weight.detach()[self.ids].float()

    def others(self, vocab: int) -> torch.Tensor:
        """The vocabulary ids outside the subset."""
        inside = torch.zeros(vocab, dtype=torch.bool)
        inside[self.ids] = True
        return (~inside).nonzero().flatten()

    def labels(self, ids: torch.Tensor, probs: torch.Tensor, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Soft labels (..., top) as positions in the subset, with the probability of tokens outside it zeroed (the
        rest renormalised): (positions, probs), float32."""
        where = torch.full((vocab,), -1, dtype=torch.long)
        where[self.ids] = torch.arange(len(self.ids))
        pos = where[ids]
        p = probs.float() * (pos >= 0)
        return pos.clamp(min=0), p / p.sum(-1, keepdim=True).clamp(min=1e-9)


class StepRows:
    """The output rows one training step's softmax runs over: the subset's (the labels point into these), then a fresh
    random sample of `negatives` tokens outside it. Without the sample nothing would ever push a token outside the
    subset down, and a drafter could learn to raise one above the rest (the full LM head reads every token when it
    drafts); the sample reaches every token now and then at a small cost."""

    def __init__(self, subset: Subset, lm_head: torch.nn.Module, negatives: int, seed: int = 0):
        self.inside = subset.rows(lm_head)
        self.weight, self.others = lm_head.weight.detach(), subset.others(lm_head.weight.shape[0])
        self.negatives, self.gen = min(negatives, len(self.others)), torch.Generator().manual_seed(seed)

    def __call__(self) -> torch.Tensor:
        if not self.negatives:
            return self.inside
        pick = self.others[torch.randperm(len(self.others), generator=self.gen)[:self.negatives]]
        return torch.cat([self.inside, self.weight[pick].float()])

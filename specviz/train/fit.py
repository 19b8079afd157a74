"""Training drafting weights for a frozen target on this machine, by self-distillation: Medusa heads (Medusa-1, the
backbone frozen) or an EAGLE-style layer (EAGLE-1's losses).

    heads, provenance = train_heads(target, tokenizer, "Qwen2.5-Coder-1.5B-Instruct", TrainPlan(), folder=...)

1. Teacher (teacher.py): the target reads windows of offline text (text.py) once, held-out windows first;
   per position its feature and its top-`top` next-token distribution are kept, and saved beside the model cache, so
   a second training (more text, or EAGLE after Medusa) reads only what it lacks.
2. Fit, Adam on the drafter's own weights only, the target's labels (not the text's tokens: the drafter should guess
   what this target would say), the softmax over the vocabulary subset the labels name (teacher.Subset):
   - Medusa: head i at position t learns the target's distribution at t + 1 + i (the token i + 1 places past the
     next one), by cross-entropy against those soft labels;
   - EAGLE: at each position t the layer reads (f_t, the token x_{t+1}) and guesses f_{t+1}; loss = smooth L1 to the
     target's f_{t+1} + 0.1 × the soft-label cross-entropy of its LM-head readout (EAGLE-1's weights), with the
     input features jittered by uniform noise (EAGLE-1's trick so that drafting on its own, imperfect, guesses is
     less of a surprise). Attention sees the same window it will see when drafting (eagle.WINDOW).
3. Held out: each head's (each EAGLE step's) top-1 agreement with the target's own top token at its position,
   through the FULL LM head, as drafting reads it; before training (where it started) and after.

Every phase reports progress with an estimate of the time left; `TrainPlan.minutes` bounds the whole: the teacher
stops reading held-out text at HELD_SHARE of it and training text at `teacher_share` (each after one window at
least; what it read is cached, so the next training reads on), the fit where the held-out check would overrun it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch.nn.functional as F

from specviz.drafters.trained import EAGLE, KINDS, MEDUSA
from specviz.engine.medusa import MedusaHeads
from specviz.engine.fingerprint import fingerprint
from specviz.engine.trained import Provenance, builder
from specviz.train.text import windows
from specviz.train.teacher import Report, StepRows, Subset, Teacher, read_teacher

STEPS = {MEDUSA: 3, EAGLE: 4}  # heads (Medusa) or draft steps (EAGLE) when none are asked for
EVAL_POSITIONS = {MEDUSA: 1024, EAGLE: 192}  # held-out positions checked (evenly spaced), before and after training:
#   each costs a full LM head a head (an EAGLE step also a window of its layer), so the check's time stays a minute or
#   two of the 15 on a 2-core CPU; the agreement's standard error is then about 1.5 points (Medusa), 3.5 (EAGLE)
HELD_SHARE = 0.15  # the teacher reads held-out text until this share of the bound (at least one window)
FEATURE_WEIGHT, LABEL_WEIGHT, NOISE = 1.0, 0.1, 0.2  # EAGLE-1's loss weights and its uniform noise's width


@dataclass(frozen=True)
class TrainPlan:
    """What a training reads and does; the defaults fit 15 minutes on this project's 2-core CPU (docs/drafters.md)."""

    kind: str = MEDUSA
    heads: int | None = None  # Medusa heads, or the EAGLE layer's draft steps (None: STEPS[kind])
    tokens: int = 12_288  # teacher tokens read, held-out windows included
    length: int = 256  # tokens a window
    holdout: int = 10  # every 10th window is held out
    epochs: int = 8  # passes over the training positions at most (the time bound usually ends it first)
    batch: int = 256  # positions a step
    lr: float = 1e-3
    top: int = 32  # soft-label tokens kept a position
    subset: int = 8192  # tokens the training softmax runs over (teacher.Subset)
    negatives: int = 1024  # and a fresh sample of other tokens a step (teacher.StepRows)
    minutes: float = 15.0  # the whole training's bound
    teacher_share: float = 0.6  # the teacher reads training text until this share of the bound
    seed: int = 0

    @property
    def n(self) -> int:
        return self.heads if self.heads is not None else STEPS[self.kind]


@dataclass
class Fitted:
    steps: int
    loss: float  # mean of the last 10 steps


class Clock:
    """Progress of one phase: its fraction done and the time left at its pace so far, bounded by a deadline."""

    def __init__(self, report: Report | None, phase: str, total: int, deadline: float = math.inf):
        self.report, self.phase, self.total, self.deadline = report, phase, total, deadline
        self.t0 = time.perf_counter()

    def tick(self, done: int, phase: str | None = None) -> None:
        if not self.report:
            return
        now = time.perf_counter()
        left = min((now - self.t0) / max(1, done) * (self.total - done), max(0.0, self.deadline - now))
        fraction = 1.0 if done >= self.total else (now - self.t0) / max(1e-9, now - self.t0 + left)
        self.report(phase or self.phase, min(1.0, fraction), left if done < self.total else 0.0)

    def end(self, phase: str) -> None:
        """The phase is over (all done, or stopped by the time bound): the bar at its end."""
        if self.report:
            self.report(phase, 1.0, 0.0)


def _learn(optimizer, loss: torch.Tensor, losses: list[float], clock: Clock, phase: str) -> None:
    """One optimiser step on `loss`, kept in `losses` and reported with it (Medusa's fit and EAGLE's alike)."""
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(float(loss.detach()))
    clock.tick(len(losses), f"{phase} (loss {losses[-1]:.3f})")


def _ended(clock: Clock, losses: list[float], phase: str) -> Fitted:
    last = sum(losses[-10:]) / max(1, len(losses[-10:]))
    clock.end(f"{phase} (loss {last:.3f}, {len(losses)} steps)")
    return Fitted(len(losses), last)


# --- Medusa ------------------------------------------------------------------------------------------------------

def head_pairs(teacher: Teacher, head: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(hidden (P, H), label ids (P, top), label probs (P, top)) for head `head`: the feature at t, the target's
    distribution at t + 1 + head, over every window."""
    shift = 1 + head
    h = teacher.hidden[:, :-shift].reshape(-1, teacher.hidden.shape[-1])
    return h, teacher.ids[:, shift:].reshape(h.shape[0], -1), teacher.probs[:, shift:].reshape(h.shape[0], -1)


def soft_loss(logits: torch.Tensor, ids: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of logits (P, V') against soft labels (ids into those V' columns):
    −Σ p log softmax(logits)[id]."""
    logp = F.log_softmax(logits.float(), -1)
    return -(probs.float() * logp.gather(-1, ids)).sum(-1).mean()


def fit_medusa(heads: MedusaHeads, teacher: Teacher, subset: Subset, plan: TrainPlan, report: Report | None = None,
               deadline: float = math.inf) -> Fitted:
    """Adam on the blocks, every head each step on `plan.batch` shuffled positions, the softmax over the subset."""
    gen = torch.Generator().manual_seed(plan.seed)
    rows, vocab = StepRows(subset, heads.lm_head, plan.negatives, plan.seed), heads.lm_head.weight.shape[0]
    pairs = []
    for i in range(heads.n):
        h, ids, probs = head_pairs(teacher, i)
        pairs.append((h, *subset.labels(ids, probs, vocab)))
    per_epoch = math.ceil(len(pairs[-1][0]) / plan.batch)
    total, losses = per_epoch * plan.epochs, []
    clock = Clock(report, "heads learn", total, deadline)
    optimizer = torch.optim.Adam(heads.blocks.parameters(), lr=plan.lr)
    for _ in range(plan.epochs):
        orders = [torch.randperm(len(h), generator=gen) for h, _, _ in pairs]
        for j in range(per_epoch):
            if time.perf_counter() > deadline and losses:
                return _ended(clock, losses, "heads learn")
            loss, out = 0.0, rows()  # (S + negatives, H): the frozen output layer's rows this step
            for block, (h, pos, p), order in zip(heads.blocks, pairs, orders):
                pick = order[j * plan.batch:(j + 1) * plan.batch]
                loss = loss + soft_loss(block(h[pick].float()) @ out.T, pos[pick], p[pick])
            _learn(optimizer, loss / heads.n, losses, clock, "heads learn")
    return _ended(clock, losses, "heads learn")


def _spaced(n: int, most: int) -> torch.Tensor:
    """At most `most` indices of range(n), evenly spaced."""
    return torch.linspace(0, n - 1, min(n, most)).round().long().unique() if n else torch.zeros(0, dtype=torch.long)


def agreement_medusa(heads: MedusaHeads, teacher: Teacher, most: int = EVAL_POSITIONS[MEDUSA], batch: int = 256,
                     clock: Clock | None = None) -> list[float]:
    """Each head's top-1 agreement with the target's own top token at its position, on `teacher`'s windows (at most
    `most` positions, evenly spaced), through the full LM head."""
    out = []
    with torch.inference_mode():
        for i in range(heads.n):
            h, ids, _ = head_pairs(teacher, i)
            pick = _spaced(len(h), most)
            h, top, hits = h[pick], ids[pick, 0], 0
            for j in range(0, len(h), batch):
                hits += int((heads.head(i, h[j:j + batch]).argmax(-1) == top[j:j + batch]).sum())
                if clock:
                    clock.tick(i * math.ceil(len(h) / batch) + j // batch + 1)
            out.append(hits / max(1, len(h)))
    return out


def _check_clock(kind: str, heads: int, held: Teacher, report: Report | None, phase: str) -> Clock:
    """The progress of one held-out check: its batches (as agreement_medusa and agreement_eagle cut them)."""
    batches = heads * math.ceil(min(EVAL_POSITIONS[MEDUSA], held.positions) / 256) if kind == MEDUSA else \
        math.ceil(EVAL_POSITIONS[EAGLE] / 64)
    return Clock(report, phase, batches)


# --- EAGLE -------------------------------------------------------------------------------------------------------

def eagle_loss(eagle, teacher: Teacher, pick: torch.Tensor, rows: torch.Tensor, subset: Subset,
               gen: torch.Generator | None) -> torch.Tensor:
    """EAGLE-1's loss on windows `pick`: smooth L1 from the guessed features to the target's, plus LABEL_WEIGHT × the
    soft-label cross-entropy of their readout over `rows` (the subset's first: StepRows). gen None: no input noise."""
    f = teacher.hidden[pick].float()  # (B, L, H)
    inputs = f[:, :-1]
    if gen is not None:
        inputs = inputs + (torch.rand(inputs.shape, generator=gen) - 0.5) * NOISE
    guess = eagle.next_features(inputs, teacher.tokens[pick][:, 1:])  # (B, L-1, H): the feature at t + 1
    pos, p = subset.labels(teacher.ids[pick][:, 1:], teacher.probs[pick][:, 1:], eagle.lm_head.weight.shape[0])
    logp = F.log_softmax(guess @ rows.T, -1)
    label = -(p * logp.gather(-1, pos)).sum(-1).mean()
    return FEATURE_WEIGHT * F.smooth_l1_loss(guess, f[:, 1:]) + LABEL_WEIGHT * label


def fit_eagle(eagle, teacher: Teacher, subset: Subset, plan: TrainPlan, report: Report | None = None,
              deadline: float = math.inf) -> Fitted:
    """Adam on the layer, `plan.batch` positions a step (whole windows), EAGLE-1's loss."""
    gen = torch.Generator().manual_seed(plan.seed)
    rows = StepRows(subset, eagle.lm_head, plan.negatives, plan.seed)
    per_step = max(1, plan.batch // (teacher.tokens.shape[1] - 1))  # windows a step
    per_epoch = math.ceil(len(teacher) / per_step)
    total, losses = per_epoch * plan.epochs, []
    clock = Clock(report, "EAGLE layer learns", total, deadline)
    optimizer = torch.optim.Adam(eagle.layer.parameters(), lr=plan.lr)
    for _ in range(plan.epochs):
        order = torch.randperm(len(teacher), generator=gen)
        for j in range(per_epoch):
            if time.perf_counter() > deadline and losses:
                return _ended(clock, losses, "EAGLE layer learns")
            _learn(optimizer, eagle_loss(eagle, teacher, order[j * per_step:(j + 1) * per_step], rows(), subset, gen),
                   losses, clock, "EAGLE layer learns")
    return _ended(clock, losses, "EAGLE layer learns")


def agreement_eagle(eagle, teacher: Teacher, most: int = EVAL_POSITIONS[EAGLE], batch: int = 64,
                    clock: Clock | None = None) -> list[float]:
    """Each draft step's top-1 agreement with the target's own top token at its position, drafting as a run does
    (eagle.predict on the last WINDOW pairs, then on its own guesses), through the full LM head. Anchors: held-out
    positions a with a full window before them (at most `most`, evenly spaced); the newest token is the text's x_a;
    step s guesses the feature at a + s − 1 and is compared with the target's top token there; the tokens after the
    anchor are the text's (what the target saw)."""
    from specviz.engine.eagle import WINDOW

    length, steps = teacher.tokens.shape[1], eagle.n
    anchors = [(w, a) for w in range(len(teacher)) for a in range(WINDOW, length - steps + 1)]
    anchors = [anchors[i] for i in _spaced(len(anchors), most).tolist()]
    hits = [0] * steps
    with torch.inference_mode():
        for j in range(0, len(anchors), batch):
            w = torch.tensor([a[0] for a in anchors[j:j + batch]])
            a = torch.tensor([a[1] for a in anchors[j:j + batch]])
            back = a[:, None] + torch.arange(-WINDOW, 0)  # positions a − WINDOW .. a − 1: the committed pairs
            f = teacher.hidden[w[:, None], back].float()  # (B, WINDOW, H): f_j
            x = teacher.tokens[w[:, None], back + 1]  # (B, WINDOW): x_{j+1}, the last one the newest token x_a
            for s in range(steps):
                guess = eagle.predict(f, x)  # (B, H): the feature at a + s
                hits[s] += int((eagle.logits(guess).argmax(-1) == teacher.ids[w, a + s, 0]).sum())
                if s + 1 < steps:
                    f = torch.cat([f, guess[:, None].to(f.dtype)], 1)[:, -WINDOW:]
                    x = torch.cat([x, teacher.tokens[w, a + s + 1][:, None]], 1)[:, -WINDOW:]
            if clock:
                clock.tick(j // batch + 1)
    return [h / max(1, len(anchors)) for h in hits]


# --- the whole training ------------------------------------------------------------------------------------------

def train_heads(target, tokenizer, target_name: str, plan: TrainPlan = TrainPlan(), report: Report | None = None,
                folder: Path | None = None, machine: str = ""):
    """Trained drafting weights of `plan.kind` for the frozen `target` and their provenance (the caller saves them:
    heads.save_heads). `folder`: where the teacher's data is cached (None: not cached)."""
    if plan.kind not in KINDS:
        raise ValueError(f"the kind of drafter to train must be one of {', '.join(KINDS)}, got {plan.kind!r}")
    start = time.perf_counter()
    budget = start + plan.minutes * 60
    torch.manual_seed(plan.seed)
    for p in target.parameters():
        p.requires_grad_(False)  # frozen: only the drafter's own weights learn
    drafter = builder(plan.kind)(target, plan.n)  # checks the number before any text is read
    data = windows(tokenizer, plan.tokens, plan.length, plan.holdout)
    if not data.train or not data.heldout:
        raise ValueError(f"too little text to train on: {len(data.train)} training and {len(data.heldout)} held-out "
                         f"windows of {plan.length} tokens (raise --tokens)")
    t_data = time.perf_counter()
    got = read_teacher(target, fingerprint(target), data.heldout, data.train, plan.holdout, plan.top, folder, report,
                       start + plan.teacher_share * plan.minutes * 60, start + HELD_SHARE * plan.minutes * 60)
    t_teacher = time.perf_counter()
    subset = Subset.of([got.train], plan.subset)
    drafter.own.float()  # trained in float32; it runs in the target's dtype once loaded
    check = agreement_eagle if plan.kind == EAGLE else agreement_medusa
    before = check(drafter, got.held, clock=_check_clock(plan.kind, drafter.n, got.held, report,
                                                         "held-out check before training"))
    check_s = time.perf_counter() - t_teacher  # the held-out check after the fit costs the same again
    fit = fit_eagle if plan.kind == EAGLE else fit_medusa
    fitted = fit(drafter, got.train, subset, plan, report, budget - check_s)
    t_fit = time.perf_counter()
    after = check(drafter, got.held, clock=_check_clock(plan.kind, drafter.n, got.held, report, "held-out check"))
    end = time.perf_counter()
    if report:
        report("held-out check", 1.0, 0.0)
    provenance = Provenance(
        kind=plan.kind, target_name=target_name, target_hash=fingerprint(target), heads=drafter.n,
        hidden=target.config.hidden_size, data=data.describe(plan.length, plan.holdout),
        train_tokens=got.train.positions, heldout_tokens=got.held.positions, steps=fitted.steps,
        loss=round(fitted.loss, 4), agreement=[round(a, 4) for a in after], seconds=round(end - start, 1),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"), untrained=[round(a, 4) for a in before],
        subset=len(subset), subset_mass=round(subset.mass, 4), machine=machine,
        phases={"text": round(t_data - start, 1), "teacher": round(t_teacher - t_data, 1),
                "teacher_windows_read": got.read_windows, "teacher_windows_cached": got.cached_windows,
                "fit": round(t_fit - t_teacher - check_s, 1), "check": round(check_s + end - t_fit, 1),
                "checked_positions": min(EVAL_POSITIONS[plan.kind], got.held.positions)})
    return drafter.eval(), provenance

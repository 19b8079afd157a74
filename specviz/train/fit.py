"""The fit and the held-out check of one training (training.py tells a training start to end): `TrainPlan`, what a
training reads and does; the Medusa heads' fit and the EAGLE layer's, Adam on the drafter's own weights with the
softmax over the labels' vocabulary subset (teacher.Subset); the held-out agreement of each head (each EAGLE step)
with the target's top token, with what a greedy chain and a tree would get from it (`Agreement`) and what a smaller
drafting vocabulary costs (`vocab_agreement`); and `Clock`, a phase's progress with the time it has left.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from specviz.drafters.trained import DEFAULT_HEAD_WIDTHS, EAGLE, MEDUSA
from specviz.engine.medusa import MedusaHeads
from specviz.train.teacher import Report, StepRows, Subset, Teacher

STEPS = {MEDUSA: 3, EAGLE: 4}  # heads (Medusa) or draft steps (EAGLE) when none are asked for
EVAL_POSITIONS = {MEDUSA: 1024, EAGLE: 192}  # held-out positions checked (evenly spaced), before and after training:
#   each costs a full LM head a head (an EAGLE step also a window of its layer), so the check's time stays a minute or
#   two of the 15 on a 2-core CPU; the agreement's standard error is then about 1.5 points (Medusa), 3.5 (EAGLE)
FEATURE_WEIGHT, LABEL_WEIGHT, NOISE = 1.0, 0.1, 0.2  # EAGLE-1's loss weights and its uniform noise's width
UNROLL_DECAY = 0.5  # the weight of each further step drafted on the layer's own guesses (eagle_loss)


SHARES = {MEDUSA: (0.7, 0.75), EAGLE: (0.35, 0.4)}  # a kind's answers_share and teacher_share: until when it reads.
#   Answers are what drafters learn most from (2026-12-03, float16-fbgemm: 96 answers in half the bound gave head 1
#   35 % held out, 224 in 0.7 of it 44.8 %); they are kept for the next training of this target, so the EAGLE layer,
#   trained after the heads, reads them again and fits longer: its steps cost 1.3 s against the heads' 0.2 s (with
#   0.7 it fitted 168 s of 934 and agreed 26 % at step 1)


@dataclass(frozen=True)
class TrainPlan:
    """What a training reads and does; the defaults fit 15 minutes on this project's 2-core CPU (docs/drafters.md)."""

    kind: str = MEDUSA
    heads: int | None = None  # Medusa heads, or the EAGLE layer's draft steps (None: STEPS[kind])
    prompts: int = 640  # the most prompts the target answers (data.py; the time bound usually ends it first)
    answer_batch: int = 16  # prompts answered at once: a pass over 16 rows costs little more than over one
    tokens: int = 4096  # offline text the target reads after answering, held-out windows included
    text: Path | None = None  # a course's own files, read before the offline text (--text FOLDER)
    length: int = 128  # tokens a window: an answer's length, and the offline text's windows
    holdout: int = 10  # every 10th prompt's answer and text window is held out
    epochs: int = 16  # passes over the training positions at most (the time bound usually ends it first)
    batch: int = 256  # positions a step
    lr: float = 1e-3
    top: int = 32  # soft-label tokens kept a position
    unroll: int = 2  # EAGLE: further steps trained on its own guesses (eagle_loss's training-time test)
    subset: int = 8192  # tokens the training softmax runs over (teacher.Subset)
    draft_vocab: int = 32768  # tokens it drafts over once trained, the most used first (readout.py; 0: every one)
    negatives: int = 1024  # and a fresh sample of other tokens a step (teacher.StepRows)
    minutes: float = 15.0  # the whole training's bound
    held_share: float = 0.0  # the target answers held-out prompts until this share of the bound, a batch at least:
    #                          one batch, 16 answers (2,048 positions), is twice what the check reads
    answers_share: float | None = None  # then training prompts until this share (None: SHARES[kind])
    teacher_share: float | None = None  # then reads offline text until this share; the rest fits and checks
    seed: int = 0

    @property
    def shares(self) -> tuple[float, float]:
        """(answers_share, teacher_share): as given, else the kind's own (SHARES)."""
        answers, teacher = SHARES[self.kind]
        return (answers if self.answers_share is None else self.answers_share,
                teacher if self.teacher_share is None else self.teacher_share)

    @property
    def n(self) -> int:
        return self.heads if self.heads is not None else STEPS[self.kind]


@dataclass
class Fitted:
    steps: int
    loss: float  # mean of the last 10 steps


@dataclass
class Agreement:
    """What the held-out check measured: per head (EAGLE step) its top token against the target's, and what a greedy
    chain and a tree of the default widths would get from them (drafted on the target's own held-out text)."""

    each: list[float]  # per head or step: the share of positions where its top token is the target's
    chain: list[float]  # per k: the share where heads (steps) 1 … k all are: what a chain's k-th draft survives
    tree: float  # tokens a target pass would give with the default tree (widths DEFAULT_HEAD_WIDTHS), greedy

    @property
    def chain_tokens(self) -> float:
        """Tokens a target pass gives with the greedy chain of every head: 1 + Σ_k chain[k]."""
        return 1 + sum(self.chain)


def agreement_of(hits: torch.Tensor, in_tree: torch.Tensor) -> Agreement:
    """hits (P, n): position p's head (step) k's top token is the target's; in_tree (P, n): the target's token is
    among the default tree's candidates at depth k + 1. A draft survives only after every one before it did."""
    if not len(hits):
        return Agreement([0.0] * hits.shape[1], [0.0] * hits.shape[1], 1.0)
    chain = hits.long().cumprod(1).float().mean(0)
    tree = 1 + float(in_tree.long().cumprod(1).float().mean(0).sum())
    return Agreement(hits.float().mean(0).tolist(), chain.tolist(), tree)


def tree_widths(n: int) -> list[int]:
    """The default tree's widths over n depths (its last width where n is deeper than it)."""
    return [DEFAULT_HEAD_WIDTHS[min(d, len(DEFAULT_HEAD_WIDTHS) - 1)] for d in range(n)]


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
    rows, vocab = StepRows(subset, heads.lm_head, plan.negatives, plan.seed), heads.lm_head.out_features
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
                     clock: Clock | None = None) -> Agreement:
    """Every head's top token against the target's own at its position, at the same held-out positions for every
    head (at most `most`, evenly spaced, each with room for the last head), through the full LM head."""
    n = heads.n
    h = teacher.hidden[:, :-n].reshape(-1, teacher.hidden.shape[-1])  # positions every head has a label for
    labels = torch.stack([teacher.ids[:, 1 + i:teacher.ids.shape[1] - n + 1 + i, 0].reshape(-1) for i in range(n)], 1)
    pick = _spaced(len(h), most)
    h, labels, widths = h[pick], labels[pick], tree_widths(n)
    hits, in_tree = torch.zeros(len(h), n, dtype=torch.bool), torch.zeros(len(h), n, dtype=torch.bool)
    with torch.inference_mode():
        for i in range(n):
            for j in range(0, len(h), batch):
                top = heads.head(i, h[j:j + batch]).topk(widths[i], -1).indices  # (B, w)
                hits[j:j + batch, i] = top[:, 0] == labels[j:j + batch, i]
                in_tree[j:j + batch, i] = (top == labels[j:j + batch, i:i + 1]).any(-1)
                if clock:
                    clock.tick(i * math.ceil(len(h) / batch) + j // batch + 1)
    return agreement_of(hits, in_tree)


def check_clock(kind: str, heads: int, held: Teacher, report: Report | None, phase: str) -> Clock:
    """The progress of one held-out check: its batches (as agreement_medusa and agreement_eagle cut them)."""
    batches = heads * math.ceil(min(EVAL_POSITIONS[MEDUSA], held.positions) / 256) if kind == MEDUSA else \
        math.ceil(EVAL_POSITIONS[EAGLE] / 64)
    return Clock(report, phase, batches)


# --- EAGLE -------------------------------------------------------------------------------------------------------

def eagle_loss(eagle, teacher: Teacher, pick: torch.Tensor, rows: torch.Tensor, subset: Subset,
               gen: torch.Generator | None, unroll: int = 0) -> torch.Tensor:
    """EAGLE-1's loss on windows `pick`: smooth L1 from the guessed features to the target's, plus LABEL_WEIGHT × the
    soft-label cross-entropy of their readout over `rows` (the subset's first: StepRows). gen None: no input noise.

    `unroll` more steps train on the layer's own guesses, as drafting runs it after its first step (EAGLE-3's
    training-time test, simplified): step s + 1 reads step s's guesses as the features, one position further on, and
    is held to the target's features and labels there, weighted UNROLL_DECAY^s (a later draft counts for less: it
    is tested only after the ones before it survived)."""
    f, tokens = teacher.hidden[pick].float(), teacher.tokens[pick]  # (B, L, H), (B, L)
    inputs = f[:, :-1]
    if gen is not None:
        inputs = inputs + (torch.rand(inputs.shape, generator=gen) - 0.5) * NOISE
    total, vocab = 0.0, eagle.lm_head.out_features
    for s in range(1 + unroll):
        if inputs.shape[1] < 1:
            break
        guess = eagle.next_features(inputs, tokens[:, 1 + s:])  # (B, L-1-s, H): the feature one further on
        pos, p = subset.labels(teacher.ids[pick][:, 1 + s:], teacher.probs[pick][:, 1 + s:], vocab)
        logp = F.log_softmax(guess @ rows.T, -1)
        label = -(p * logp.gather(-1, pos)).sum(-1).mean()
        total = total + UNROLL_DECAY ** s * (FEATURE_WEIGHT * F.smooth_l1_loss(guess, f[:, 1 + s:]) + LABEL_WEIGHT *
                                            label)
        inputs = guess[:, :-1]  # step s's guesses, as the next step's features
    return total


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
            _learn(optimizer, eagle_loss(eagle, teacher, order[j * per_step:(j + 1) * per_step], rows(), subset, gen,
                                         plan.unroll), losses, clock, "EAGLE layer learns")
    return _ended(clock, losses, "EAGLE layer learns")


def agreement_eagle(eagle, teacher: Teacher, most: int = EVAL_POSITIONS[EAGLE], batch: int = 64,
                    clock: Clock | None = None) -> Agreement:
    """Each draft step's top token against the target's own at its position, drafting as a run does (eagle.predict on
    the last WINDOW pairs, then on its own guesses), through the full LM head. Anchors: held-out positions a with a
    full window before them (at most `most`, evenly spaced); the newest token is the text's x_a; step s guesses the
    feature at a + s − 1 and is compared with the target's top token there; the tokens after the anchor are the
    text's (what the target saw, and what a chain or a tree on the accepted path feeds)."""
    from specviz.engine.eagle import WINDOW

    length, steps = teacher.tokens.shape[1], eagle.n
    anchors = [(w, a) for w in range(len(teacher)) for a in range(WINDOW, length - steps + 1)]
    anchors = [anchors[i] for i in _spaced(len(anchors), most).tolist()]
    widths = tree_widths(steps)
    hits, in_tree = torch.zeros(len(anchors), steps, dtype=torch.bool), torch.zeros(len(anchors), steps, dtype=torch.bool)
    with torch.inference_mode():
        for j in range(0, len(anchors), batch):
            w = torch.tensor([a[0] for a in anchors[j:j + batch]])
            a = torch.tensor([a[1] for a in anchors[j:j + batch]])
            back = a[:, None] + torch.arange(-WINDOW, 0)  # positions a − WINDOW .. a − 1: the committed pairs
            f = teacher.hidden[w[:, None], back].float()  # (B, WINDOW, H): f_j
            x = teacher.tokens[w[:, None], back + 1]  # (B, WINDOW): x_{j+1}, the last one the newest token x_a
            for s in range(steps):
                guess = eagle.predict(f, x)  # (B, H): the feature at a + s
                top, label = eagle.logits(guess).topk(widths[s], -1).indices, teacher.ids[w, a + s, 0]
                hits[j:j + batch, s], in_tree[j:j + batch, s] = top[:, 0] == label, (top == label[:, None]).any(-1)
                if s + 1 < steps:
                    f = torch.cat([f, guess[:, None].to(f.dtype)], 1)[:, -WINDOW:]
                    x = torch.cat([x, teacher.tokens[w, a + s + 1][:, None]], 1)[:, -WINDOW:]
            if clock:
                clock.tick(j // batch + 1)
    return agreement_of(hits, in_tree)


# --- the vocabulary a drafter drafts over ------------------------------------------------------------------------

def vocab_agreement(drafter, teacher: Teacher, ranked: torch.Tensor, sizes: tuple[int, ...]) -> dict[int, float]:
    """Head 1's (EAGLE step 1's) held-out top-1 agreement with the target when it drafts over the `n` most used
    tokens only (`ranked`, most used first), for each n of `sizes` (0: every token): what a smaller output layer
    costs in agreement. The drafter is left drafting over every token."""
    check = agreement_eagle if drafter.kind == EAGLE else agreement_medusa
    out = {}
    for n in sizes:
        if n:
            drafter.use_vocab(ranked[:n])
        out[n] = check(drafter, teacher).each[0]
        drafter.use_all_rows()
    return out

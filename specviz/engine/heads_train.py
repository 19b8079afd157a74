"""Training Medusa heads for a frozen target on this machine, by self-distillation (Medusa-1 with the backbone frozen).

    heads, provenance = train_heads(target, tokenizer, "Qwen2.5-Coder-1.5B-Instruct", TrainPlan())

1. Teacher: the target reads each window (the held-out ones first) of offline text (heads_data.py) once, in inference mode; what is kept per
   position is its hidden state (what the heads read) and its own distribution over the next token, as its top
   `TrainPlan.top` tokens and their probabilities (the soft labels; the rest of the vocabulary, usually a few percent
   of the mass, is dropped and the kept part renormalised, to keep 150k-wide rows out of memory).
2. Heads: head i at position t learns the target's distribution at position t + 1 + i (the token i + 1 places past
   the next one), by cross-entropy against those soft labels, through the target's frozen LM head; Adam on the blocks
   only. The target's own labels, not the text's tokens: heads should guess what this target would say.
3. Held out: each head's top-1 agreement with the target's top choice at its position, on windows never trained on.

Every phase reports progress with an estimate of the time left; `TrainPlan.minutes` bounds the whole: the teacher
stops reading at 45 % of it, training stops where the held-out check would overrun it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

import torch
import torch.nn.functional as F

from specviz.engine.heads import MedusaHeads, Provenance, fingerprint
from specviz.engine.heads_data import Windows, windows

Report = Callable[[str, float, float], None]  # (phase, fraction done, seconds left) -> None


@dataclass(frozen=True)
class TrainPlan:
    """What a training reads and does; the defaults fit 15 minutes on this project's 2-core CPU (docs/drafters.md)."""

    heads: int = 3
    tokens: int = 12_288  # teacher tokens read, held-out windows included
    length: int = 256  # tokens a window
    holdout: int = 10  # every 10th window is held out
    epochs: int = 2
    batch: int = 256  # positions a step (each head's full-vocabulary softmax over them)
    lr: float = 1e-3
    top: int = 32  # soft-label tokens kept a position
    minutes: float = 15.0  # the whole training's bound
    seed: int = 0


@dataclass
class Teacher:
    """What the target said about a set of windows: per position, its hidden state and its top tokens."""

    hidden: torch.Tensor  # (windows, length, H) in the target's dtype
    ids: torch.Tensor  # (windows, length, top) its top tokens at each position (the next token's distribution)
    probs: torch.Tensor  # (windows, length, top) their probabilities, renormalised to sum to 1


def teach(target, batches: list[list[int]], top: int, report: Report | None = None,
          deadline: float = math.inf) -> Teacher:
    """The target's hidden states and soft labels on `batches` (stops before `deadline`, a perf_counter time)."""
    hidden, ids, probs, t0 = [], [], [], time.perf_counter()
    device = next(target.parameters()).device
    for i, window in enumerate(batches):
        if time.perf_counter() > deadline and hidden:
            break
        with torch.inference_mode():
            states = target.model(input_ids=torch.tensor([window], device=device)).last_hidden_state[0]
            p = torch.softmax(target.lm_head(states).float(), -1)
            values, index = torch.topk(p, top, dim=-1)
        hidden.append(states.cpu())
        ids.append(index.cpu())
        probs.append((values / values.sum(-1, keepdim=True)).half().cpu())
        if report:
            spent = time.perf_counter() - t0
            report(f"target reads {len(batches)} windows", (i + 1) / len(batches), spent / (i + 1) * (len(batches) - i - 1))
    return Teacher(torch.stack(hidden), torch.stack(ids), torch.stack(probs))


def head_pairs(teacher: Teacher, head: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(hidden (P, H), label ids (P, top), label probs (P, top)) for head `head`: the state at t, the target's
    distribution at t + 1 + head, over every window."""
    shift = 1 + head
    h = teacher.hidden[:, :-shift].reshape(-1, teacher.hidden.shape[-1])
    return h, teacher.ids[:, shift:].reshape(h.shape[0], -1), teacher.probs[:, shift:].reshape(h.shape[0], -1)


def soft_loss(logits: torch.Tensor, ids: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the heads' logits (P, V) against the soft labels: −Σ p_label log softmax(logits)[label]."""
    logp = F.log_softmax(logits.float(), -1)
    return -(probs.float() * logp.gather(-1, ids)).sum(-1).mean()


def agreement(heads: MedusaHeads, teacher: Teacher, batch: int = 256) -> list[float]:
    """Each head's top-1 agreement with the target's own top token at its position, on `teacher`'s windows."""
    out = []
    with torch.inference_mode():
        for i in range(heads.n):
            h, ids, _ = head_pairs(teacher, i)
            hits = sum(int((heads.head(i, h[j:j + batch]).argmax(-1) == ids[j:j + batch, 0]).sum())
                       for j in range(0, len(h), batch))
            out.append(hits / max(1, len(h)))
    return out


def fit(heads: MedusaHeads, teacher: Teacher, plan: TrainPlan, report: Report | None = None,
        deadline: float = math.inf) -> tuple[int, float]:
    """Adam on the blocks, every head each step on `plan.batch` shuffled positions; (steps, mean loss of the last 10)."""
    gen = torch.Generator().manual_seed(plan.seed)
    pairs = [head_pairs(teacher, i) for i in range(heads.n)]
    per_epoch = math.ceil(len(pairs[-1][0]) / plan.batch)
    total, steps, losses, t0 = per_epoch * plan.epochs, 0, [], time.perf_counter()
    optimizer = torch.optim.Adam(heads.blocks.parameters(), lr=plan.lr)
    for _ in range(plan.epochs):
        orders = [torch.randperm(len(h), generator=gen) for h, _, _ in pairs]
        for j in range(per_epoch):
            if time.perf_counter() > deadline and steps:
                return steps, sum(losses[-10:]) / len(losses[-10:])
            loss = sum(soft_loss(heads.head(i, h[pick]), ids[pick], probs[pick])
                       for i, ((h, ids, probs), order) in enumerate(zip(pairs, orders))
                       for pick in [order[j * plan.batch:(j + 1) * plan.batch]]) / heads.n
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            losses.append(float(loss.detach()))
            if report:
                spent = time.perf_counter() - t0
                report(f"heads learn (loss {losses[-1]:.3f})", steps / total, spent / steps * (total - steps))
    return steps, sum(losses[-10:]) / len(losses[-10:])


def train_heads(target, tokenizer, target_name: str, plan: TrainPlan = TrainPlan(),
                report: Report | None = None) -> tuple[MedusaHeads, Provenance]:
    """Trained heads for the frozen `target` and their provenance (the caller saves them: heads.save_heads)."""
    start = time.perf_counter()
    budget = start + plan.minutes * 60
    torch.manual_seed(plan.seed)
    for p in target.parameters():
        p.requires_grad_(False)  # frozen: only the heads' blocks learn
    data: Windows = windows(tokenizer, plan.tokens, plan.length, plan.holdout)
    if not data.train or not data.heldout:
        raise ValueError(f"too little text to train on: {len(data.train)} training and {len(data.heldout)} held-out "
                         f"windows of {plan.length} tokens (raise --tokens)")
    held = teach(target, data.heldout, plan.top, report)  # first: the check never loses its text to the clock
    eval_s = time.perf_counter() - start  # the held-out check costs about what reading it did
    train = teach(target, data.train, plan.top, report, start + 0.45 * plan.minutes * 60)
    heads = MedusaHeads(target, plan.heads)
    heads.blocks.float()  # trained in float32; they run in the target's dtype once loaded
    steps, loss = fit(heads, train, plan, report, budget - eval_s)
    agreed = agreement(heads, held)
    provenance = Provenance(
        kind=heads.kind, target_name=target_name, target_hash=fingerprint(target), heads=heads.n,
        hidden=target.config.hidden_size, data=data.describe(plan.length, plan.holdout),
        train_tokens=len(train.hidden) * plan.length, heldout_tokens=len(held.hidden) * plan.length, steps=steps, loss=loss,
        agreement=[round(a, 4) for a in agreed], seconds=round(time.perf_counter() - start, 1),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    return heads.eval(), provenance

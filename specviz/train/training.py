"""One training of drafting weights for a frozen target, start to end, within its time bound (`TrainPlan.minutes`):
the data (data.py: the target's own answers, then offline text), the held-out check before, the fit (fit.py), the
check after, and the provenance a file of weights carries (engine/trained.py).

    heads, provenance = train_heads(target, tokenizer, "Qwen2.5-Coder-1.5B-Instruct", TrainPlan(), folder=...)

The held-out check is run twice (before and after the fit) and measures what drafting will read: per head (per
EAGLE step) the share of held-out positions where its top token is the target's, and the share where a chain of
heads 1 … k all are (the acceptance a greedy chain gets, fit.chain_agreement), and what a tree would get.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import torch

from specviz.drafters.trained import EAGLE, KINDS
from specviz.engine.engine import eos_ids
from specviz.engine.fingerprint import fingerprint
from specviz.engine.readout import SUBSET_SIZES
from specviz.engine.trained import Provenance, builder
from specviz.train.data import teacher_data
from specviz.train.fit import (EVAL_POSITIONS, TrainPlan, agreement_eagle, agreement_medusa, check_clock, fit_eagle,
                               fit_medusa, vocab_agreement)
from specviz.train.teacher import Report, Subset, ranked_tokens



def train_heads(target, tokenizer, target_name: str, plan: TrainPlan = TrainPlan(), report: Report | None = None,
                folder: Path | None = None, machine: str = ""):
    """Trained drafting weights of `plan.kind` for the frozen `target` and their provenance (the caller saves them:
    trained.save_heads). `folder`: where the teacher's data is cached (None: not cached)."""
    if plan.kind not in KINDS:
        raise ValueError(f"the kind of drafter to train must be one of {', '.join(KINDS)}, got {plan.kind!r}")
    start = time.perf_counter()
    budget = start + plan.minutes * 60
    torch.manual_seed(plan.seed)
    for p in target.parameters():
        p.requires_grad_(False)  # frozen: only the drafter's own weights learn
    drafter = builder(plan.kind)(target, plan.n)  # checks the number before any text is read
    got = teacher_data(target, tokenizer, fingerprint(target), plan, eos_ids(target, tokenizer), folder, report, start)
    if not len(got.train) or not len(got.held):
        raise ValueError(f"too little to train on within the time bound: {len(got.train)} training and "
                         f"{len(got.held)} held-out windows of {plan.length} tokens (raise --minutes)")
    t_teacher = time.perf_counter()
    subset = Subset.of([got.train], plan.subset)
    drafter.own.float()  # trained in float32; it runs in the target's activations' dtype once loaded
    check = agreement_eagle if plan.kind == EAGLE else agreement_medusa
    before = check(drafter, got.held, clock=check_clock(plan.kind, drafter.n, got.held, report,
                                                        "held-out check before training"))
    check_s = time.perf_counter() - t_teacher  # the held-out check after the fit costs the same again
    fit = fit_eagle if plan.kind == EAGLE else fit_medusa
    fitted = fit(drafter, got.train, subset, plan, report, budget - check_s)
    t_fit = time.perf_counter()
    ranked, mass = ranked_tokens([got.train])  # the tokens the target uses most on its own text, first
    by_size = vocab_agreement(drafter, got.held, ranked, tuple(n for n in SUBSET_SIZES if n < len(ranked)) + (0,))
    keep = min(plan.draft_vocab, len(ranked)) if plan.draft_vocab else 0
    if keep:
        drafter.use_vocab(ranked[:keep])  # as it will draft: the check below reads what drafting reads
    after = check(drafter, got.held, clock=check_clock(plan.kind, drafter.n, got.held, report, "held-out check"))
    end = time.perf_counter()
    if report:
        report("held-out check", 1.0, 0.0)
    provenance = Provenance(
        kind=plan.kind, target_name=target_name, target_hash=fingerprint(target), heads=drafter.n,
        hidden=target.config.hidden_size, data=got.described,
        train_tokens=got.train.positions, heldout_tokens=got.held.positions, steps=fitted.steps,
        loss=round(fitted.loss, 4), agreement=[round(a, 4) for a in after.each], seconds=round(end - start, 1),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        untrained=[round(a, 4) for a in before.each], subset=len(subset), subset_mass=round(subset.mass, 4),
        machine=machine, chain=[round(a, 4) for a in after.chain], tree=round(after.tree, 4),
        draft_vocab=keep, draft_vocab_mass=round(float(mass[:keep].sum() / mass.sum()), 4) if keep else 1.0,
        vocab_agreement={str(n): round(a, 4) for n, a in by_size.items()},
        phases={**got.phases, "teacher": round(t_teacher - start, 1), "fit": round(t_fit - t_teacher - check_s, 1),
                "check": round(check_s + end - t_fit, 1),
                "checked_positions": min(EVAL_POSITIONS[plan.kind], got.held.positions)})
    return drafter.eval(), provenance

"""One training of drafting weights for a frozen target on this machine, start to end, by self-distillation: Medusa
heads (Medusa-1, the backbone frozen) or an EAGLE-style layer (EAGLE-1's losses). `train_drafter` gathers the data
(data.py), checks the untrained drafter on the held-out part, fits it (fit.py), checks it again, and returns the
provenance a file of weights carries (engine/trained.py).

    drafter, provenance = train_drafter(target, tokenizer, "Qwen2.5-Coder-1.5B-Instruct", TrainPlan(), folder=...)

1. Teacher (data.py): the target answers prompts of the page's kinds (answers.py, prompts.py), then reads windows of
   offline text (text.py), held-out prompts and windows first; per position its feature and its top-`top`
   next-token distribution are kept (teacher.py), and saved beside the model cache, so a second training (more
   text, or EAGLE after Medusa) answers and reads only what it lacks.
2. Fit (fit.py), Adam on the drafter's own weights only, the target's labels (not the text's tokens: the drafter
   should guess what this target would say), the softmax over the vocabulary subset the labels name (teacher.Subset):
   - Medusa: head i at position t learns the target's distribution at t + 1 + i (the token i + 1 places past the
     next one), by cross-entropy against those soft labels;
   - EAGLE: at each position t the layer reads (f_t, the token x_{t+1}) and guesses f_{t+1}; loss = smooth L1 to the
     target's f_{t+1} + 0.1 × the soft-label cross-entropy of its LM-head readout (EAGLE-1's weights), with the
     input features jittered by uniform noise (EAGLE-1's trick so that drafting on its own, imperfect, guesses is
     less of a surprise), and `TrainPlan.unroll` further steps on its own guesses (fit.eagle_loss). Attention sees
     the same window it will see when drafting (engine/eagle.py's WINDOW).
3. Held out, before the fit (where it started) and after: per head (per EAGLE step) the share of held-out positions
   where its top token is the target's own top token there, and the share where a chain of heads 1 … k all are (the
   acceptance a greedy chain gets, fit.Agreement), and what a tree would get; through the LM head as drafting reads
   it: every token before, after it the `TrainPlan.draft_vocab` tokens the target used most (what a smaller output
   layer costs in agreement is measured beside it, fit.vocab_agreement).

Every phase reports progress with an estimate of the time left; `TrainPlan.minutes` bounds the whole: the target
answers held-out prompts until `held_share` of it, training prompts until `answers_share`, and reads training text
until `teacher_share` (TrainPlan.shares; each after one batch or window at least; what it read is cached, so the
next training reads on), and the fit stops where the held-out check after it would overrun the bound.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import torch

from specviz.drafters.trained import EAGLE, KINDS
from specviz.engine.engine import eos_ids
from specviz.models.fingerprint import fingerprint
from specviz.engine.readout import SUBSET_SIZES
from specviz.engine.trained import Provenance, builder
from specviz.train.data import teacher_data
from specviz.train.fit import (EVAL_POSITIONS, TrainPlan, agreement_eagle, agreement_medusa, check_clock, fit_eagle,
                               fit_medusa, vocab_agreement)
from specviz.train.teacher import Report, Subset, ranked_tokens



def train_drafter(target, tokenizer, target_name: str, plan: TrainPlan = TrainPlan(), report: Report | None = None,
                folder: Path | None = None, machine: str = ""):
    """Trained drafting weights of `plan.kind` for the frozen `target` and their provenance (the caller saves them:
    trained.save_trained). `folder`: where the teacher's data is cached (None: not cached)."""
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

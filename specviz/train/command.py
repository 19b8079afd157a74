"""`python -m specviz train-drafters`: Medusa heads or an EAGLE-style layer trained for the target on this machine
(train/fit.py), saved beside the model cache (engine/trained.py), with their provenance, each phase's time and what a
draft costs beside a target pass printed. The command line (cli/main.py) hands it its progress printer."""

from __future__ import annotations

import argparse
import sys
import time

from specviz.drafters.trained import KINDS, MEDUSA
from specviz.models.kernels import path_of
from specviz.models.pair_flags import add_pair_flags
from specviz.models.machine import machine as machine_words
from specviz.models.packaged import cache_root
from specviz.models.pairs import load_target
from specviz.engine.trained import draft_cost, load_trained, save_trained, trained_folder
from specviz.settings.bounds import Progress
from specviz.train.fit import STEPS, TrainPlan
from specviz.train.text import check_text_folder
from specviz.train.training import train_drafter


FINISH_MINUTES = 1.0  # kept from the training for what follows it: saving, reloading the weights as a run drafts
#                    and timing a draft, and the interpreter's own start (a 15-minute run took 15:15 without it, an
#                    EAGLE one 15:41 with half a minute kept: its held-out check ran past the bound by 40 s)


def add_train_args(p: argparse.ArgumentParser) -> None:
    d = TrainPlan()
    p.add_argument("--kind", default=MEDUSA, choices=KINDS,
                   help=f"{MEDUSA}: Medusa heads (default); {KINDS[1]}: an EAGLE-style layer on the target's features")
    add_pair_flags(p, ("--target",), draft_weights=False, helps={  # the target alone loads: no draft
        "--preset": "whose target (default: the offline packaged pair's)",
        "--target": "or a target model: hub id, local folder or packaged:<name>"})
    p.add_argument("--heads", type=int, default=None,
                   help=f"Medusa heads, or the EAGLE layer's draft steps, 1-8 (default {STEPS[MEDUSA]} heads, "
                        f"{STEPS[KINDS[1]]} steps)")
    p.add_argument("--prompts", type=int, default=d.prompts,
                   help=f"the most prompts of the page's kinds the target answers first, {d.length} tokens each "
                        f"(default {d.prompts}; the time bound may end it first); its answers are reused from beside "
                        f"the model cache")
    p.add_argument("--tokens", type=int, default=d.tokens,
                   help=f"tokens of offline text the target reads after answering prompts, a tenth held out (default "
                        f"{d.tokens}); what it answered and read before for this target is reused from beside the "
                        f"model cache")
    p.add_argument("--text", default=None, metavar="FOLDER",
                   help="also a course's own text: the text files in FOLDER (.txt, .md, .py, …), read before the "
                        "offline text; the heads then draft that course's words better")
    p.add_argument("--epochs", type=int, default=d.epochs,
                   help=f"the most passes over the training text (default {d.epochs}; the time bound usually ends "
                        f"it first)")
    p.add_argument("--minutes", type=float, default=d.minutes,
                   help=f"the most the whole training may take (default {d.minutes:g}); it stops early to keep it")


def train_command(a: argparse.Namespace, progress: Progress | None = None) -> int:
    """Train heads (or an EAGLE layer) for the target (frozen), save them beside the model cache, print their
    provenance and what each phase took."""
    if not (0 < a.minutes <= 600) or a.tokens < 0 or a.prompts < 0 or a.epochs < 1:
        raise ValueError(f"train-drafters wants 0 < --minutes <= 600, --prompts >= 0, --tokens >= 0 and --epochs >= 1; "
                         f"got {a.minutes:g}, {a.prompts}, {a.tokens} and {a.epochs}")
    text = check_text_folder(a.text) if a.text is not None else None  # before a minute of loading
    t0 = time.perf_counter()
    target, tokenizer, name = load_target(a.preset, a.target, a.dtype, progress=progress, kernels=a.kernels)
    loaded = time.perf_counter() - t0
    left = a.minutes - loaded / 60 - FINISH_MINUTES  # --minutes bounds the whole command: the load counts
    if left <= 0.1:
        raise ValueError(f"loading the target took {loaded / 60:.1f} min of the {a.minutes:g} allowed: raise --minutes")
    plan = TrainPlan(kind=a.kind, heads=a.heads, prompts=a.prompts, tokens=a.tokens, epochs=a.epochs, minutes=left,
                     text=text)
    machine = machine_words(str(next(target.parameters()).device))
    drafter, prov = train_drafter(target, tokenizer, name, plan, _print_bar,
                                   trained_folder(cache_root(), name, "teacher"), machine)
    folder = save_trained(drafter, prov, trained_folder(cache_root(), name, drafter.kind))
    print(f"\n{drafter.title} for {name} (fingerprint {prov.target_hash}) saved in {folder}")
    print(f"data: {prov.data}\nthe target read {prov.train_tokens:,} tokens to train on and {prov.heldout_tokens:,} "
          f"held out")
    ph = prov.phases
    print(f"phases on {machine}: the target loaded in {loaded:.0f} s; answering {ph['answers']:.0f} s "
          f"({ph['answers_given']} answers now, {ph['answers_cached']} from the cache); offline text {ph['text']:.0f} "
          f"s ({ph['teacher_windows_read']} windows read now, {ph['teacher_windows_cached']} from the cache); fit "
          f"{ph['fit']:.0f} s ({prov.steps} steps); held-out check {ph['check']:.0f} s")
    print(f"training loss (last 10 steps) {prov.loss:.3f}; softmax over {prov.subset:,} tokens keeping "
          f"{prov.subset_mass:.1%} of the soft labels' mass")
    unit = "head" if drafter.kind == MEDUSA else "EAGLE step"
    for i, (agreed, was) in enumerate(zip(prov.agreement, prov.untrained), start=1):
        print(f"{unit} {i} (the token {i} past the next): top-1 agreement with the target, held out: {agreed:.1%} "
              f"(untrained {was:.1%})")
    chain_of = "a chain of heads" if drafter.kind == MEDUSA else "a chain of steps"
    print(f"greedy, held out: {chain_of} 1 … k all agree: "
          + ", ".join(f"k = {k} {c:.1%}" for k, c in enumerate(prov.chain, start=1))
          + f"; tokens a target pass gives: a chain {1 + sum(prov.chain):.2f}, the default tree {prov.tree:.2f}")
    drafting = load_trained(folder, target, name, path=path_of(target))  # as a run drafts: on the target's kernels
    draft_s, pass_s = draft_cost(drafting, target)
    what = f"a draft of all {drafter.n} heads" if drafter.kind == MEDUSA else "one EAGLE step (a full window)"
    print(f"{what}, with the shared output layer: {draft_s * 1000:.1f} ms, "
          f"{draft_s / pass_s:.2f} of a one-token target pass ({pass_s * 1000:.1f} ms), medians of 5 here")
    return 0


def _print_bar(phase: str, fraction: float, left_s: float) -> None:
    """One progress line, rewritten in place: a bar, the phase, and the time left at this phase's pace so far."""
    done = round(30 * fraction)
    end = "\n" if fraction >= 1 else ""
    print(f"\r[{'#' * done}{'.' * (30 - done)}] {fraction:4.0%} {phase}, about {left_s / 60:.1f} min left   ",
          end=end, file=sys.stderr, flush=True)

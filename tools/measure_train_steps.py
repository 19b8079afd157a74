"""What a train-drafters step and its held-out check cost on the packaged target's shapes (hidden 1536, vocabulary
151,936), with random weights: a step's cost does not depend on the values, so no model loads. docs/drafters.md
quotes its output (the Medusa heads' training).

    python -m tools.measure_train_steps

Prints, on this machine's CPU: a Medusa step (3 heads × 256 positions) over the vocabulary subset's rows (8,192 + the
1,024 sampled others) and over all 151,936; an EAGLE step (one window of 255 positions); each default check's time.
"""

from __future__ import annotations

import time
import types
from dataclasses import replace

import torch

from specviz.engine.eagle import EagleDrafter
from specviz.engine.medusa import MedusaHeads
from specviz.train.teacher import Subset, Teacher
from specviz.train.fit import EVAL_POSITIONS, TrainPlan, agreement_eagle, agreement_medusa, fit_eagle, fit_medusa
from specviz.models.machine import machine

HIDDEN, VOCAB, LENGTH, WINDOWS = 1536, 151_936, 256, 3


def fake_target():
    """The parts of the packaged target a training reads, at its shapes, random."""
    target = types.SimpleNamespace(config=types.SimpleNamespace(hidden_size=HIDDEN),
                                   lm_head=torch.nn.Linear(HIDDEN, VOCAB, bias=False))
    embed = torch.nn.Embedding(VOCAB, HIDDEN)
    target.get_input_embeddings = lambda: embed
    return target


def fake_teacher(gen: torch.Generator) -> Teacher:
    return Teacher(torch.randn(WINDOWS, LENGTH, HIDDEN, generator=gen).bfloat16(),
                   torch.randint(0, VOCAB, (WINDOWS, LENGTH), generator=gen),
                   torch.randint(0, VOCAB, (WINDOWS, LENGTH, 32), generator=gen),
                   torch.softmax(torch.randn(WINDOWS, LENGTH, 32, generator=gen), -1).half())


def main() -> None:
    torch.set_num_threads(min(2, torch.get_num_threads()))
    print(machine("cpu"))
    target, teacher = fake_target(), fake_teacher(torch.Generator().manual_seed(0))
    subset = Subset.of([teacher], TrainPlan().subset)
    full = Subset(torch.arange(VOCAB), 1.0, VOCAB)
    for kind, build, fit, check, sets in (
            ("medusa", lambda: MedusaHeads(target, 3), fit_medusa, agreement_medusa,
             [("subset", subset), ("full vocabulary", full)]),
            ("eagle", lambda: EagleDrafter(target, 4), fit_eagle, agreement_eagle, [("subset", subset)])):
        for name, rows in sets:
            drafter = build()
            drafter.own.float()
            t0 = time.perf_counter()
            fitted = fit(drafter, teacher, rows, replace(TrainPlan(kind=kind), epochs=1, negatives=0 if
                                                         name != "subset" else TrainPlan().negatives))
            print(f"{kind} step over the {name} ({len(rows):,} rows{' + sampled others' * (name == 'subset')}): "
                  f"{(time.perf_counter() - t0) / fitted.steps:.2f} s ({fitted.steps} steps)", flush=True)
        n = 64 if kind == "medusa" else 16
        t0 = time.perf_counter()
        check(drafter, teacher.take(1), most=n)
        each = (time.perf_counter() - t0) / n
        print(f"{kind} check: {each * 1000:.0f} ms a position, {each * EVAL_POSITIONS[kind]:.0f} s for the default "
              f"{EVAL_POSITIONS[kind]}", flush=True)


if __name__ == "__main__":
    main()

"""The int4 draft's output layer three ways, on the packaged pair as it loads here: int8 rows (Int8Linear, what the
int4 draft used until 2026-12-06), 4 bits alone (Int4Linear), and 4 bits with the 64 largest logits a row read again
at 8 (Int4RescoredHead, what it uses now). For each: the draft's one-token step over a 120-token cache (median of
interleaved rounds), and the draft's greedy top-1 agreement with the target along the target's greedy answers to
the benchmark's prompts (48 tokens each; one forward pass of each model over prompt and answer).

    python -m tools.measure_draft_head [--rounds 9]

Its table is docs/engine.md's "The draft's output layer". Run it on a quiet machine: it says the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics

import torch

from specviz.engine import Engine, RunSettings
from specviz.measure.pass_timing import pass_time, prefill
from specviz.models.layers import Int4Linear, Int4RescoredHead, Int8Linear
from specviz.models.pairs import DEFAULT_PRESET, PRESETS, load_model, load_pair, resolve_model
from specviz.settings.prompts import BENCH_PROMPTS

HEADS = {"int8": Int8Linear, "int4": Int4Linear, "int4, top 64 at int8": Int4RescoredHead}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9, help="interleaved timing rounds")
    args = parser.parse_args()
    torch.set_num_threads(2)
    engine = Engine.from_pair(load_pair(draft_weights="int4"))
    engine.warm_up()
    dtype = engine.draft.get_input_embeddings().scale.dtype
    source = load_model(resolve_model(PRESETS[DEFAULT_PRESET].draft), "cpu", str(dtype).removeprefix("torch."))
    heads = {name: kind(source.lm_head) for name, kind in HEADS.items()}
    del source
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    cache = prefill(engine.draft, 120)
    steps = {name: [] for name in heads}
    for _ in range(args.rounds):
        for name, head in heads.items():
            engine.draft.lm_head = head
            steps[name].append(pass_time(engine.draft, cache, 1, repeats=3, warm_up=1))
    answers = []
    for prompts in BENCH_PROMPTS.values():
        for prompt in prompts:
            trace = engine.run(prompt, RunSettings(k=4, temperature=0.0, max_new_tokens=48))
            ids = torch.tensor([trace.prompt_token_ids + trace.output_token_ids])
            n = len(trace.output_token_ids)
            with torch.inference_mode():
                answers.append((ids, n, engine.target(ids).logits[0, -n - 1:-1].argmax(-1)))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print("| the draft's output layer | draft step, ms (median, range) | greedy agreement |")
    print("|---|---|---|")
    for name, head in heads.items():
        engine.draft.lm_head = head
        agree = total = 0
        with torch.inference_mode():
            for ids, n, target in answers:
                agree += int((engine.draft(ids).logits[0, -n - 1:-1].argmax(-1) == target).sum())
                total += n
        ms = [1e3 * s for s in steps[name]]
        print(f"| {name} | {statistics.median(ms):.1f} ({min(ms):.1f}–{max(ms):.1f}) | {agree}/{total} "
              f"({agree / total:.3f}) |")


if __name__ == "__main__":
    main()

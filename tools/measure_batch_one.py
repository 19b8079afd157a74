"""A batch of one against the single-user engine (issue 54: no regression at B = 1): the same prompts, greedy, 48 new
tokens, fixed K = 4 and the target alone, through engine/batched.py with one sequence and through Engine.run /
Engine.baseline, in interleaved turns after a warm-up; medians and ranges of tokens/s, the machine named, and
whether both gave the same tokens.

    python -m tools.measure_batch_one [--turns 5] [--max-new-tokens 48]
"""

from __future__ import annotations

import argparse
import statistics
import time

from specviz.algorithm.sampling import SamplingSettings
from specviz.engine import Engine, RunSettings
from specviz.engine.batched import Batch, Request
from specviz.models.machine import machine
from specviz.models.pairs import load_pair
from specviz.settings.prompts import BENCH_PROMPTS


def batched(engine, prompt: str, k: int, n: int) -> tuple[float, list[int]]:
    ids = tuple(engine.encode(prompt, RunSettings(k=max(k, 1), temperature=0, max_new_tokens=n)))
    batch = Batch(engine.target, engine.draft if k else None, engine.vocab, engine.eos_ids, k)
    started = time.perf_counter()
    served = batch.serve([Request(ids, SamplingSettings(temperature=0), seed=0, max_new_tokens=n)], 1)[0]
    return len(served.output_ids) / (time.perf_counter() - started), served.output_ids


def single(engine, prompt: str, k: int, n: int) -> tuple[float, list[int]]:
    settings = RunSettings(k=max(k, 1), temperature=0, max_new_tokens=n)
    started = time.perf_counter()
    ids = engine.baseline(prompt, settings).output_token_ids if k == 0 else engine.run(prompt, settings).output_token_ids
    return len(ids) / (time.perf_counter() - started), ids


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=5)
    p.add_argument("--max-new-tokens", type=int, default=48)
    a = p.parse_args()
    engine = Engine.from_pair(load_pair())
    engine.warm_up()
    prompts = [BENCH_PROMPTS["code"][0], BENCH_PROMPTS["story"][0]]
    for prompt in prompts:  # a warm-up of every path, untimed
        for k in (0, 4):
            batched(engine, prompt, k, 8), single(engine, prompt, k, 8)
    rates: dict[tuple[str, int, str], list[float]] = {}
    same = True
    for _ in range(a.turns):
        for prompt in prompts:
            for k in (0, 4):
                b_rate, b_ids = batched(engine, prompt, k, a.max_new_tokens)
                s_rate, s_ids = single(engine, prompt, k, a.max_new_tokens)
                same &= b_ids == s_ids
                rates.setdefault((prompt[:24], k, "batch of one"), []).append(b_rate)
                rates.setdefault((prompt[:24], k, "single-user"), []).append(s_rate)
    print(f"{machine(engine.device)}, {engine.kernels} kernels, {a.turns} interleaved turns, {a.max_new_tokens} new "
          f"tokens, greedy; tokens/s median (least–most)")
    for (prompt, k, how), values in rates.items():
        print(f"{prompt!r:28} K = {k}  {how:13} {statistics.median(values):6.2f} ({min(values):.2f}–{max(values):.2f})")
    for prompt in dict.fromkeys(key[0] for key in rates):
        for k in (0, 4):
            ratio = statistics.median(rates[prompt, k, "batch of one"]) / statistics.median(rates[prompt, k,
                                                                                              "single-user"])
            print(f"{prompt!r:28} K = {k}  batch of one ÷ single-user: {ratio:.3f}")
    print("the same tokens both ways:", "yes" if same else "NO")


if __name__ == "__main__":
    main()

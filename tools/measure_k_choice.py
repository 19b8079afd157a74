"""What the cost-aware rule chooses against fixed K, on the packaged pair: the target alone, the rule (at most K = 4
and 8) and fixed K = 3 and 4, greedy, one bench prompt, in interleaved turns after a warm-up; each run's tokens/s
and its ratio to the target alone of the same turn (median and range), the K each round of the last turn drafted and
its tokens per target pass, and the load-time profile's t(n)/t(1) the rule priced with.

    python -m tools.measure_k_choice [--kind code] [--turns 5] [--max-new-tokens 48]
"""

from __future__ import annotations

import argparse
import collections

import torch

from specviz.engine import Engine, RunSettings
from specviz.models.machine import machine
from specviz.models.pairs import load_pair
from specviz.record.stats import spread
from specviz.settings.prompts import BENCH_PROMPTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", default="code", choices=list(BENCH_PROMPTS))
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parser.parse_args()
    torch.set_num_threads(2)
    engine = Engine.from_pair(load_pair())
    engine.warm_up()
    profile = engine.measure_pass_costs()
    prompt, tokens = BENCH_PROMPTS[args.kind][0], args.max_new_tokens
    runs = {"the cost-aware rule, at most K = 4": RunSettings(k=4, temperature=0, max_new_tokens=tokens, adaptive=True),
            "the cost-aware rule, at most K = 8": RunSettings(k=8, temperature=0, max_new_tokens=tokens, adaptive=True),
            "fixed K = 3": RunSettings(k=3, temperature=0, max_new_tokens=tokens),
            "fixed K = 4": RunSettings(k=4, temperature=0, max_new_tokens=tokens)}
    alone = RunSettings(k=4, temperature=0, max_new_tokens=tokens)
    speeds, rounds = collections.defaultdict(list), {}
    for turn in range(args.turns + 1):  # turn 0 is the warm-up
        speed = engine.baseline(prompt, alone).tokens_per_s
        if turn:
            speeds["the target alone"].append(speed)
        for name, settings in runs.items():
            trace = engine.run(prompt, settings, details=False)
            if turn:
                speeds[name].append(trace.summary.tokens_per_s)
                rounds[name] = (sorted(collections.Counter(len(r.drafts) for r in trace.rounds).items()),
                                len(trace.output_token_ids) / len(trace.rounds))
    print(f"{machine('cpu')}; kernels {engine.kernels}; {args.kind}, greedy, {tokens} new tokens, {args.turns} "
          f"interleaved turns; the profile's t(n)/t(1), n = 1 … 9: "
          f"{', '.join(f'{profile.t(n) / profile.t(1):.2f}' for n in range(1, 10))}")
    base = speeds["the target alone"]
    for name, values in speeds.items():
        ratios = [v / b for v, b in zip(values, base)]
        drafted = ""
        if name in rounds:
            counts, per_pass = rounds[name]
            drafted = f"; rounds by K drafted {dict(counts)}, {per_pass:.2f} tokens a pass"
        print(f"  {name}: {spread(values).text()} tokens/s, {spread(ratios).text(unit='×')}{drafted}")


if __name__ == "__main__":
    main()

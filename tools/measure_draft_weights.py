"""The draft's weights compared on the packaged pair: full (as loaded), int8 and int4, side by side in one run.

    python -m tools.measure_draft_weights [--repeats 2] [--max-new-tokens 48]

For each prompt type (the benchmark's first code, factual and story prompts) and mode (greedy, sampled at 0.7), the
target alone and specviz K = 4 with each draft take turns (A B C D A B C D …). Per draft: its step time, c (a draft
step over one target-only step), the acceptance α, tokens per target pass and the speedup over the target alone
(medians of run-by-run ratios). The lean draft pass (lean.py) runs all three, as the engine does. Prints a Markdown
table: what `--draft-weights auto` chose is the one with the best speedups where α holds.
"""
import argparse
import copy
import statistics

from specviz.measure.bench import interleaved
from specviz.settings.prompts import BENCH_PROMPTS as PROMPTS
from specviz.engine import Engine, RunSettings
from specviz.measure.measured import steady_state
from specviz.models.pairs import load_pair
from specviz.models.quant import FULL, INT4, INT8, fastest_weights, quantize_weights, weights_name
from specviz.record.stats import target_step_time

KINDS = (FULL, INT8, INT4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    a = parser.parse_args()
    pair = load_pair(draft_weights=FULL)
    engines = {kind: Engine(pair.draft if kind == FULL else quantize_weights(copy.deepcopy(pair.draft), kind),
                            pair.target, pair.tokenizer, weights_name(pair.draft_name, kind), pair.target_name,
                            pair.dtype) for kind in KINDS}
    for engine in engines.values():
        engine.warm_up()
        engine.run(PROMPTS["code"][0], RunSettings(max_new_tokens=8))  # one throwaway run each
    target = engines[FULL]
    print(f"{pair.draft_name} → {pair.target_name} · {pair.device} · {pair.dtype} · auto picks "
          f"{fastest_weights(pair.target.dtype)} on this CPU", flush=True)
    print("\n| prompt | mode | draft weights | draft step ms | c | α | tokens / pass | speedup over target alone |")
    print("|---|---|---|---|---|---|---|---|")
    for ptype in ("code", "factual", "story"):
        for mode, temperature in (("greedy", 0.0), ("sampled", 0.7)):
            def settings(seed, **more):
                return RunSettings(temperature=temperature, max_new_tokens=a.max_new_tokens, seed=seed, **more)
            configs = {"target": lambda prompt, seed: target.baseline(prompt, settings(seed))}
            for kind, engine in engines.items():
                configs[kind] = lambda prompt, seed, engine=engine: engine.run(prompt, settings(seed, k=4))
            runs = interleaved(configs, PROMPTS[ptype][:1], a.repeats)
            bases = runs.pop("target")
            step = statistics.median(target_step_time(b) for b in bases)
            for kind, traces in runs.items():
                states = [steady_state(t.rounds, step) for t in traces]
                draft_ms = statistics.median(s.c for s in states) * step * 1000
                print(f"| {ptype} | {mode} | {kind} | {draft_ms:.1f} | {statistics.median(s.c for s in states):.3f} | "
                      f"{statistics.median(t.summary.acceptance_rate for t in traces):.2f} | "
                      f"{statistics.median(t.summary.tokens_per_pass for t in traces):.2f} | "
                      f"{statistics.median(t.summary.tokens_per_s / b.tokens_per_s for t, b in zip(traces, bases)):.2f}× |",
                      flush=True)


if __name__ == "__main__":
    main()

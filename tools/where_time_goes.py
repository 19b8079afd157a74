"""Where a run's time goes, specviz K=4 against transformers with exactly K = 4 and the same draft object: the two
models' forward passes, and the rest (each loop's own work between them). Forward hooks time transformers' calls
of both models and specviz's target passes; specviz's lean draft pass (lean.py) is timed around its call.

    python -m tools.where_time_goes [--mode greedy|sampled] [--repeats 2]

Prints one line per run: tokens/s, milliseconds in the draft's passes, in the target's, and the rest, per run and
per round (target passes).
"""
import argparse
import time

from specviz.engine import lean
from specviz.measure.bench import SAME_DRAFT_PEER, _transformers_tokens_per_s
from specviz.settings.prompts import BENCH_PROMPTS as PROMPTS
from specviz.engine import Engine, RunSettings
from specviz.models.pairs import load_pair

SPENT: dict[str, float] = {}
CALLS: dict[str, int] = {}


def add(name: str, seconds: float) -> None:
    SPENT[name] = SPENT.get(name, 0.0) + seconds
    CALLS[name] = CALLS.get(name, 0) + 1


def hook(model, name: str) -> None:
    started = []
    model.register_forward_pre_hook(lambda m, args, kwargs: started.append(time.perf_counter()), with_kwargs=True)
    model.register_forward_hook(lambda m, args, kwargs, out: add(name, time.perf_counter() - started.pop()),
                                with_kwargs=True)


def time_lean_pass() -> None:
    call = lean.LeanDecoder.__call__

    def timed(self, tokens, cache, keep):
        t0 = time.perf_counter()
        try:
            return call(self, tokens, cache, keep)
        finally:
            add("draft", time.perf_counter() - t0)
    lean.LeanDecoder.__call__ = timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", default="greedy", choices=["greedy", "sampled"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    a = parser.parse_args()
    temperature = 0.0 if a.mode == "greedy" else 0.7
    engine = Engine.from_pair(load_pair())
    engine.warm_up()
    hook(engine.draft, "draft")
    hook(engine.target, "target")
    time_lean_pass()
    print(f"{engine.draft_name} → {engine.target_name} · {engine.dtype} · {a.mode} · {a.max_new_tokens} tokens")
    for ptype in ("code", "factual", "story"):
        prompt = PROMPTS[ptype][0]
        for seed in range(a.repeats):
            for who in ("specviz K=4", SAME_DRAFT_PEER):
                SPENT.clear()
                CALLS.clear()
                t0 = time.perf_counter()
                if who.startswith("specviz"):
                    trace = engine.run(prompt, RunSettings(k=4, temperature=temperature,
                                                           max_new_tokens=a.max_new_tokens, seed=seed))
                    tokens = len(trace.output_token_ids)
                else:
                    _transformers_tokens_per_s(engine, prompt, a.max_new_tokens, temperature, "exact", engine.draft,
                                               seed)
                    tokens = a.max_new_tokens
                total = time.perf_counter() - t0
                draft, target = SPENT.get("draft", 0.0), SPENT.get("target", 0.0)
                rest, passes = total - draft - target, CALLS.get("target", 1)
                print(f"{ptype:8} {who:44} {tokens / total:6.2f} tok/s · draft {draft * 1000:5.0f} ms · target "
                      f"{target * 1000:5.0f} ms ({passes} passes) · rest {rest * 1000:4.0f} ms "
                      f"({rest * 1000 / passes:4.1f} ms a round) · passes {100 * (draft + target) / total:.0f} %",
                      flush=True)


if __name__ == "__main__":
    main()

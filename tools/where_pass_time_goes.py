"""Where a target pass's time goes, part by part, for one new token and for K + 1 = 5, on each CPU kernel path: the
packaged target after a 120-token cached context, every part's time summed by wrapping its calls (the linear layers
of the MLPs and of attention, the output layer, attention itself, the mask, rotary positions, the norms, the cache),
the rest (residual adds, reshapes, Python) as the difference. Median of 7, the paths and sizes interleaved.

    python -m tools.where_pass_time_goes [--kernels float32,float16-fbgemm+sdpa,float16-fbgemm] [--reps 7]

Its table is docs/benchmarks.md's "Where a verify pass's time goes". On a CPU whose other cores are busy every time
is longer; the script says how busy the machine was (the load average before and after).
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import time

import torch

PARTS = ("linear layers: MLP", "linear layers: attention", "output layer", "attention", "mask", "rotary", "norms",
         "cache", "the rest")
CONTEXT, SIZES = 120, (1, 5)


def timer(spent: dict, on: list):
    """timed(part, fn): fn, its time added to spent[part] while on[0] is true."""
    def timed(part, fn):
        def call(*args, **kwargs):
            if not on[0]:
                return fn(*args, **kwargs)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[part] += time.perf_counter() - t0
        return call
    return timed


def instrument_transformers(timed) -> None:
    """The parts transformers' functions compute (wrapped once, whatever the models)."""
    from transformers import masking_utils
    from transformers.cache_utils import DynamicLayer
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.qwen2 import modeling_qwen2

    for name in list(ALL_ATTENTION_FUNCTIONS.keys()):
        ALL_ATTENTION_FUNCTIONS[name] = timed("attention", ALL_ATTENTION_FUNCTIONS[name])
    modeling_qwen2.create_causal_mask = timed("mask", masking_utils.create_causal_mask)
    modeling_qwen2.apply_rotary_pos_emb = timed("rotary", modeling_qwen2.apply_rotary_pos_emb)
    DynamicLayer.update = timed("cache", DynamicLayer.update)


def instrument_model(model, timed) -> None:
    """The parts a model's own modules compute."""
    for name, module in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        part = ("output layer" if leaf == "lm_head" else "linear layers: MLP" if leaf in ("gate_proj", "up_proj",
                "down_proj") else "linear layers: attention" if leaf in ("q_proj", "k_proj", "v_proj", "o_proj")
                else "norms" if "RMSNorm" in type(module).__name__ else "rotary" if "Rotary" in type(module).__name__
                else None)
        if part:
            module.forward = timed(part, module.forward)


def measure(kernels: list[str], reps: int) -> dict:
    from transformers import DynamicCache

    from specviz.models.pairs import load_target
    from specviz.settings.prompts import CODE_PROMPT

    results = {}
    models = {}
    for path in kernels:  # "float16-fbgemm+sdpa": that path with transformers' SDPA attention again (what it replaced)
        model, tokenizer, _ = load_target(kernels=path.removesuffix("+sdpa"))
        if path.endswith("+sdpa"):
            for module in model.modules():
                if hasattr(getattr(module, "config", None), "_attn_implementation"):
                    module.config._attn_implementation = "sdpa"
        models[path] = model
    ids = tokenizer.apply_chat_template([{"role": "user", "content": " ".join([CODE_PROMPT] * 12)}], add_generation_prompt=True,
                                        tokenize=True)
    ids = torch.tensor([list(ids["input_ids"] if hasattr(ids, "keys") else ids)[:CONTEXT + max(SIZES)]])
    spent, on = collections.defaultdict(float), [False]
    timed = timer(spent, on)
    instrument_transformers(timed)
    for model in models.values():
        instrument_model(model, timed)
    caches = {}
    with torch.inference_mode():
        for path, model in models.items():
            caches[path] = DynamicCache()
            model(input_ids=ids[:, :CONTEXT], cache=caches[path], use_cache=True)
        for rep in range(reps + 1):
            for path, model in models.items():
                for n in SIZES:
                    spent.clear()
                    on[0] = True
                    t0 = time.perf_counter()
                    model(input_ids=ids[:, CONTEXT:CONTEXT + n], cache=caches[path], use_cache=True)
                    total = time.perf_counter() - t0
                    on[0] = False
                    caches[path].crop(-n)
                    if rep:  # the first of each is a warm-up
                        row = results.setdefault((path, n), collections.defaultdict(list))
                        row["total"].append(total)
                        for part in PARTS[:-1]:
                            row[part].append(spent[part])
                        row["the rest"].append(total - sum(spent[p] for p in PARTS[:-1]))
    return results


def table(results: dict, kernels: list[str]) -> str:
    head = "| part | " + " | ".join(f"{path}: t(1) | t(5) | +" for path in kernels) + " |"
    lines = [head, "|---|" + "---|---|---|" * len(kernels)]
    for part in ("total", *PARTS):
        cells = []
        for path in kernels:
            one, five = (statistics.median(results[path, n][part]) * 1000 for n in SIZES)
            cells.append(f"{one:.1f} | {five:.1f} | {five - one:+.1f}")
        lines.append(f"| {part} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", default="float32,float16-fbgemm+sdpa,float16-fbgemm")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    from specviz.models.machine import machine
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    load_before = os.getloadavg()[0]
    results = measure(kernels, args.reps)
    print(f"{time.strftime('%Y-%m-%d')} on {machine('cpu')}; ATEN_CPU_CAPABILITY="
          f"{os.environ.get('ATEN_CPU_CAPABILITY', 'unset')}, FBGEMM_ENABLE_INSTRUCTIONS="
          f"{os.environ.get('FBGEMM_ENABLE_INSTRUCTIONS', 'unset')}; load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after; ms, median of {args.reps}\n")
    print(table(results, kernels))


if __name__ == "__main__":
    main()

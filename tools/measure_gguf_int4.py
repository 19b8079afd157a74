"""What the packaged target computes on each CPU path, against the float32 reference: greedy tokens on the shipped
prompts (the eight recorded examples' own prompts and lengths, and the benchmark's ten prompts, 48 tokens each), how
many equal the reference's in full and where the first differs; how far the gguf-int4 path's re-expressed 4-bit
groups move the file's weights; and each path's one-token step (median of the runs' steps after the prompt).

    python -m tools.measure_gguf_int4 [--paths float32,float16-fbgemm,gguf-int4] [--sizes-only]

Each path's line starts with what its target holds: the bytes of its 4-bit layers, of its float16 ones (a step
reads both), and of its embedding (held; a step reads one row).

Its figures are docs/benchmarks.md's "The target at its own bits".
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from transformers import DynamicCache


def greedy(model, ids: list[int], tokens: int) -> tuple[list[int], list[float]]:
    """The target alone's greedy tokens after `ids`, and the seconds of each step after the prompt's."""
    from specviz.engine.decoding import forward

    cache, new, steps, pending = DynamicCache(), [], [], ids
    with torch.inference_mode():
        while len(new) < tokens:
            t0 = time.perf_counter()
            new.append(int(forward(model, pending, cache, 1)[0].argmax()))
            steps.append(time.perf_counter() - t0)
            pending = new[-1:]
    return new, steps[1:]


def shipped_prompts(tokenizer) -> list[tuple[str, list[int], int]]:
    """(name, prompt ids, new tokens): every recorded example's, then the benchmark's prompts with the chat template."""
    from specviz.lecture.examples import EXAMPLES, load_example
    from specviz.settings.prompts import BENCH_PROMPTS

    out = []
    for name in EXAMPLES:
        trace = load_example(name)
        out.append((f"example {name}", list(trace.prompt_token_ids), len(trace.output_token_ids)))
    for kind, prompts in BENCH_PROMPTS.items():
        for i, prompt in enumerate(prompts):
            ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                                tokenize=True)
            ids = ids["input_ids"] if hasattr(ids, "keys") else ids
            out.append((f"bench {kind} {i + 1}", list(ids), 48))
    return out


def load_on(path_name: str):
    from specviz.models.kernels import apply_path
    from specviz.models.pairs import (PRESETS, DEFAULT_PRESET, blocks_for, choose_kernels, load_model,
                                      load_tokenizer, resolve_model)
    from specviz.models.memory import give_back_freed_memory

    target = PRESETS[DEFAULT_PRESET].target
    folder = resolve_model(target)
    choice = choose_kernels(folder, "cpu", None, path_name, gguf=True)
    model = apply_path(load_model(folder, "cpu", choice.load_dtype), choice.path, blocks=blocks_for(target, choice))
    give_back_freed_memory()
    return model, load_tokenizer(folder)


def sizes(model) -> str:
    """What a loaded target holds, in GB: its 4-bit layers, its float16 (or other) linear layers, its embedding."""
    from specviz.models.layers import Fp16Linear, Int4Groups

    def held(module) -> int:
        own = sum(t.numel() * t.element_size() for t in [*module.parameters(), *module.buffers()])
        return own + getattr(module, "packed_bytes", 0) * isinstance(module, Fp16Linear)
    four = sum(held(m) for m in model.modules() if isinstance(m, Int4Groups))
    other = sum(held(m) for m in model.modules() if isinstance(m, (Fp16Linear, torch.nn.Linear)))
    embedding = held(model.get_input_embeddings())
    return (f"4-bit layers {four / 1e9:.2f} GB, other linear layers {other / 1e9:.2f} GB (a step reads "
            f"{(four + other) / 1e9:.2f} GB), embedding {embedding / 1e9:.2f} GB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", default="float32,float16-fbgemm,gguf-int4")
    parser.add_argument("--sizes-only", action="store_true", help="what each path's target holds, no greedy runs")
    args = parser.parse_args()
    paths = args.paths.split(",")
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    from transformers.utils import logging
    logging.disable_progress_bar()
    from specviz.models.gguf_blocks import EMBEDDING, q4k_blocks
    from specviz.models.layers import moved_by
    from specviz.models.machine import machine

    print(f"{time.strftime('%Y-%m-%d')} on {machine('cpu')}; load average {os.getloadavg()[0]:.1f}")
    moved = [moved_by(q.step, q.minimum) for name, q in q4k_blocks("Qwen2.5-Coder-1.5B-Instruct").items()
             if name != EMBEDDING]  # the embedding's rows are computed exactly (layers.Int4Embedding)
    print(f"gguf-int4's steps and minimums in bfloat16 move the file's weights by at most "
          f"{max(m[0] for m in moved):.2%} of their group's largest weight, {statistics.mean(m[1] for m in moved):.3%} "
          f"on average ({len(moved)} Q4_K linear layers)")
    reference = None
    for name in paths:
        model, tokenizer = load_on(name)
        print(f"{name}: {sizes(model)}")
        if args.sizes_only:
            continue
        runs = [(label, *greedy(model, ids, n)) for label, ids, n in shipped_prompts(tokenizer)]
        step = statistics.median(s for _, _, steps in runs for s in steps)
        if reference is None:
            reference = {label: tokens for label, tokens, _ in runs}
            print(f"{name} (the reference): one step {step * 1000:.0f} ms (median over every step)")
        else:
            same = [label for label, tokens, _ in runs if tokens == reference[label]]
            firsts = {label: next(i for i, (a, b) in enumerate(zip(tokens, reference[label])) if a != b)
                      for label, tokens, _ in runs if tokens != reference[label]}
            total = sum(len(t) for _, t, _ in runs)
            agree = sum(sum(a == b for a, b in zip(t, reference[l])) for l, t, _ in runs)
            print(f"{name}: one step {step * 1000:.0f} ms; greedy tokens equal to the reference's on {len(same)} of "
                  f"{len(runs)} prompts; the others first differ at token " +
                  (", ".join(f"{i + 1} ({label})" for label, i in firsts.items()) or "—") +
                  f"; {agree} of {total} tokens at the same place equal")
        del model


if __name__ == "__main__":
    main()

"""The CPU path's goals (issue 43), measured in one run: transformers' own float32 greedy `generate` on the packaged
target, against specviz on the kernels it chooses (auto): the target alone, and the speculative run (cost-aware
adaptive K, the draft model) on a code prompt (48 tokens, K up to 4) and a story prompt (32 tokens, K up to 8);
t(1), t(5) and v from the pair's own short measurement; the pair's resident memory. Turns interleaved (each turn
runs every configuration once), after one warm-up of each; the median turn and the range.

    python -m tools.measure_cpu_path [--turns 5] [--kernels auto] [--llama-cpp BUILD/bin]

With --llama-cpp (the bin folder of a llama.cpp build, docs/benchmarks.md says how; a yardstick, never a dependency),
each turn also runs llama.cpp on the same GGUF files, joined from the same packages: `llama-bench` for the target
alone (48 tokens) and `llama-speculative-simple` with the draft (K up to 4, greedy) on the code prompt, chat template
applied, so its ratios are turn by turn too.

Its figures are docs/benchmarks.md's "The CPU path" and the README's headline table. On an AVX2-only CPU's numbers
without one: run it with ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2
FBGEMM_ENABLE_INSTRUCTIONS=AVX2, which make torch's libraries use AVX2 code only (an emulation: the machine's memory
and clocks stay what they are; the report says which it was).
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import torch

from specviz.record.stats import spread

CODE, STORY = ("code", 48, 4), ("story", 32, 8)  # prompt kind, new tokens, the most K
EMULATION = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA", "FBGEMM_ENABLE_INSTRUCTIONS")


def reference_generate(tokens: int):
    """A function timing transformers' float32 greedy generate on the packaged target (tokens/s), as a user would
    run it: the model loaded in float32 with its default attention, the chat template on the code prompt."""
    from specviz.models.pairs import PRESETS, DEFAULT_PRESET, load_model, load_tokenizer, resolve_model
    from specviz.settings.prompts import CODE_PROMPT

    path = resolve_model(PRESETS[DEFAULT_PRESET].target)
    model, tokenizer = load_model(path, "cpu", "float32"), load_tokenizer(path)
    ids = tokenizer.apply_chat_template([{"role": "user", "content": CODE_PROMPT}], add_generation_prompt=True,
                                        return_tensors="pt", return_dict=True)["input_ids"]

    def run() -> float:
        with torch.inference_mode():
            t0 = time.perf_counter()
            out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=tokens,
                                 min_new_tokens=tokens)
            return (out.shape[1] - ids.shape[1]) / (time.perf_counter() - t0)
    return run


def specviz_runs(engine, kind: str, tokens: int, most_k: int):
    """(target alone, speculative) tokens/s functions for one prompt kind, cost-aware adaptive K up to most_k."""
    from specviz.engine import RunSettings
    from specviz.settings.prompts import BENCH_PROMPTS

    prompt = BENCH_PROMPTS[kind][0]
    settings = RunSettings(k=most_k, temperature=0, max_new_tokens=tokens, adaptive=True)
    return (lambda: engine.baseline(prompt, settings).tokens_per_s,
            lambda: engine.run(prompt, settings, details=False).summary.tokens_per_s)


def llama_cpp_runs(bin_dir: str, tokenizer, tokens: int) -> dict:
    """tokens/s functions running llama.cpp's own tools on the packaged GGUF files (joined once into a temporary
    folder): the target alone (llama-bench, no repacking: its repacked kernels crashed here for batches over one
    token) and its speculative decoding with the packaged draft on the code prompt."""
    import json
    import subprocess
    import tempfile
    from pathlib import Path

    from specviz.models.packaged import PACKAGED, join_chunks
    from specviz.settings.prompts import CODE_PROMPT

    folder = Path(tempfile.mkdtemp(prefix="specviz-gguf-"))
    files = {}
    for role, name in (("draft", "Qwen2.5-Coder-0.5B-Instruct"), ("target", "Qwen2.5-Coder-1.5B-Instruct")):
        files[role] = folder / f"{role}.gguf"
        join_chunks(PACKAGED[name], files[role])
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": CODE_PROMPT}], add_generation_prompt=True,
                                           tokenize=False)

    def bench() -> float:
        out = subprocess.run([f"{bin_dir}/llama-bench", "-m", str(files["target"]), "-t", "2", "-n", str(tokens),
                              "-p", "0", "-r", "1", "--repack", "0", "-o", "json"], capture_output=True, text=True,
                             check=True).stdout
        return float(json.loads(out)[0]["avg_ts"])

    def speculative() -> float:
        out = subprocess.run([f"{bin_dir}/llama-speculative-simple", "-m", str(files["target"]), "-md",
                              str(files["draft"]), "--spec-type", "draft-simple", "--spec-draft-n-max", "4",
                              "--temp", "0", "-t", "2", "-n", str(tokens), "--no-repack", "-p", prompt],
                             capture_output=True, text=True, check=True)
        line = next(l for l in (out.stdout + out.stderr).splitlines() if "decoded" in l and "speed:" in l)
        return float(line.rsplit("speed:", 1)[1].split()[0])
    return {"llama.cpp target alone (llama-bench)": bench, "llama.cpp speculative, code": speculative}


def main() -> None:
    from specviz.models.pair_flags import add_kernels_flag

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=5)
    add_kernels_flag(parser)
    parser.add_argument("--llama-cpp", default="", metavar="BIN", help="a llama.cpp build's bin folder")
    parser.add_argument("--memory-only", action="store_true", help="only the pair's resident memory after loading")
    args = parser.parse_args()
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    from transformers.utils import logging
    logging.disable_progress_bar()
    from specviz.engine import Engine
    from specviz.models.machine import machine
    from specviz.models.pairs import load_pair

    engine = Engine.from_pair(load_pair(kernels=args.kernels))
    engine.warm_up()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with open("/proc/self/status") as f:
        now = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS"))
    if args.memory_only:
        print(f"{time.strftime('%Y-%m-%d')} on {machine('cpu')}; kernels {engine.kernels}; draft {engine.draft_name}")
        print(f"the pair's memory: {now / 1e9:.2f} GB resident after loading, {rss / 1e9:.2f} GB at its peak")
        return
    profile = engine.measure_pass_costs()
    runs = {"transformers float32 generate": reference_generate(CODE[1])}
    for kind, tokens, most_k in (CODE, STORY):
        alone, spec = specviz_runs(engine, kind, tokens, most_k)
        runs[f"specviz target alone, {kind}"], runs[f"specviz speculative, {kind}"] = alone, spec
    if args.llama_cpp:
        runs |= llama_cpp_runs(args.llama_cpp, engine.tokenizer, CODE[1])
    for run in runs.values():
        run()  # warm-up
    speeds = {name: [] for name in runs}
    for _ in range(args.turns):
        for name, run in runs.items():
            speeds[name].append(run())
    emulated = ", ".join(f"{v}={os.environ[v]}" for v in EMULATION if v in os.environ) or "none"
    print(f"{time.strftime('%Y-%m-%d')} on {machine('cpu')}; emulation: {emulated}; load average "
          f"{os.getloadavg()[0]:.1f}; kernels {engine.kernels} ({engine.dtype_why})")
    print(f"the pair's memory: {now / 1e9:.2f} GB resident after loading, {rss / 1e9:.2f} GB at its peak (the "
          f"reference float32 target loaded after this reading)")
    print(f"t(1) {profile.t(1) * 1000:.0f} ms, t(5) {profile.t(5) * 1000:.0f} ms, v = {profile.v(4):.2f}; a draft "
          f"step {profile.draft_step(1) * 1000:.0f} ms (c = {profile.c:.2f}); median of {profile.repeats}")
    print(f"\ntokens/s over {args.turns} interleaved turns, median (range):")
    for name, values in speeds.items():
        print(f"  {name}: {spread(values).text()}")
    base = speeds["transformers float32 generate"]
    for kind in ("code", "story"):
        alone, spec = speeds[f"specviz target alone, {kind}"], speeds[f"specviz speculative, {kind}"]
        ratios = [s / a for s, a in zip(spec, alone)]
        print(f"  {kind}: speculative ÷ its own target alone, turn by turn: {spread(ratios).text()}")
    ratios = [a / b for a, b in zip(speeds["specviz target alone, code"], base)]
    print(f"  code: specviz target alone ÷ transformers float32 generate, turn by turn: {spread(ratios).text()}")
    ratios = [a / b for a, b in zip(speeds["specviz speculative, code"], base)]
    print(f"  code: specviz speculative ÷ transformers float32 generate, turn by turn: {spread(ratios).text()}")
    if args.llama_cpp:
        for mine, theirs in (("specviz target alone, code", "llama.cpp target alone (llama-bench)"),
                             ("specviz speculative, code", "llama.cpp speculative, code")):
            ratios = [a / b for a, b in zip(speeds[mine], speeds[theirs])]
            print(f"  {mine} ÷ {theirs}, turn by turn: {spread(ratios).text()}")


if __name__ == "__main__":
    main()

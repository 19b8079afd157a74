"""Memory per preset, for the README's hosting table.

    python -m tools.measure_memory                 # the packaged pair, measured; every preset, computed
    python -m tools.measure_memory --dtypes float32,bfloat16

Measured (the packaged pair, which is on disk here): a fresh process loads the pair on CPU in a dtype, makes one
16-token run, and reports its peak resident memory (VmHWM in /proc/self/status, Linux). Computed (every preset,
hub ones included, whose weights cannot be downloaded here): parameters × bytes per parameter of the dtype, the
parameters counted by building each model from its published config on the meta device (no weights, no
download). That is the weights alone; the measured rows show what a process needs on top of them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
QWEN = dict(model_type="qwen2", rope_theta=1000000.0, max_position_embeddings=32768, rms_norm_eps=1e-6,
            num_attention_heads=14, num_key_value_heads=2)
# The published config.json shapes (hub: Qwen/…, HuggingFaceTB/…). The packaged GGUFs have the same shapes, but
# each stores its own lm_head, which the loaded models keep untied (2407 M parameters measured, as computed).
CONFIGS = {
    "Qwen2.5-0.5B": dict(QWEN, vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         tie_word_embeddings=True),
    "Qwen2.5-0.5B, untied head": dict(QWEN, vocab_size=151936, hidden_size=896, intermediate_size=4864,
                                      num_hidden_layers=24, tie_word_embeddings=False),
    "Qwen2.5-1.5B": dict(QWEN, vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                         num_attention_heads=12, tie_word_embeddings=True),
    "Qwen2.5-1.5B, untied head": dict(QWEN, vocab_size=151936, hidden_size=1536, intermediate_size=8960,
                                      num_hidden_layers=28, num_attention_heads=12, tie_word_embeddings=False),
    "Qwen2.5-7B": dict(QWEN, vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                       num_attention_heads=28, num_key_value_heads=4, tie_word_embeddings=False),
    "SmolLM2-135M": dict(model_type="llama", vocab_size=49152, hidden_size=576, intermediate_size=1536,
                         num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                         tie_word_embeddings=True),
    "SmolLM2-1.7B": dict(model_type="llama", vocab_size=49152, hidden_size=2048, intermediate_size=8192,
                         num_hidden_layers=24, num_attention_heads=32, num_key_value_heads=32,
                         tie_word_embeddings=True),
}
SHAPES = {  # preset -> (draft shape, target shape)
    "qwen2.5-coder-0.5b-1.5b-offline": ("Qwen2.5-0.5B, untied head", "Qwen2.5-1.5B, untied head"),
    "qwen2.5-0.5b-7b": ("Qwen2.5-0.5B", "Qwen2.5-7B"),
    "qwen2.5-coder-0.5b-7b": ("Qwen2.5-0.5B", "Qwen2.5-7B"),
    "smollm2-135m-1.7b": ("SmolLM2-135M", "SmolLM2-1.7B"),
}
MEASURE = """
import json, sys
from specviz.engine import Engine, RunSettings
from specviz.models.pairs import load_pair
pair = load_pair(device="cpu", dtype=sys.argv[1], draft_weights="full")
engine = Engine.from_pair(pair)
engine.run("Write a Python function that returns the n-th Fibonacci number.", RunSettings(k=4, max_new_tokens=16))
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
params = [p for m in (pair.draft, pair.target) for p in m.parameters()]
print(json.dumps({"peak_kb": int(status["VmHWM"].split()[0]), "params": sum(p.numel() for p in params),
                  "weights_bytes": sum(p.numel() * p.element_size() for p in params)}))
"""


def parameters(shape: str) -> int:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = dict(CONFIGS[shape])
    config = AutoConfig.for_model(config.pop("model_type"), **config)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def measured(dtype: str) -> dict:
    done = subprocess.run([sys.executable, "-c", MEASURE, dtype], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="float32,bfloat16", help="dtypes to measure the packaged pair in")
    a = parser.parse_args(argv)
    print("| preset | draft + target parameters | float32 weights | bfloat16/float16 weights |")
    print("|---|---|---|---|")
    for preset, (draft, target) in SHAPES.items():
        n = parameters(draft) + parameters(target)
        print(f"| {preset} | {parameters(draft) / 1e6:.0f} M + {parameters(target) / 1e6:.0f} M | "
              f"{n * 4 / 1e9:.1f} GB | {n * 2 / 1e9:.1f} GB |")
    print()
    print("| packaged pair on CPU | parameters | weights | peak resident memory (load + a 16-token run) |")
    print("|---|---|---|---|")
    for dtype in a.dtypes.split(","):
        m = measured(dtype)
        print(f"| {dtype} | {m['params'] / 1e6:.0f} M | {m['weights_bytes'] / 1e9:.2f} GB | {m['peak_kb'] * 1024 / 1e9:.2f} GB |", flush=True)


if __name__ == "__main__":
    main()

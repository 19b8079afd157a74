"""GPU projection: what speculative decoding would give on a CUDA machine, with no downloaded weights.

Random-weight models of real architectures (Qwen2.5-0.5B as draft, Qwen2.5-7B as target, in the dtype the app
picks on that GPU) cost what the real ones cost per forward pass, since a pass's time does not depend on the
weights' values. We time the target pass over 1..16 new tokens on a warm cache and the draft step, then combine
them with acceptance rates α measured on real models (a `bench` results.json):

    speedup(K) = E(α, K) · t_target(1) / (K · t_draft + t_target(K + 1)),   E = (1 − α^(K+1)) / (1 − α)

It is a projection, and docs/benchmarks.md labels it so.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from specviz.measure import pass_timing
from specviz.algorithm.theory import expected_tokens_per_pass

QWEN = dict(vocab_size=151936, rope_theta=1000000.0, max_position_embeddings=32768, rms_norm_eps=1e-6)
ARCHS = {  # the published configs' shapes
    "Qwen2.5-0.5B": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                         num_key_value_heads=2, tie_word_embeddings=True, **QWEN),
    "Qwen2.5-7B": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                       num_key_value_heads=4, tie_word_embeddings=False, **{**QWEN, "vocab_size": 152064}),
    # tiny shapes prove the script on a CPU (tools/gpu_check.sh --dry-run): Qwen's 151,936-row output layer would be
    # most of their time, so a vocabulary of 1,024
    "tiny-draft": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, **{**QWEN, "vocab_size": 1024}),
    "tiny-target": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=4, num_attention_heads=4,
                        num_key_value_heads=2, **{**QWEN, "vocab_size": 1024}),
}


def random_model(arch: str, device: str, dtype: torch.dtype):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    with torch.device(device):  # built in dtype: a 7B built in float32 first would need 30 GB, more than a 24 GB GPU
        return Qwen2ForCausalLM._from_config(Qwen2Config(**ARCHS[arch]), dtype=dtype).eval()


def pass_time(model, n_new: int, context: int = 512, repeats: int = 10) -> float:
    """Median seconds of one forward pass over n_new tokens on top of a cached context of `context` tokens."""
    return pass_timing.pass_time(model, pass_timing.prefill(model, context), n_new, repeats, warm_up=2)


def measure(draft_arch: str, target_arch: str, device: str, dtype: torch.dtype, max_new: int = 16) -> dict:
    draft = random_model(draft_arch, device, dtype)
    t_draft = pass_time(draft, 1)
    del draft
    target = random_model(target_arch, device, dtype)
    t_target = {n: pass_time(target, n) for n in range(1, max_new + 1)}
    return {"draft": draft_arch, "target": target_arch, "device": _device_name(device), "dtype": str(dtype),
            "t_draft_s": t_draft, "t_target_s": t_target, "c": t_draft / t_target[1]}


def projected_speedup(alpha: float, k: int, m: dict) -> float:
    t = m["t_target_s"]
    return expected_tokens_per_pass(alpha, k) * t[1] / (k * m["t_draft_s"] + t[k + 1])


# α per prompt type when no bench results are given: round stand-ins, not a measurement (the α measured on the
# packaged pair, dated, are docs/benchmarks.md's, "The benchmark"); the report says which it used.
STAND_IN_ALPHAS = {"code": 0.9, "factual": 0.8, "story": 0.6}
MEASURED_ALPHAS = "measured on the real CPU pair"  # what the report says of α read from a bench results.json


def alphas_from_results(path: str | None) -> dict[str, float]:
    """α per prompt type from a bench results.json (greedy, draft model, K=4), or STAND_IN_ALPHAS."""
    if not path:
        return dict(STAND_IN_ALPHAS)
    rows = json.loads(Path(path).read_text())["rows"]
    return {r["prompt_type"]: r["alpha"] for r in rows if r["config"] == "specviz K=4" and r["mode"] == "greedy"}


def projection_report(m: dict, alphas: dict[str, float], ks=range(1, 9),
                      alpha_source: str = MEASURED_ALPHAS) -> str:
    t = m["t_target_s"]
    lines = [f"Projection (random weights, {m['draft']} → {m['target']}, {m['device']}, {m['dtype']}): draft step "
             f"{m['t_draft_s'] * 1000:.2f} ms, target pass {t[1] * 1000:.2f} ms (1 token) … "
             f"{t[max(t)] * 1000:.2f} ms ({max(t)} tokens), c = {m['c']:.3f}", "",
             "| new tokens in a target pass | " + " | ".join(str(n) for n in t) + " |",
             "|---|" + "---|" * len(t),
             "| ms | " + " | ".join(f"{v * 1000:.2f}" for v in t.values()) + " |", "",
             f"| prompt type | α ({alpha_source}) | " + " | ".join(f"K={k}" for k in ks) + " |",
             "|---|---|" + "---|" * len(ks)]
    for name, alpha in alphas.items():
        lines.append(f"| {name} | {alpha:.2f} | " + " | ".join(f"{projected_speedup(alpha, k, m):.2f}×" for k in ks)
                     + " |")
    return "\n".join(lines) + "\n"


def _device_name(device: str) -> str:
    return torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"


def run_projection(out: Path, results: str | None, tiny: bool) -> str:
    """On the GPU if there is one, in the dtype the app would pick there (a T4 gets float16, not bfloat16)."""
    from specviz.models.pairs import DTYPES, auto_dtype

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = DTYPES[auto_dtype(device)[0]]
    draft, target = ("tiny-draft", "tiny-target") if tiny else ("Qwen2.5-0.5B", "Qwen2.5-7B")
    m = measure(draft, target, device, dtype)
    source = MEASURED_ALPHAS if results else "stand-ins, not measured: pass --alpha-from"
    report = projection_report(m, alphas_from_results(results), alpha_source=source)
    out.mkdir(parents=True, exist_ok=True)
    (out / "projection.json").write_text(json.dumps(m, indent=1))
    (out / "projection.md").write_text(report)
    return report

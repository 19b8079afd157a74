"""`python -m specviz bench`: measured speedups side by side, in one run, on one machine.

For each prompt type (code, factual, story, rewrite) it times, after one warm-up, with repeats, reporting medians:
target-only decoding; specviz with the draft model for each K (greedy and sampled); specviz with prompt lookup;
transformers' own assisted generation (and its prompt lookup) as the peer. Per configuration: tokens/s, speedup
over target-only from the same run, acceptance α, tokens per target pass, cost ratio c, and the predicted
speedup E/(K·c+v) beside the measured one. Writes results.json, report.md and chart.html to --out.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from .engine import Engine, RunSettings
from .quant import int8_name, quantize_linears, use_int8
from .options import CODE_PROMPT, DRAFT_WEIGHTS, DTYPE_CHOICES, STORY_PROMPT
from .explorer import SteadyState, steady_state
from .trace import acceptance_rate, decode_speed, step_times

PROMPTS = {
    "code": [CODE_PROMPT,
             "Write a Python function that checks whether a string is a palindrome."],
    "factual": ["Explain in a short paragraph how photosynthesis works.",
                "Describe the water cycle in a short paragraph."],
    "story": [STORY_PROMPT,
              "Tell a short bedtime story about a dragon who is afraid of the dark."],
    "rewrite": ["Rewrite this function with type hints and a docstring, keeping the body the same:\n\n"
                "def moving_average(values, window):\n    out = []\n    for i in range(len(values) - window + 1):\n"
                "        chunk = values[i:i + window]\n        out.append(sum(chunk) / window)\n    return out\n",
                "Add comments to this code without changing it:\n\ndef merge(a, b):\n    i = j = 0\n"
                "    result = []\n    while i < len(a) and j < len(b):\n        if a[i] <= b[j]:\n"
                "            result.append(a[i])\n            i += 1\n        else:\n            result.append(b[j])\n"
                "            j += 1\n    return result + a[i:] + b[j:]\n"],
}


@dataclass
class Row:
    prompt_type: str
    config: str  # e.g. "specviz K=4", "target-only", "transformers assisted"
    mode: str  # greedy | sampled
    k: float | None
    tokens_per_s: float
    speedup: float  # over target-only (same mode, same prompts, this run)
    alpha: float | None = None
    tokens_per_pass: float | None = None
    c: float | None = None
    predicted: float | None = None
    ttft_s: float | None = None
    # Throughput after the first round (or first token), over target-only's the same way: the prompt's encoding
    # is latency (TTFT), not throughput, and the prediction models only the steady state it is compared with.
    decode_speedup: float | None = None
    v: float | None = None  # the verify pass over one target-only step (1: memory-bound ideal)


def add_bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="bench-out", help="folder for results.json, report.md, chart.html")
    p.add_argument("--preset", default=None)
    p.add_argument("--dtype", default="auto", choices=DTYPE_CHOICES)
    p.add_argument("--draft-weights", default="auto", choices=DRAFT_WEIGHTS,
                   help="specviz's draft: int8 weights (auto on CPU) or as loaded; the peer always gets the "
                        "draft as loaded, and with int8 also a row with specviz's int8 draft")
    p.add_argument("--ks", default="1,2,3,4,5,6,7,8", help="K values for specviz with the draft model")
    p.add_argument("--adaptive-k", type=int, default=12, help="the most K of specviz's adaptive rows")
    p.add_argument("--lookup-ks", default="2,4,8", help="K values for specviz with prompt lookup")
    p.add_argument("--modes", default="greedy,sampled")
    p.add_argument("--temperature", type=float, default=0.7, help="temperature of the sampled mode")
    p.add_argument("--types", default="code,factual,story,rewrite")
    p.add_argument("--prompts-per-type", type=int, default=1)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--no-peer", action="store_true", help="skip transformers' assisted generation")
    p.add_argument("--quick", action="store_true", help="a smoke run: tiny settings, finishes in minutes")
    p.add_argument("--tiny", action="store_true", help="random-weight tiny models instead of the real pair (CI)")
    p.add_argument("--gpu-projection", action="store_true",
                   help="time random-weight Qwen2.5 0.5B/7B passes (CUDA) and project speedups from measured α")
    p.add_argument("--alpha-from", default=None, metavar="RESULTS_JSON",
                   help="with --gpu-projection: take α per prompt type from an earlier bench's results.json")


def bench_command(a: argparse.Namespace) -> int:
    if a.gpu_projection:
        from .projection import run_projection
        print(run_projection(Path(a.out), a.alpha_from, a.tiny))
        return 0
    if a.quick:
        a.ks, a.lookup_ks, a.modes, a.types, a.repeats, a.max_new_tokens = "1,4", "4", "greedy,sampled", "code,rewrite", 1, 12
        a.adaptive_k = 4
        a.prompts_per_type = 1
    engine = _tiny_engine() if a.tiny else _real_engine(a)
    peer_draft = engine.draft  # transformers gets the draft as loaded: the setup its users would run
    if use_int8(a.draft_weights, engine.device, next(engine.target.parameters()).dtype):
        engine = Engine(quantize_linears(copy.deepcopy(engine.draft)), engine.target, engine.tokenizer,
                        int8_name(engine.draft_name), engine.target_name, engine.dtype)
    ks = {"model": [int(k) for k in a.ks.split(",")], "lookup": [int(k) for k in a.lookup_ks.split(",")],
          "adaptive": a.adaptive_k}
    engine.run(PROMPTS["code"][0], RunSettings(max_new_tokens=8))  # one throwaway run: allocator, caches
    rows = run_bench(engine, ks, a.modes.split(","), a.types.split(","), a.prompts_per_type, a.repeats,
                     a.max_new_tokens, a.temperature, peer=not a.no_peer, peer_draft=peer_draft)
    extra = measure_tracing_overhead(engine, a.max_new_tokens, a.repeats)
    write_report(Path(a.out), rows, extra, engine, a)
    print((Path(a.out) / "report.md").read_text())
    return 0


def _real_engine(a) -> Engine:
    from .models import load_pair
    engine = Engine.from_pair(load_pair(a.preset, dtype=a.dtype, draft_weights="full"))
    engine.warm_up()
    return engine


def _tiny_engine() -> Engine:
    """Random-weight stand-ins sharing the packaged tokenizer: exercises every code path fast (smoke tests)."""
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from .models import PACKAGED, prepare_packaged
    tok = AutoTokenizer.from_pretrained(prepare_packaged(next(iter(PACKAGED))))
    cfg = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=2048)
    torch.manual_seed(0)
    return Engine(Qwen2ForCausalLM(Qwen2Config(num_hidden_layers=1, **cfg)).eval(),
                  Qwen2ForCausalLM(Qwen2Config(num_hidden_layers=2, **cfg)).eval(), tok, "tiny-1L", "tiny-2L")


def _repeated(fn, repeats: int) -> list:
    """The results of `repeats` calls of fn (callers take the median); the engine was warmed up once at the start."""
    return [fn() for _ in range(repeats)]


def run_bench(engine, ks, modes, types, per_type, repeats, max_new, temperature, peer=True,
              peer_draft=None) -> list[Row]:
    """peer_draft: the draft transformers is given (default: the engine's); when it differs from the
    engine's (specviz runs an int8 draft), a row of transformers with the engine's draft shows how much of
    the difference is the lighter draft and how much the loop."""
    peer_draft = engine.draft if peer_draft is None else peer_draft
    peers = [("transformers assisted (default K)", "heuristic", peer_draft),
             ("transformers assisted K=4", "constant", peer_draft),
             ("transformers prompt lookup", "lookup", None)]
    if peer_draft is not engine.draft:
        peers.append(("transformers assisted (default K), int8 draft", "heuristic", engine.draft))
    rows = []
    for ptype in types:
        prompts = PROMPTS[ptype][:per_type]
        for mode in modes:
            temp = 0.0 if mode == "greedy" else temperature
            base = _target_only_figures(engine, prompts, repeats, max_new, temp)
            rows.append(Row(ptype, "target-only", mode, None, base["tps"], 1.0, ttft_s=base["ttft"]))
            for drafter in ("model", "lookup"):
                for k in ks[drafter]:
                    r = _speculative_figures(engine, prompts, repeats, max_new, temp, k, drafter, base["step"])
                    name = f"specviz K={k}" if drafter == "model" else f"specviz lookup K={k}"
                    rows.append(Row(ptype, name, mode, k, r["tps"], r["tps"] / base["tps"], r["alpha"], r["tpp"],
                                    r["c"], r["predicted"], r["ttft"], r["decode_tps"] * base["step"], r["v"]))
                    print(f"{ptype:8} {mode:7} {name:22} {r['tps']:6.2f} tok/s  x{r['tps'] / base['tps']:.2f}",
                          flush=True)
                if drafter == "model":
                    kmax = ks.get("adaptive", max(ks["model"]))
                    adaptive = _speculative_figures(engine, prompts, repeats, max_new, temp, kmax, "model", base["step"],
                                        adaptive=True)
                    rows.append(Row(ptype, f"specviz adaptive K≤{kmax}", mode, adaptive["mean_k"],
                                    adaptive["tps"], adaptive["tps"] / base["tps"], adaptive["alpha"],
                                    adaptive["tpp"], adaptive["c"], adaptive["predicted"], adaptive["ttft"],
                                    adaptive["decode_tps"] * base["step"], adaptive["v"]))
            if peer:
                hf_base = _transformers_tokens_per_s(engine, prompts, repeats, max_new, temp, None)
                for label, kind, assistant in peers:
                    tps = _transformers_tokens_per_s(engine, prompts, repeats, max_new, temp, kind, assistant)
                    rows.append(Row(ptype, label, mode, None, tps, tps / base["tps"]))
                    print(f"{ptype:8} {mode:7} {label:22} {tps:6.2f} tok/s  x{tps / base['tps']:.2f}", flush=True)
                rows.append(Row(ptype, "transformers target-only", mode, None, hf_base, hf_base / base["tps"]))
    return rows


def _target_only_figures(engine, prompts, repeats, max_new, temp):
    """Target-only: tokens/s, time to first token, and the time of one decoding step after the prompt."""
    tps, ttft, step = [], [], []
    for prompt in prompts:
        s = RunSettings(k=1, temperature=temp, max_new_tokens=max_new)
        for b in _repeated(lambda: engine.baseline(prompt, s), repeats):
            tps.append(b.tokens_per_s)
            ttft.append(b.first_token_time_s)
            step.append((b.total_time_s - b.first_token_time_s) / max(1, len(b.output_token_ids) - 1))
    return {"tps": statistics.median(tps), "ttft": statistics.median(ttft), "step": statistics.median(step)}


def _speculative_figures(engine, prompts, repeats, max_new, temp, k, drafter, target_step, adaptive=False, details=True):
    """Median figures of specviz runs (see trace_figures)."""
    out = {}
    for prompt in prompts:
        s = RunSettings(k=k, temperature=temp, max_new_tokens=max_new, drafter=drafter, adaptive=adaptive)
        for t in _repeated(lambda: engine.run(prompt, s, details=details), repeats):
            for key, value in trace_figures(t, target_step).items():
                out.setdefault(key, []).append(value)
    return {key: statistics.median(v) for key, v in out.items()}


def trace_figures(t, target_step: float) -> dict:
    """One run's figures. c and v: a draft step and a verify pass over one target-only step (`target_step`, from
    the baseline runs); predicted: E(α, K̄) / (K̄·c + v) with α, K̄ and the times from the rounds after the first
    (which also encodes the prompt), the Lab's theory for the same trace; decode_tps: tokens/s of those same
    rounds, wall clock, to compare with the prediction."""
    m, later = t.summary, t.rounds[1:] or t.rounds
    steady = steady_state(t.rounds, target_step) or SteadyState(  # nothing drafted: no draft cost
        acceptance_rate(later), 0.0, 0.0, step_times(t.rounds)[1] / target_step)
    return {"tps": m.tokens_per_s, "alpha": m.acceptance_rate, "tpp": m.tokens_per_pass, "c": steady.c,
            "v": steady.v, "predicted": steady.speedup, "mean_k": steady.k, "ttft": m.first_token_time_s,
            "decode_tps": decode_speed(t) or m.tokens_per_s}


def _transformers_tokens_per_s(engine, prompts, repeats, max_new, temp, kind, assistant=None) -> float:
    """transformers' generate: target-only (kind None), assisted by `assistant`, or prompt lookup."""
    tps = []
    for prompt in prompts:
        ids = torch.tensor([engine.encode(prompt, RunSettings(max_new_tokens=max_new))], device=engine.device)
        kwargs = dict(max_new_tokens=max_new, do_sample=temp > 0, pad_token_id=next(iter(engine.eos_ids)))
        if temp > 0:
            kwargs.update(temperature=temp, top_k=0, top_p=1.0)
        if kind in ("heuristic", "constant"):
            kwargs["assistant_model"] = assistant
        if kind == "lookup":
            kwargs["prompt_lookup_num_tokens"] = 4
        gc = (assistant or engine.draft).generation_config
        saved = (getattr(gc, "num_assistant_tokens", 20), getattr(gc, "num_assistant_tokens_schedule", "constant"))
        if kind == "constant":
            gc.num_assistant_tokens, gc.num_assistant_tokens_schedule = 4, "constant"

        def once():
            torch.manual_seed(0)
            t0 = time.perf_counter()
            with torch.inference_mode():
                out = engine.target.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
            return (out.shape[1] - ids.shape[1]) / (time.perf_counter() - t0)
        try:
            tps.extend(_repeated(once, repeats))
        finally:
            gc.num_assistant_tokens, gc.num_assistant_tokens_schedule = saved
    return statistics.median(tps)


def measure_tracing_overhead(engine, max_new, repeats) -> dict:
    prompt = PROMPTS["code"][0]
    traced = _speculative_figures(engine, [prompt], repeats, max_new, 0.0, 4, "model", 1.0, details=True)["tps"]
    lean = _speculative_figures(engine, [prompt], repeats, max_new, 0.0, 4, "model", 1.0, details=False)["tps"]
    return {"traced_tokens_per_s": traced, "untraced_tokens_per_s": lean, "overhead": 1 - traced / lean}


def write_report(out: Path, rows: list[Row], extra: dict, engine, a) -> None:
    import transformers

    out.mkdir(parents=True, exist_ok=True)
    env = {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
           "torch": torch.__version__, "transformers": transformers.__version__, "device": engine.device,
           "dtype": engine.dtype, "draft": engine.draft_name, "target": engine.target_name,
           "max_new_tokens": a.max_new_tokens, "repeats": a.repeats, "date": time.strftime("%Y-%m-%d")}
    (out / "results.json").write_text(json.dumps({"env": env, "tracing": extra, "rows": [asdict(r) for r in rows]},
                                                 indent=1))
    (out / "report.md").write_text(markdown_report(rows, extra, env))
    chart_figure(rows).write_html(out / "chart.html", include_plotlyjs=True)


def _f(x, fmt="{:.2f}"):
    return "" if x is None else fmt.format(x)


def markdown_report(rows: list[Row], extra: dict, env: dict) -> str:
    lines = [f"{env['draft']} → {env['target']} · {env['device']} · {env['dtype']} · torch {env['torch']} · "
             f"transformers {env['transformers']} · {env['threads']} threads · {env['max_new_tokens']} new tokens · "
             f"median of {env['repeats']} runs after a warm-up · {env['date']}", ""]
    lines += peer_table(rows) + [""]
    lines += ["| prompt | mode | config | tok/s | speedup | decode speedup | α | tok/pass | c | v | predicted | "
              "measured/predicted | TTFT s |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = r.decode_speedup / r.predicted if r.predicted and r.decode_speedup else None
        lines.append(f"| {r.prompt_type} | {r.mode} | {r.config} | {_f(r.tokens_per_s)} | {_f(r.speedup)}× | "
                     f"{_f(r.decode_speedup, '{:.2f}×')} | {_f(r.alpha)} | {_f(r.tokens_per_pass)} | {_f(r.c)} | {_f(r.v)} | "
                     f"{_f(r.predicted)} | {_f(ratio)} | {_f(r.ttft_s)} |")
    lines += ["", f"Tracing overhead (code prompt, greedy, K=4): traced {extra['traced_tokens_per_s']:.2f} tok/s, "
                  f"untraced {extra['untraced_tokens_per_s']:.2f} tok/s → {extra['overhead'] * 100:.1f} %", ""]
    return "\n".join(lines)


def peer_table(rows: list[Row]) -> list[str]:
    """One line per prompt type and mode: specviz adaptive and its best fixed K against transformers' settings."""
    lines = ["| prompt | mode | target-only tok/s | specviz adaptive | best fixed K | transformers default | "
             "transformers K=4 | transformers, specviz's draft | adaptive ÷ best transformers |",
             "|---|---|---|---|---|---|---|---|---|"]
    for ptype, mode in dict.fromkeys((r.prompt_type, r.mode) for r in rows):
        group = {r.config: r for r in rows if (r.prompt_type, r.mode) == (ptype, mode)}
        adaptive = next((r for c, r in group.items() if c.startswith("specviz adaptive")), None)
        fixed = [r for c, r in group.items() if c.startswith("specviz K=")]
        best = max(fixed, key=lambda r: r.tokens_per_s, default=None)
        peers = [group.get(c) for c in ("transformers assisted (default K)", "transformers assisted K=4")]
        best_peer = max((r.tokens_per_s for r in peers if r), default=None)
        ratio = f"**{adaptive.tokens_per_s / best_peer:.2f}×**" if adaptive and best_peer else ""
        lines.append(f"| {ptype} | {mode} | {group['target-only'].tokens_per_s:.2f} | {_cell(adaptive)} | "
                     f"{_cell(best)}{f' at K={best.k:g}' if best else ''} | {_cell(peers[0])} | {_cell(peers[1])} | "
                     f"{_cell(group.get('transformers assisted (default K), int8 draft'))} | {ratio} |")
    return lines


def _cell(r: Row | None) -> str:
    return "" if r is None else f"{r.tokens_per_s:.2f} ({r.speedup:.2f}×)"


def chart_figure(rows: list[Row]):
    import plotly.graph_objects as go

    fig = go.Figure()
    for (ptype, mode) in dict.fromkeys((r.prompt_type, r.mode) for r in rows):
        pts = [r for r in rows if (r.prompt_type, r.mode) == (ptype, mode) and r.config.startswith("specviz K=")]
        fig.add_scatter(x=[r.k for r in pts], y=[r.speedup for r in pts], mode="lines+markers",
                        name=f"{ptype} {mode} measured")
        fig.add_scatter(x=[r.k for r in pts], y=[r.decode_speedup for r in pts], mode="lines+markers",
                        line=dict(dash="dash"), name=f"{ptype} {mode} measured after the first round")
        fig.add_scatter(x=[r.k for r in pts], y=[r.predicted for r in pts], mode="lines",
                        line=dict(dash="dot"), name=f"{ptype} {mode} predicted E/(Kc+v)")
    fig.update_layout(title="specviz speedup over target-only vs K", xaxis_title="K (draft tokens per round)",
                      yaxis_title="speedup ×", template="plotly_white")
    return fig

"""The benchmark's rows and their report: results.json, report.md (the stop rules, the peers, every row) and
chart.html. Pure functions of the rows (measure/bench.py measures them)."""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from specviz.models.machine import cpu_flags
from specviz.record.stats import Spread
from specviz.measure.peers import SERVED, about
from specviz.settings.bounds import MAX_K

SAME_DRAFT_PEER = "transformers exactly K=4, specviz's draft"  # the like-for-like peer: same draft object, same K
COST_CONFIG = "specviz cost-aware K"  # + "≤12": the cost-aware stop rule (algorithm/cost_rule.py)


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
    spreads: dict[str, list[float]] = field(default_factory=dict)  # figure -> [min, max] over the runs (tps,
    #                                                                 speedup, ttft, …) whose median the row holds
    by_position: list[list[int]] = field(default_factory=list)  # [tested, accepted] drafts at chain position 1, 2, …
    #                                                              over its distinct runs (bench.pooled_positions)
    runs: int = 1  # the runs each median and its spread are over
    decode_tokens_per_s: float | None = None  # tokens/s after the first token (specviz: after the first round)
    prefill_tokens_per_s: float | None = None  # prompt tokens/s of the prefill, where the run reports it (llama.cpp)

    def spread(self, key: str, median: float) -> Spread:
        """A figure's median with its least and most over the runs (`median` itself where none are kept)."""
        low, high = self.spreads.get(key, (median, median))
        return Spread(median, low, high, self.runs)


def write_report(out: Path, rows: list[Row], extra: dict, engine, a) -> dict:
    """Write results.json, report.md and chart.html to `out`. -> results.json's env (what ran, where, when)."""
    import transformers

    out.mkdir(parents=True, exist_ok=True)
    env = {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
           "torch": torch.__version__, "transformers": transformers.__version__, "device": engine.device,
           "dtype": engine.dtype, "draft": engine.draft_name, "target": engine.target_name,
           "max_new_tokens": a.max_new_tokens, "repeats": a.repeats, "date": time.strftime("%Y-%m-%d"),
           "cpu_flags": cpu_flags(), "verify_cost": a.verify_cost, "drafters": bool(getattr(a, "drafters", False)),
           "pass_costs": {"c": engine.pass_costs.c, "v": [engine.pass_costs.v(k) for k in (1, 4, 8)]},
           "peers": about() if any(r.config.startswith(SERVED) for r in rows) else None}
    (out / "results.json").write_text(json.dumps({"env": env, "tracing": extra, "rows": [asdict(r) for r in rows]},
                                                 indent=1))
    (out / "report.md").write_text(markdown_report(rows, extra, env))
    chart_figure(rows).write_html(out / "chart.html", include_plotlyjs=True)
    return env


def _f(x, fmt="{:.2f}"):
    return "" if x is None else fmt.format(x)


def _m(r: Row | None, key: str, value: float | None, digits: int = 2) -> str:
    """A median with its min–max over the runs: '4.10 (3.90–4.30)'."""
    return "" if r is None or value is None else r.spread(key, value).text(digits)


def markdown_report(rows: list[Row], extra: dict, env: dict) -> str:
    lines = [f"{env['draft']} → {env['target']} · {env['device']} · {env['dtype']} · torch {env['torch']} · "
             f"transformers {env['transformers']} · {env['threads']} threads · {env['max_new_tokens']} new tokens · "
             f"median (min–max) of {env['repeats']} runs per prompt after a warm-up, configurations interleaved · "
             f"{env['date']}", ""]
    if env.get("verify_cost"):
        lines += [f"Simulated verify: every target pass over n = 2–{MAX_K + 1} tokens sleeps so that t(5)/t(1) = "
                  f"{env['verify_cost']:g} (`--verify-cost`).", ""]
    if env.get("drafters"):
        lines += drafters_table(rows) + [""] + positions_table(rows) + [""]
    else:
        lines += rules_table(rows) + [""] + peer_table(rows) + [""] + beside_llama(rows, env.get("peers")) + [""]
    lines += ["| prompt | mode | config | tok/s | speedup | decode speedup | α | tok/pass | c | v | predicted | "
              "measured/predicted | TTFT s |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = r.decode_speedup / r.predicted if r.predicted and r.decode_speedup else None
        lines.append(f"| {r.prompt_type} | {r.mode} | {r.config} | {_m(r, 'tps', r.tokens_per_s)} | "
                     f"{_m(r, 'speedup', r.speedup)} | {_m(r, 'decode_speedup', r.decode_speedup)} | "
                     f"{_m(r, 'alpha', r.alpha)} | {_f(r.tokens_per_pass)} | {_m(r, 'c', r.c)} | {_m(r, 'v', r.v)} | "
                     f"{_f(r.predicted)} | {_f(ratio)} | {_m(r, 'ttft', r.ttft_s)} |")
    lines += [] if extra is None else ["", tracing_line(extra), ""]
    return "\n".join(lines)


def tracing_line(t: dict) -> str:
    """The tracing overhead (bench.measure_tracing_overhead's figures): each side's tokens/s with its range."""
    traced, lean = (Spread(t[f"{side}_tokens_per_s"], *t[f"{side}_spread"], t["runs"])
                    for side in ("traced", "untraced"))
    return (f"Tracing overhead (code prompt, greedy, K=4, interleaved): traced {traced.text(unit=' tok/s')}, "
            f"minimal trace {lean.text(unit=' tok/s')} → {t['overhead'] * 100:.1f} %")


def rules_table(rows: list[Row]) -> list[str]:
    """One line per prompt type and mode: the stop rules' speedups over the target alone (median, min–max), and the
    cost-aware rule's mean K and its own prediction against its measurement after the first round."""
    lines = ["| prompt | mode | target-only tok/s | K=4 | threshold rule | cost-aware rule | cost-aware mean K | "
             "its prediction | measured ÷ predicted | transformers default |", "|---|---|---|---|---|---|---|---|---|---|"]
    for ptype, mode in dict.fromkeys((r.prompt_type, r.mode) for r in rows):
        group = {r.config: r for r in rows if (r.prompt_type, r.mode) == (ptype, mode)}
        cost = next((r for c, r in group.items() if c.startswith(COST_CONFIG)), None)
        if cost is None:
            return []
        threshold = next((r for c, r in group.items() if c.startswith("specviz adaptive")), None)
        ratio = cost.decode_speedup / cost.predicted if cost.predicted and cost.decode_speedup else None
        base = group["target-only"]
        lines.append(f"| {ptype} | {mode} | {_m(base, 'tps', base.tokens_per_s)} | {_speedup(group.get('specviz K=4'))} | "
                     f"{_speedup(threshold)} | **{_speedup(cost)}** | {_f(cost.k)} | {_f(cost.predicted)} | "
                     f"{_f(ratio)} | {_speedup(group.get('transformers assisted (default K)'))} |")
    return lines


def drafters_table(rows: list[Row]) -> list[str]:
    """`bench --drafters`: one line per prompt type, mode and drafter: tokens/s, speedup over the target alone, α and
    tokens per target pass (medians, min–max over the runs)."""
    lines = ["| prompt | mode | drafter | tok/s | speedup | α | tokens per target pass |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.prompt_type} | {r.mode} | {r.config} | {_m(r, 'tps', r.tokens_per_s)} | "
                     f"{_speedup(r) if r.config != 'target-only' else '1'} | {_m(r, 'alpha', r.alpha)} | "
                     f"{_m(r, 'tpp', r.tokens_per_pass)} |")
    return lines


def positions_table(rows: list[Row]) -> list[str]:
    """Acceptance by position: accepted ÷ tested drafts at each chain position, pooled over a row's distinct runs."""
    rows = [r for r in rows if r.by_position]
    most = max((len(r.by_position) for r in rows), default=0)
    lines = ["Acceptance by position: accepted ÷ tested drafts at each place in the round's chain, over the distinct "
             "runs of a configuration (greedy repeats draw the same drafts: counted once; a draft after a rejected one "
             "is never tested).", "",
             "| prompt | mode | drafter | " + " | ".join(f"position {i + 1}" for i in range(most)) + " |",
             "|---|---|---|" + "---|" * most]
    for r in rows:
        cells = [f"{a / t:.2f} ({a}/{t})" if t else "" for t, a in r.by_position] + [""] * (most - len(r.by_position))
        lines.append(f"| {r.prompt_type} | {r.mode} | {r.config} | " + " | ".join(cells) + " |")
    return lines


def _speedup(r: Row | None) -> str:
    return "" if r is None else _m(r, "speedup", r.speedup) + "×"


def peer_table(rows: list[Row]) -> list[str]:
    """One line per prompt type and mode: specviz adaptive and its best fixed K against transformers' settings,
    and the loop like for like: specviz K=4 over transformers with the same draft and exactly K = 4."""
    lines = ["| prompt | mode | target-only tok/s | specviz adaptive | best fixed K | transformers default | "
             "transformers K=4 | adaptive ÷ best transformers | like for like: specviz K=4 ÷ transformers exactly K=4, "
             "same draft |", "|---|---|---|---|---|---|---|---|---|"]
    for ptype, mode in dict.fromkeys((r.prompt_type, r.mode) for r in rows):
        group = {r.config: r for r in rows if (r.prompt_type, r.mode) == (ptype, mode)}
        adaptive = next((r for c, r in group.items() if c.startswith("specviz adaptive")), None)
        fixed = [r for c, r in group.items() if c.startswith("specviz K=")]
        best = max(fixed, key=lambda r: r.tokens_per_s, default=None)
        peers = [group.get(c) for c in ("transformers assisted (default K)", "transformers assisted K=4")]
        best_peer = max((r.tokens_per_s for r in peers if r), default=None)
        ratio = f"**{adaptive.tokens_per_s / best_peer:.2f}×**" if adaptive and best_peer else ""
        lines.append(f"| {ptype} | {mode} | {_m(group['target-only'], 'tps', group['target-only'].tokens_per_s)} | "
                     f"{_cell(adaptive)} | {_cell(best)}{f' at K={best.k:g}' if best else ''} | {_cell(peers[0])} | "
                     f"{_cell(peers[1])} | {ratio} | {like_for_like(group)} |")
    return lines


def like_for_like(group: dict[str, Row]) -> str:
    """specviz K=4 over transformers K=4 given the same draft object: the loops compared, nothing else."""
    ours, theirs = group.get("specviz K=4"), group.get(SAME_DRAFT_PEER)
    if not (ours and theirs):
        return ""
    return f"**{ours.speedup / theirs.speedup:.2f}×** ({ours.tokens_per_s:.2f} vs {theirs.tokens_per_s:.2f} tok/s)"


def beside_llama(rows: list[Row], peer: dict | None) -> list[str]:
    """`bench --peers llama.cpp`: per prompt type, greedy, specviz's target alone and its K=4 and cost-aware rows
    beside llama.cpp's, on the same GGUF files: tokens/s with the prefill, over specviz's target alone, prefill and
    decode tokens/s, time to first token, draft acceptance (medians, min–max)."""
    if not peer:
        return []
    lines = [f"llama.cpp beside specviz ({peer['wheel']}, its CPU build {peer['cpu_build']}; the same GGUF files, "
             "greedy, the turns interleaved):", "",
             "| prompt | config | tok/s with prefill | × specviz target-only | prefill tok/s | "
             "time to first token s | decode tok/s | draft acceptance |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if beside_llama_row(r):
            lines.append(f"| {r.prompt_type} | {r.config} | {_m(r, 'tps', r.tokens_per_s)} | {_speedup(r)} | "
                         f"{_m(r, 'prefill_tps', r.prefill_tokens_per_s, 1)} | {_m(r, 'ttft', r.ttft_s)} | "
                         f"{_m(r, 'decode_tps', r.decode_tokens_per_s)} | {_m(r, 'alpha', r.alpha)} |")
    return lines


def beside_llama_row(r: Row) -> bool:
    """A row of the table "llama.cpp beside specviz" (and of the Costs tab's recording of it, peer_recording.py):
    greedy, specviz's target alone, K=4 and cost-aware rule, and llama.cpp's rows."""
    return r.mode == "greedy" and (r.config in ("target-only", "specviz K=4")
                                   or r.config.startswith((COST_CONFIG, SERVED)))


def _cell(r: Row | None) -> str:
    if r is None:
        return ""
    speedup = r.spread("speedup", r.speedup)
    return f"{r.tokens_per_s:.2f} ({speedup.median:.2f}×, {speedup.low:.2f}–{speedup.high:.2f})"


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

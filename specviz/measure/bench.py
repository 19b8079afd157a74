"""`python -m specviz bench`: measured speedups side by side, in one run, on one machine.

For each prompt type (code, factual, story, rewrite) it times, after one warm-up, with repeats: target-only
decoding; specviz with the draft model for each K (greedy and sampled); specviz with prompt lookup; transformers'
own assisted generation (and its prompt lookup) as the peer, also with specviz's draft at specviz's K (like for
like). The configurations take turns per prompt and repeat (A B C A B C …), so a slow minute on a shared machine
hits all of them; each median is shown with its min–max, and a speedup is the median of run-by-run ratios to the
target-only run of the same turn. Per configuration: tokens/s, speedup, acceptance α, tokens per target pass, cost
ratio c, and the predicted speedup E/(K·c+v) beside the measured one (for the cost-aware stop rule, the rule's own
prediction). `--rules` runs only the stop rules side by side (fixed K = 4, the threshold rule, the cost-aware rule,
transformers' heuristic); `--verify-cost V` makes every verify pass dearer, as on a machine where it is compute-bound
(`slow_verify`). `--drafters` runs only the drafters side by side at one K (the draft model, self-speculation, Medusa
heads and the EAGLE-style layer, the last two where trained), with the trees beside the chains (the draft model's and
the heads' of fixed widths, and the shaped trees of the draft model, the heads and the EAGLE layer), on code, a fact,
a story and JSON, with each chain's acceptance by position. Writes results.json, report.md and chart.html to --out (bench_report.py).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path

import torch

from specviz.drafters import HEADS_TREE, LAYERS, LOOKUP, MODEL, REGISTRY, SHAPED_TREES, TREE
from specviz.engine import Engine, RunSettings
from specviz.models.quant import FULL, pick_weights, quantize_weights, weights_name
from specviz.models.timer import time_calls
from specviz.settings.bounds import COST_RULE, MAX_K, THRESHOLD_RULE, widths_text
from specviz.settings.prompts import BENCH_PROMPTS
from specviz.measure.bench_flags import (DEFAULT_REPEATS, DEFAULT_TYPES, DRAFTERS_K, DRAFTERS_REPEATS, DRAFTERS_TYPES,
                                         OWN_STATE)
from specviz.algorithm.cost_rule import predicted_speedup
from specviz.measure import pass_timing
from specviz.measure.bench_report import COST_CONFIG, SAME_DRAFT_PEER, Row, write_report
from specviz.measure.measured import SteadyState, steady_state
from specviz.measure.peer_figures import peer_values
from specviz.measure.peers import peers_to_run, start_bench_peer
from specviz.record.stats import (acceptance_rate, baseline_decode_speed, decode_speed, later_rounds, per_position,
                                  spread, step_times, target_step_time)
from specviz.algorithm.tree import parse_widths

def bench_command(a: argparse.Namespace) -> int:
    if a.gpu_projection:
        from specviz.measure.projection import run_projection
        print(run_projection(Path(a.out), a.alpha_from, a.tiny))
        return 0
    if a.quick:
        # one prompt type: every configuration, both modes and the report's every part still run, in half the time
        a.ks, a.lookup_ks, a.modes, a.types, a.repeats, a.max_new_tokens = "1,4", "4", "greedy,sampled", "code", 1, 12
        a.tree = a.tree or "2-1"
        a.draft_layers = a.draft_layers or "1"
        a.adaptive_k = 4
        a.prompts_per_type = 1
    if a.drafters:
        a.types = DRAFTERS_TYPES if a.types == DEFAULT_TYPES else a.types
        a.repeats = DRAFTERS_REPEATS if a.repeats == DEFAULT_REPEATS else a.repeats
    unknown = [t for t in a.types.split(",") if t not in BENCH_PROMPTS]
    if unknown:  # before the pair loads
        raise ValueError(f"--types must name prompt kinds of {', '.join(BENCH_PROMPTS)}, got {', '.join(unknown)}")
    peers = peers_to_run(a.peers, (a.preset, None, None), "greedy" in a.modes.split(","))
    engine = _tiny_engine() if a.tiny else _real_engine(a)
    peer_draft = engine.draft  # transformers gets the draft as loaded: the setup its users would run
    weights = pick_weights(a.draft_weights, engine.device, _activations(engine), engine.kernels)
    if weights != FULL:
        engine = Engine(_packed_draft(a, engine, weights), engine.target, engine.tokenizer,
                        weights_name(engine.draft_name, weights), engine.target_name, engine.dtype,
                        engine.dtype_why, engine.kernels)
    ks = {"chain": [int(k) for k in a.ks.split(",")], "copy": [int(k) for k in a.lookup_ks.split(",")],
          "adaptive": a.adaptive_k, "widths": parse_widths(a.tree) if a.tree else None,
          "layer_ns": [int(n) for n in a.draft_layers.split(",") if n.strip()], "layers_k": a.layers_k}
    for n in ks["layer_ns"]:
        engine.layers_for(RunSettings(drafter=LAYERS.key, draft_layers=n))  # a bad N stops here, before any run
    if a.verify_cost:
        slow_verify(engine, a.verify_cost)
    if a.drafters:
        ks = drafters_ks(engine, ks["layer_ns"])  # refuses untrained heads here, before any run
    engine.measure_pass_costs()  # what the cost-aware rule prices with, as the app measures it at load
    engine.run(BENCH_PROMPTS["code"][0], RunSettings(max_new_tokens=8))  # one throwaway run: allocator, caches
    if a.rules:
        ks = {"chain": [4], "copy": [], "adaptive": a.adaptive_k, "rules_only": True}
    llama = start_bench_peer(a, engine) if peers else None  # measure/peers.py: its rows in the greedy turns
    rows = run_bench(engine, ks, a.modes.split(","), a.types.split(","), a.prompts_per_type, a.repeats,
                     a.max_new_tokens, a.temperature, peer=not (a.no_peer or a.drafters), peer_draft=peer_draft,
                     llama=llama)
    extra = None if a.rules or a.drafters else measure_tracing_overhead(engine, a.max_new_tokens,
                                                                        max(a.repeats, TRACING_REPEATS))
    env = write_report(Path(a.out), rows, extra, engine, a)
    print((Path(a.out) / "report.md").read_text())
    if a.record_peers:  # the Costs tab's recording (measure/peer_recording.py)
        from specviz.measure.peer_recording import RECORDED, record_peers
        from specviz.models.machine import machine

        record_peers(rows, env, machine(engine.device))
        print(f"Recorded llama.cpp beside specviz for the Costs tab: {RECORDED}")
    return 0


def drafters_ks(engine, layer_ns: list[int]) -> dict:
    """--drafters' configurations: every drafter at DRAFTERS_K, self-speculation at each N asked (none asked: half
    the target's layers), the trained drafters on the target's own state, and the trees (DRAFTERS_TREES); ValueError
    (how to train them, or a tree deeper than they reach) where one cannot run for this target."""
    for spec in OWN_STATE:
        engine.trained_for(spec)
    for key in DRAFTERS_TREES:
        engine.check_drafter(RunSettings(drafter=key))
    default_n = engine.layers_for(RunSettings(drafter=LAYERS.key))
    return {"chain": [DRAFTERS_K], "copy": [], "layer_ns": layer_ns or [default_n], "layers_k": DRAFTERS_K,
            "own_state": [spec.key for spec in OWN_STATE], "trees": DRAFTERS_TREES, "drafters_only": True}


# --drafters' trees, each at its default shape, beside the chains: the draft model's and the heads' of fixed widths,
# and every shaped tree (the draft model's, the heads', the EAGLE layer's)
DRAFTERS_TREES = (TREE.key, HEADS_TREE.key, *SHAPED_TREES)


def tree_config(key: str) -> str:
    """A tree's row in the bench: 'specviz tree 2-2-1-1', 'specviz heads-tree 3-2-1', 'specviz shaped ≤16 nodes'."""
    s = RunSettings(drafter=key)
    shape = f"≤{s.tree_budget} nodes" if s.drafter_spec.shaped else widths_text(s.widths)
    return f"specviz {key} {shape}"


def slow_verify(engine, v: float) -> float:
    """Make every target pass over 2 to MAX_K + 1 tokens sleep (n − 1)·(v − 1)/4 one-token steps more, so that
    t(5)/t(1) = v: the verify pass as dear as on a machine where it is compute-bound (an AVX2-only CPU in float32
    measured v = 3). Every loop that calls the target gets it (specviz's verify, transformers' assisted generation,
    the cost measurement); one-token steps and a prompt's prefill do not. Returns the extra seconds per token."""
    step = pass_timing.pass_time(engine.target, pass_timing.prefill(engine.target, 64), 1, repeats=5, warm_up=1)
    extra = (v - 1) / 4 * step

    def sleep_before(module, args, kwargs):
        n = (kwargs.get("input_ids") if kwargs.get("input_ids") is not None else args[0]).shape[-1]
        if 2 <= n <= MAX_K + 1:
            time.sleep(extra * (n - 1))

    engine.target.register_forward_pre_hook(sleep_before, with_kwargs=True)
    return extra


def _real_engine(a) -> Engine:
    from specviz.models.pairs import load_pair
    engine = Engine.from_pair(load_pair(a.preset, dtype=a.dtype, draft_weights="full", kernels=a.kernels))
    engine.warm_up()
    return engine


def _activations(engine: Engine) -> torch.dtype:
    """The dtype the target computes in (float32 on the float16-fbgemm path, whose weights are float16)."""
    from specviz.models.kernels import activations
    return activations(engine.target)[1]


def _packed_draft(a, engine: Engine, weights: str) -> torch.nn.Module:
    """The draft with int8 or int4 weights beside the full one the peer runs: loaded again as load_pair would load
    it (pairs.load_draft: on the float16-fbgemm path its linear layers are no longer plain, nothing to quantize)."""
    if a.tiny:
        return quantize_weights(copy.deepcopy(engine.draft), weights)
    from specviz.models.kernel_choice import Choice
    from specviz.models.pairs import pair_ids, load_draft, resolve_model
    return load_draft(resolve_model(pair_ids(a.preset, None, None)[0]), engine.device, Choice(engine.kernels, engine.dtype, ""), weights)


def _tiny_engine() -> Engine:
    """Random-weight stand-ins sharing the packaged tokenizer: exercises every code path fast (smoke tests)."""
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from specviz.models.packaged import PACKAGED, prepare_packaged
    tok = AutoTokenizer.from_pretrained(prepare_packaged(next(iter(PACKAGED))))
    cfg = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=2048)
    torch.manual_seed(0)
    return Engine(Qwen2ForCausalLM(Qwen2Config(num_hidden_layers=1, **cfg)).eval(),
                  Qwen2ForCausalLM(Qwen2Config(num_hidden_layers=2, **cfg)).eval(), tok, "tiny-1L", "tiny-2L")


def interleaved(configs: dict, prompts: list[str], repeats: int, say=lambda line: None) -> dict[str, list]:
    """Each configuration once per prompt and repeat, in turn (A B C A B C …), so a slow minute on a shared
    machine hits every configuration alike and the ratios hold; {name: results in call order}. A configuration is
    called with the prompt and the turn's seed (0, 1, …): sampled runs of one turn share a seed, and the turns
    sample different continuations, so a median is not one lucky or unlucky draw."""
    results = {name: [] for name in configs}
    for p, prompt in enumerate(prompts):
        for turn in range(repeats):
            for name, run in configs.items():
                t0 = time.perf_counter()
                results[name].append(run(prompt, turn))
                say(f"  prompt {p + 1} turn {turn + 1}: {name} ({time.perf_counter() - t0:.1f} s)")
    return results


def run_bench(engine, ks, modes, types, per_type, repeats, max_new, temperature, peer=True,
              peer_draft=None, llama=None) -> list[Row]:
    """peer_draft: the draft transformers is given as its users would run it (default: the engine's). transformers
    also runs with the engine's own draft and exactly K = 4 drafts a round, like for like with specviz K=4 (and,
    when peer_draft differs, at its default K too, which splits the gain between the lighter draft and the loop).
    llama: llama.cpp's servers (measure/peers.BenchPeer), whose rows join the greedy turns."""
    peer_draft = engine.draft if peer_draft is None else peer_draft
    peers = {"transformers assisted (default K)": ("heuristic", peer_draft)}
    if not ks.get("rules_only"):  # --rules: the stop rules against transformers' own heuristic only
        peers.update({"transformers assisted K=4": ("constant", peer_draft),
                      "transformers prompt lookup": ("prompt lookup", None), SAME_DRAFT_PEER: ("exact", engine.draft)})
        if peer_draft is not engine.draft:
            peers["transformers assisted (default K), specviz's draft"] = ("heuristic", engine.draft)
    peers = peers if peer else {}
    rows = []
    for ptype in types:
        for mode in modes:
            temp = 0.0 if mode == "greedy" else temperature
            configs = _configs(engine, ks, peers, max_new, temp)
            configs.update(llama.configs(engine, max_new) if llama and temp == 0 else {})
            results = interleaved(configs, BENCH_PROMPTS[ptype][:per_type], repeats, lambda line: print(line, flush=True))
            rows += bar_rows(ptype, mode, ks, results)
            for r in rows[-len(configs):]:
                print(f"{ptype:8} {mode:7} {r.config:40} {r.tokens_per_s:6.2f} tok/s  x{r.speedup:.2f}", flush=True)
    return rows


TRACING_REPEATS = 8  # at least this many runs each: the overhead is a few per cent, within 3 runs' noise (the
#                       goals table of docs/benchmarks.md has both)
TREE_CONFIG = "specviz tree"  # + its widths: "specviz tree 2-2-1-1"


def _configs(engine, ks, peers, max_new, temp) -> dict:
    """{name: (prompt, seed) -> one run's result}: a Baseline (target-only), a Trace (specviz) or tokens/s
    (transformers)."""
    def settings(seed, **changes):
        return RunSettings(**{"k": 1, "temperature": temp, "max_new_tokens": max_new, "seed": seed, **changes})

    def specviz(k, drafter=MODEL.key, adaptive=False, layers=0, **more):
        return lambda prompt, seed: engine.run(prompt, settings(seed, k=k, drafter=drafter, adaptive=adaptive,
                                                                draft_layers=layers, **more))

    configs = {"target-only": lambda prompt, seed: engine.baseline(prompt, settings(seed))}
    configs.update({f"specviz K={k}": specviz(k) for k in ks["chain"]})
    if not ks.get("drafters_only"):
        kmax = ks.get("adaptive", max(ks["chain"]))
        configs[f"specviz adaptive K≤{kmax}"] = specviz(kmax, adaptive=True, stop_rule=THRESHOLD_RULE)
        configs[f"{COST_CONFIG}≤{kmax}"] = specviz(kmax, adaptive=True, stop_rule=COST_RULE)
    configs.update({f"specviz lookup K={k}": specviz(k, LOOKUP.key) for k in ks["copy"]})
    configs.update({f"specviz layers N={n} K={ks['layers_k']}": specviz(ks["layers_k"], LAYERS.key, layers=n)
                    for n in ks.get("layer_ns", [])})
    for key in ks.get("own_state", []):  # K as the engine caps it: Medusa heads draft at most one a head
        k = min(max(ks["chain"]), engine.trained_for(REGISTRY[key]).n)
        configs[f"specviz {key} K={k}"] = specviz(k, key)
    if ks.get("widths"):
        widths = ks["widths"]
        configs[f"{TREE_CONFIG} {widths_text(widths)}"] = lambda prompt, seed: engine.run(
            prompt, settings(seed, drafter=TREE.key, tree_widths=widths))
    for key in ks.get("trees", []):  # at each drafter's default shape
        configs[tree_config(key)] = lambda prompt, seed, key=key: engine.run(prompt, settings(seed, drafter=key))
    for name, (kind, assistant) in peers.items():
        configs[name] = lambda prompt, seed, kind=kind, assistant=assistant: _transformers_tokens_per_s(
            engine, prompt, max_new, temp, kind, assistant, seed)
    if peers and not ks.get("rules_only"):
        configs["transformers target-only"] = lambda prompt, seed: _transformers_tokens_per_s(
            engine, prompt, max_new, temp, None, seed=seed)
    return configs


def bar_rows(ptype, mode, ks, results: dict) -> list[Row]:
    """One row per configuration: medians with their min–max; speedups are run-by-run ratios to the target-only
    run of the same prompt and turn, so both timings share their minute."""
    bases = results.pop("target-only")
    step = statistics.median(target_step_time(b) or b.total_time_s for b in bases)  # the Lab's step time
    base_tps = [b.tokens_per_s for b in bases]
    base_decode = [baseline_decode_speed(b) for b in bases]  # None for a one-token run: it has no decoding
    rows = [_row(ptype, mode, "target-only", None, {"tps": base_tps, "ttft": [b.first_token_time_s for b in bases],
                                                     "decode_tps": base_decode}, base_tps)]
    for name, runs in results.items():
        if not name.startswith("specviz"):  # transformers' tokens/s, llama.cpp's Completions
            rows.append(_row(ptype, mode, name, None, peer_values(runs), base_tps))
            continue
        figures = [trace_figures(t, step) for t in runs]
        values = {key: [f[key] for f in figures] for key in figures[0]}
        positions = pooled_positions(runs)
        values["decode_speedup"] = [f["decode_tps"] and b and f["decode_tps"] / b for f, b in zip(figures, base_decode)]
        tree = name.startswith(TREE_CONFIG) or name in map(tree_config, ks.get("trees", []))
        if tree:  # the chain's cost model does not fit a tree: a draft pass makes a whole depth of nodes, so c per
            for key in ("c", "predicted"):  # drafted token and E/(K·c+v) mislead
                values.pop(key)
        k = statistics.median(values["mean_k"]) if "adaptive" in name or "cost-aware" in name or tree \
            else int(name.rsplit("=", 1)[1])  # a tree's K: its mean drafted nodes per round
        rows.append(_row(ptype, mode, name, k, values, base_tps, positions))
    return rows


def pooled_positions(traces) -> list[list[int]]:
    """[tested, accepted] drafts at each chain position 1, 2, … over the distinct runs of a configuration (their
    ratio is the acceptance by position; pooled, not a median of ratios: a late position is tested a few times a
    run). Greedy repeats of a prompt draw the same drafts and verdicts: they count once, not once a repeat."""
    pooled: list[list[int]] = []
    seen = set()
    for t in traces:
        key = (t.prompt, tuple(t.output_token_ids), None if t.greedy else t.settings.get("seed"))
        if key in seen:
            continue
        seen.add(key)
        for c in per_position(t):
            while len(pooled) < c.position:
                pooled.append([0, 0])
            pooled[c.position - 1][0] += c.tested
            pooled[c.position - 1][1] += c.accepted
    return pooled


def _row(ptype, mode, name, k, values: dict, base_tps: list[float], positions: list | None = None) -> Row:
    # a figure some run lacks (decoding, in a run of one token) is left out of the row, not filled with another
    values = {key: v for key, v in values.items() if all(x is not None for x in v)}
    values = {**values, "speedup": [t / b for t, b in zip(values["tps"], base_tps)]}
    each = {key: spread(v) for key, v in values.items()}
    med = {key: s.median for key, s in each.items()}
    return Row(ptype, name, mode, k, med["tps"], med["speedup"], med.get("alpha"), med.get("tpp"), med.get("c"),
               med.get("predicted"), med.get("ttft"), med.get("decode_speedup"), med.get("v"),
               spreads={key: [s.low, s.high] for key, s in each.items() if key != "mean_k"},
               by_position=positions or [], runs=each["tps"].runs, decode_tokens_per_s=med.get("decode_tps"),
               prefill_tokens_per_s=med.get("prefill_tps"))


def trace_figures(t, target_step: float) -> dict:
    """One run's figures. c and v: a draft step and a verify pass over one target-only step (`target_step`, from
    the baseline runs); predicted: E(α, K̄) / (K̄·c + v) with α, K̄ and the times from the rounds after the first
    (which also encodes the prompt), the Lab's theory for the same trace; decode_tps: tokens/s of those same
    rounds, wall clock, to compare with the prediction (None: one round, no decoding)."""
    m, later = t.summary, later_rounds(t.rounds)
    steady = steady_state(t.rounds, target_step) or SteadyState(  # nothing drafted: no draft cost
        acceptance_rate(later), 0.0, 0.0, step_times(t.rounds)[1] / target_step)
    own = predicted_speedup(t.rounds)  # the cost-aware rule's own prediction, where it priced the rounds
    return {"tps": m.tokens_per_s, "alpha": m.acceptance_rate, "tpp": m.tokens_per_pass, "c": steady.c,
            "v": steady.v, "predicted": own or steady.speedup, "mean_k": steady.k, "ttft": m.first_token_time_s,
            "decode_tps": decode_speed(t)}


def _transformers_tokens_per_s(engine, prompt, max_new, temp, kind, assistant=None, seed=0) -> float:
    """One call of transformers' generate, tokens/s: target-only (kind None); assisted by `assistant` with its
    heuristic K ("heuristic"), with a constant K = 4 ("constant"; its confidence stop, 0.4 by default, still ends a
    round early), or with exactly K = 4 drafts a round ("exact": the stop off, as specviz K=4 drafts); or prompt
    lookup."""
    ids = torch.tensor([engine.encode(prompt, RunSettings(max_new_tokens=max_new))], device=engine.device)
    kwargs = dict(max_new_tokens=max_new, min_new_tokens=max_new, do_sample=temp > 0,
                  pad_token_id=next(iter(engine.eos_ids)))
    if temp > 0:
        kwargs.update(temperature=temp, top_k=0, top_p=1.0)
    if kind in ("heuristic", "constant", "exact"):
        kwargs["assistant_model"] = assistant
    if kind == "prompt lookup":
        kwargs["prompt_lookup_num_tokens"] = 4
    gc = (assistant or engine.draft).generation_config
    names = ("num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold")
    saved = {name: getattr(gc, name, None) for name in names}
    if kind in ("constant", "exact"):
        gc.num_assistant_tokens, gc.num_assistant_tokens_schedule = 4, "constant"
    if kind == "exact":
        gc.assistant_confidence_threshold = 0.0  # no early stop: every round drafts K, as specviz K=4 does
    try:  # restored after every call: transformers writes its adjusted K back, and each call starts afresh
        torch.manual_seed(seed)
        out = []
        with torch.inference_mode():
            seconds = time_calls(lambda i: out.append(engine.target.generate(ids, attention_mask=torch.ones_like(ids),
                                                                              **kwargs)), engine.device, 1, 0)[0]
        return (out[0].shape[1] - ids.shape[1]) / seconds
    finally:
        for name, value in saved.items():
            setattr(gc, name, value)


def measure_tracing_overhead(engine, max_new, repeats) -> dict:
    """Tokens/s with the full trace (the default) and with the minimal one (details=False), interleaved."""
    s = RunSettings(k=4, temperature=0.0, max_new_tokens=max_new)
    runs = interleaved({"traced": lambda p, seed: engine.run(p, s).summary.tokens_per_s,
                        "untraced": lambda p, seed: engine.run(p, s, details=False).summary.tokens_per_s},
                       [BENCH_PROMPTS["code"][0]], repeats)
    traced, lean = spread(runs["traced"]), spread(runs["untraced"])
    return {"traced_tokens_per_s": traced.median, "untraced_tokens_per_s": lean.median,
            "overhead": 1 - traced.median / lean.median, "traced_spread": [traced.low, traced.high],
            "untraced_spread": [lean.low, lean.high], "runs": traced.runs}

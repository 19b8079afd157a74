"""Command line: `python -m specviz run ...` (one traced run), `... bench ...`, `... costs ...`,
`... record-examples` (the recorded examples that ship in assets/examples/) and `... train-heads` (Medusa heads or an
EAGLE-style layer for the target, trained here: engine/heads_train.py).

Errors in settings, prompts or models print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Callable

from specviz.app.errors import message_of
from specviz.drafters import REGISTRY, layers, tree
from specviz.settings import defaults
from specviz.settings.bounds import (DRAFT_WEIGHTS, DTYPE_CHOICES, MAX_K, RUN_BOUNDS, STOP_RULES, THRESHOLD_RULE,
                                     widths_text)
from specviz.settings.needs import BENCH_NEEDS, NEEDS, refusal, unmet
from specviz.view.cost_words import round_note, run_account
from specviz.view.summary import ceiling_text, spread_text
from specviz.view.style import FATES, show
from specviz.algorithm.theory import round_size_probs
from specviz.record.stats import per_position, round_sizes, set_k, speedups
from specviz.record.trace import ACCEPTED, DISCARDED, MAX_TURNS, PUBLISHED_TURNS, REJECTED, Round, Trace


def mark(fate: str, text: str) -> str:
    """A token with its fate's icon, whitespace visible as in the page: ✓·fib, ✗⏎, ◆(n."""
    return FATES[fate].icon + show(text)


def round_line(r: Round) -> str:
    drafts = tree_drafts(r) if r.tree else " ".join(mark(d.fate, d.text) for d in r.drafts) or "(no draft)"
    nxt = mark(r.last_kind, r.next_token.text)
    if not r.next_kept:
        nxt = f"({nxt} not kept: the text ended before it)"
    return (f"{r.index + 1:>4}  {r.n_accepted}/{r.k:<2}  {r.tokens_this_pass:>3}  "
            f"{r.draft_time_s * 1000:>7.0f}  {r.verify_time_s * 1000:>7.0f}  {drafts}  → {nxt}")


def tree_drafts(r: Round) -> str:
    """A tree round on one line: its shape, the accepted path, the nodes rejected on the way, the unexamined count."""
    path = " ".join(mark(ACCEPTED, r.drafts[c - 1].text) for c in r.tree.path) or "(no node accepted)"
    rejected = " ".join(mark(REJECTED, d.text) for d in r.drafts if d.fate == REJECTED)
    unexamined = sum(d.fate == DISCARDED for d in r.drafts)
    return (f"tree {widths_text(r.tree.widths)}: {path}" + (f"  rejected {rejected}" if rejected else "")
            + f"  ({unexamined} not examined)")


def summary_lines(trace: Trace) -> list[str]:
    s = trace.summary
    lines = [
        f"acceptance rate {s.acceptance_rate:.2f} ({s.n_accepted} of {s.n_examined} examined draft tokens; "
        f"{s.n_drafted} drafted)",
        f"tokens per target pass {s.tokens_per_pass:.2f} ({s.n_new_tokens} tokens in {s.n_rounds} passes)",
        f"speculative {s.tokens_per_s:.2f} tokens/s ({s.total_time_s:.2f} s: draft {s.draft_time_s:.2f}, verify "
        f"{s.verify_time_s:.2f}; first tokens after {s.first_token_time_s:.2f})",
    ]
    lines += acceptance_lines(trace)
    account = run_account(trace)
    if account:
        lines.append(f"{account[0]}: {account[1]} ({account[2]})")
    b = trace.baseline
    if b is not None:
        lines += speedup_lines(trace) if b.tokens_per_s else ["target-only: no tokens"]
        if trace.settings.get("temperature") == 0:
            same = b.output_token_ids == trace.output_token_ids
            lines.append("greedy output identical to target-only: yes" if same else
                         f"greedy output identical to target-only: NO ({trace.dtype} numerics: a multi-token "
                         "verify pass rounds differently from one-token steps; use --dtype float32 to compare exactly)")
    return lines


def speedup_lines(trace: Trace) -> list[str]:
    """The speedups as the page prints them: median and range over the turns, the machine; none above its ceiling."""
    b, both = trace.baseline, speedups(trace)
    lines = [f"target-only {b.tokens_per_s:.2f} tokens/s ({b.total_time_s:.2f} s)"]
    for sp, what in zip(both, ("speedup", "decode-speed speedup")):
        if sp is None:
            continue
        lines.append((f"{what} {spread_text(sp)}" + (
            f": NOT A RESULT, above its ceiling {sp.ceiling.value:.2f}x (what the run's own target passes allow with "
            "drafting free): timing noise; time it again" if sp.beyond else "")
            + (f" (ceiling: {ceiling_text(sp.ceiling)})" if sp.ceiling else "")).replace("×", "x"))
    if b.repeats:
        lines.append(f"timed on {b.repeats.machine}: {len(b.repeats.speculative)} turns (run, target alone), "
                     f"after {b.repeats.warm_up} warm-up run(s) of each")
    return lines


def acceptance_lines(trace: Trace) -> list[str]:
    """Per-position acceptance and round sizes against E(α, K)'s prediction (record/stats.py's counts)."""
    positions, alpha = per_position(trace), trace.summary.acceptance_rate
    if not any(c.tested for c in positions):
        return []
    lines = ["acceptance by draft position (accepted/tested): " + ", ".join(
        f"{c.position}: {c.accepted}/{c.tested}" for c in positions) + f" (E(α, K) assumes α = {alpha:.2f} at each)"]
    k = set_k(trace)
    sizes = round_sizes(trace, k) if k else []
    if sum(sizes):
        predicted = round_size_probs(alpha, k)
        lines.append(f"round sizes of the {sum(sizes)} rounds of K={k} (tokens: rounds, predicted share): " + ", ".join(
            f"{n + 1}: {count} ({p:.2f})" for n, (count, p) in enumerate(zip(sizes, predicted))))
    return lines


def add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prompt", required=True)
    p.add_argument("--preset", default=None, help="a preset name (default: the offline packaged pair)")
    p.add_argument("--draft", default=None, help="draft model: hub id, local folder or packaged:<name>")
    p.add_argument("--target", default=None, help="target model: hub id, local folder or packaged:<name>")
    from specviz.engine.request import DRAFTER_FACTS, RunSettings

    # Every default is the request contract's, read there: a flag left out is None here (so a run asks only what was
    # typed), and a flag that applies only with another is refused unless it is at its default (settings/needs.py)
    d = RunSettings()
    p.add_argument("--k", type=int, help=f"draft tokens per round, 1..{MAX_K} (default {d.k}); a chain drafter's")
    p.add_argument("--temperature", type=float, help=f"0 = greedy (default {d.temperature:g})")
    p.add_argument("--top-k", type=int, help=f"when sampling (default {d.top_k}: off)")
    p.add_argument("--top-p", type=float, help=f"when sampling (default {d.top_p:g}: off)")
    p.add_argument("--seed", type=int, help=f"when sampling (default {d.seed})")
    p.add_argument("--max-new-tokens", type=int, help=f"default {d.max_new_tokens}")
    p.add_argument("--adaptive", action="store_true", default=None,
                   help="K per round, stopped by --stop-rule; --k is then the most per round (a chain drafter "
                        "that runs a model: " + ", ".join(f.key for f in DRAFTER_FACTS if NEEDS["adaptive"].drafters(f))
                        + f"; Medusa heads only with --stop-rule {THRESHOLD_RULE})")
    p.add_argument("--confidence", type=float, help=f"threshold of --adaptive with --stop-rule {THRESHOLD_RULE} "
                                                    f"(default {d.confidence})")
    p.add_argument("--stop-rule", choices=list(STOP_RULES),
                   help="how --adaptive stops drafting: " + "; ".join(f"{key} = {name}" for key, name in
                                                                       STOP_RULES.items()) + " (each further draft "
                        f"must pay for itself at this machine's measured costs, docs/engine.md); default {d.stop_rule}")
    p.add_argument("--drafter", choices=list(REGISTRY),
                   help="; ".join(f"{key} = {spec.label}" for key, spec in REGISTRY.items())
                        + f" (default {d.drafter})")
    widths = tree.TREE_WIDTHS
    p.add_argument(widths.flag, default=None, metavar="WIDTHS",
                   help=f"with --drafter {tree.DRAFTER.key} (or another tree drafter): {widths.help}; default "
                        f"{widths_text(tree.DEFAULT_WIDTHS)}; --k is then unused")
    p.add_argument(layers.DRAFT_LAYERS.flag, type=int,
                   help=f"with --drafter {layers.DRAFTER.key}: {layers.DRAFT_LAYERS.help}")
    p.add_argument("--no-chat", action="store_true", help="feed the prompt raw, without the chat template")
    p.add_argument("--dtype", default="auto", choices=DTYPE_CHOICES)
    p.add_argument("--device", default="auto")
    p.add_argument("--draft-weights", choices=DRAFT_WEIGHTS,
                   help="int4 / int8: a lighter draft with 4- or 8-bit weights (still exact); full: as loaded; "
                        "auto (default): on CPU whichever of the three this CPU runs fastest; with a drafter "
                        "that runs the draft model")
    p.add_argument("--baseline", action="store_true",
                   help="also time the target alone and report the speedup: the run and the target alone timed in "
                        "turns, after one warm-up run of each, the median and range of the turns' ratios")
    p.add_argument("--repeats", type=int, default=PUBLISHED_TURNS, metavar="N",
                   help=f"with --baseline: turns of the run and the target alone (default {PUBLISHED_TURNS}, as a "
                        f"paper publishes a speedup: at least 5 each)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the trace JSON here")
    p.add_argument("--quiet", action="store_true", help="no per-round table")


def run_command(a: argparse.Namespace) -> int:
    from specviz.engine import Engine
    from specviz.engine.heads import check_heads_trained
    from specviz.engine.pairs import DEFAULT_PRESET, PRESETS, load_pair
    from specviz.engine.repeats import WARM_UP, timed_baseline

    settings = run_settings(a)
    if not a.prompt.strip():
        raise ValueError("prompt is empty")
    if not 1 <= a.repeats <= MAX_TURNS:
        raise ValueError(f"--repeats should be a whole number from 1 to {MAX_TURNS}, got {a.repeats}")
    if a.preset and a.preset not in PRESETS:
        raise ValueError(f"unknown preset {a.preset!r}; known: {', '.join(PRESETS)}")
    check_heads_trained(settings, a.target or PRESETS[a.preset or DEFAULT_PRESET].target)  # before a minute of loading
    pair = load_pair(a.preset, a.draft, a.target, a.device, a.dtype, progress=_print_progress,
                     draft_weights=a.draft_weights or DRAFT_WEIGHTS[0])
    engine = Engine.from_pair(pair)
    engine.warm_up()
    shape = f"tree {widths_text(settings.widths)}" if settings.drafter_spec.tree else f"K={settings.k}"
    print(f"{pair.draft_name} → {pair.target_name} · {pair.device} · {pair.dtype} · {shape} · "
          f"T={settings.temperature} · seed={settings.seed}", flush=True)
    run = engine.start(a.prompt, settings)
    if not a.quiet:
        print("round  acc  tok  draft ms  verify ms  drafts (✓ accepted ✗ rejected ░ discarded) → ◆ replacement / ★ bonus"
              "   (· is a space, ⏎ a newline)")
    for r in run:
        if not a.quiet:
            print(round_line(r), flush=True)
            if r.cost is not None:
                print(f"      {round_note(r, run.prices, run.ctx.eos_ids)}", flush=True)
    if run.rule_note and not a.quiet:
        print(f"cost-aware K: {run.rule_note}")
    trace = run.trace()
    if a.baseline:
        trace.baseline = timed_baseline(engine, a.prompt, settings, a.repeats, WARM_UP,
                                        lambda line: print(line, file=sys.stderr, flush=True))
    print("\n" + trace.output_text + "\n")
    print("\n".join(summary_lines(trace)))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            f.write(trace.to_json(indent=1))
        print(f"trace written to {a.json}")
    return 0


RUN_FLAGS = ("k", "temperature", "top_k", "top_p", "seed", "max_new_tokens", "adaptive", "confidence", "stop_rule",
             "drafter", "draft_layers")  # the `run` flags that are RunSettings fields of the same name


def run_settings(a: argparse.Namespace):
    """The RunSettings the flags typed ask for (the rest at the contract's defaults), or ValueError: for a flag that
    would do nothing beside the others, a sentence naming the flag and what it needs (settings/needs.py)."""
    from specviz.engine import RunSettings
    from specviz.engine.request import refuse_unneeded
    from specviz.algorithm.tree import parse_widths

    typed = {name: getattr(a, name) for name in RUN_FLAGS if getattr(a, name) is not None}
    if a.tree is not None:
        typed["tree_widths"] = parse_widths(a.tree)
    for name, value in typed.items():  # a value out of bounds is said first: it would be wrong with any flags
        if name in RUN_BOUNDS:
            RUN_BOUNDS[name].check(value, name)
    weights = {} if a.draft_weights is None else {"draft_weights": a.draft_weights}  # a load option, not a field
    refuse_unneeded({**typed, **weights}, {"draft_weights": DRAFT_WEIGHTS[0]}, flag)
    return RunSettings(**typed, chat=not a.no_chat)


def flag(setting: str) -> str:
    """A setting's flag on the command line: 'top_k' -> '--top-k', 'tree_widths' -> '--tree'."""
    params = {p.name: p.flag for d in REGISTRY.values() for p in d.params}
    return params.get(setting, "--" + setting.replace("_", "-"))


def changed_flags(add_args: Callable[[argparse.ArgumentParser], None], a: argparse.Namespace) -> set[str]:
    """The options of a command (their dests) whose values differ from its defaults: as for `run`, a value equal to
    its default is never refused, typed or not (docs/cli-and-python-api.md, settings that need another)."""
    p = argparse.ArgumentParser(add_help=False)
    add_args(p)
    defaults = vars(p.parse_args([]))
    return {name for name, value in vars(a).items() if name in defaults and value != defaults[name]}


def refuse_unneeded_bench_flags(a: argparse.Namespace, typed: set[str]) -> None:
    """ValueError for the first bench flag set (besides its default) that would do nothing beside the others (settings/needs.py's
    BENCH_NEEDS: --layers-k without --draft-layers, --alpha-from without --gpu-projection, --temperature without the
    sampled mode, a flag --quick, --rules, --tiny or --gpu-projection overrides), naming what it needs."""
    for need in unmet(typed, vars(a), table=BENCH_NEEDS):
        raise ValueError(refusal(need, flag))


def add_costs_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default=None, help="a preset name (default: the offline packaged pair)")
    p.add_argument("--dtype", default="auto", choices=DTYPE_CHOICES)
    p.add_argument("--draft-weights", default="auto", choices=DRAFT_WEIGHTS)
    p.add_argument("--alpha", type=float, default=0.8, help="acceptance rate for the predicted speedups")
    p.add_argument("--k", type=int, default=defaults.K, help="draft tokens per round for the predicted speedups")


def costs_command(a: argparse.Namespace) -> int:
    """Print what the Costs tab shows (measure/cost_charts.py: costs_text)."""
    from specviz.measure import pass_timing
    from specviz.measure.cost_charts import costs_text
    from specviz.engine import Engine
    from specviz.engine.pairs import load_pair

    engine = Engine.from_pair(load_pair(a.preset, dtype=a.dtype, progress=_print_progress,
                                        draft_weights=a.draft_weights))
    engine.warm_up()
    print(costs_text(pass_timing.measure_costs(engine, progress=_print_progress), a.alpha, a.k))
    return 0


def add_record_args(p: argparse.ArgumentParser) -> None:
    from specviz.lecture.examples import EXAMPLES

    p.add_argument("--only", nargs="+", choices=list(EXAMPLES), default=None, metavar="NAME",
                   help=f"record only these (default: all of {', '.join(EXAMPLES)})")
    p.add_argument("--folder", default=None, help="write the files here (default: assets/examples/)")
    p.add_argument("--repeats", type=int, default=PUBLISHED_TURNS, metavar="N",
                   help=f"turns of each example's run and its target alone, after a warm-up run of each (default "
                        f"{PUBLISHED_TURNS}; fewer than {PUBLISHED_TURNS} records a speedup the page does not publish)")
    p.add_argument("--costs", action="store_true",
                   help="also measure the pair's pass costs and write the recording the Costs tab draws first "
                        "(assets/costs/packaged.json), in the same process")


def record_command(a: argparse.Namespace) -> int:
    """Record the shipped examples on the packaged pair, each with its baseline; exit 1 if one no longer shows
    what its description says (then change its seed or its description)."""
    from pathlib import Path

    from specviz.lecture import examples
    from specviz.engine import Engine
    from specviz.engine.pairs import load_pair

    if not 1 <= a.repeats <= MAX_TURNS:
        raise ValueError(f"--repeats should be a whole number from 1 to {MAX_TURNS}, got {a.repeats}")
    engine = Engine.from_pair(load_pair(progress=_print_progress))
    engine.warm_up()
    print(f"{engine.draft_name} → {engine.target_name} · {engine.device} · {engine.dtype}", flush=True)
    recorded = examples.record_examples(engine, a.only, Path(a.folder) if a.folder else None, _print_progress,
                                        a.repeats)
    for r in recorded:
        print(recorded_line(r))
        if r.size > examples.MAX_EXAMPLE_BYTES:
            print(f"  WARNING: over {examples.MAX_EXAMPLE_BYTES // 1024} KiB; lower its max_new_tokens")
        if not r.example.shows(r.trace):
            print(f"  WARNING: it does not show what its description says: {r.example.description}")
        if not examples.speedup_is_a_result(r.trace):
            print(f"  WARNING: its speedup is no result (fewer than {PUBLISHED_TURNS} turns, or above its ceiling, "
                  f"what its own target passes allow with drafting free: timing noise); record it again")
    if a.costs:
        from specviz.measure.recorded_costs import record_costs
        profile = record_costs(engine, progress=_print_progress)
        print(f"costs recorded {profile.recorded}: t(1) = {profile.target_s[0] * 1000:.0f} ms, c = {profile.c:.2f}")
    return 0 if all(r.shows for r in recorded) else 1


def recorded_line(r) -> str:
    """One recorded example in numbers: where, how big, what its rounds did."""
    from specviz.lecture.examples import rejections, shown

    s, both = r.trace.summary, speedups(r.trace)
    speedup = f"speedup {spread_text(both[0])}".replace("×", "x") if both else "baseline: no tokens"
    return (f"{r.example.name:<9} {shown(r.path)}: {r.size / 1024:.0f} KiB · {s.n_rounds} rounds · {s.n_new_tokens} "
            f"tokens · acceptance {s.acceptance_rate:.2f} · {s.tokens_per_pass:.2f} tokens/pass · "
            f"{rejections(r.trace)} rejections · K {sorted({x.k for x in r.trace.rounds})} · {speedup}")


def add_train_args(p: argparse.ArgumentParser) -> None:
    from specviz.drafters.heads import KINDS, MEDUSA
    from specviz.engine.heads_train import STEPS, TrainPlan

    d = TrainPlan()
    p.add_argument("--kind", default=MEDUSA, choices=KINDS,
                   help=f"{MEDUSA}: Medusa heads (default); {KINDS[1]}: an EAGLE-style layer on the target's features")
    p.add_argument("--preset", default=None, help="whose target (default: the offline packaged pair's)")
    p.add_argument("--target", default=None, help="or a target model: hub id, local folder or packaged:<name>")
    p.add_argument("--heads", type=int, default=None,
                   help=f"Medusa heads, or the EAGLE layer's draft steps, 1-8 (default {STEPS[MEDUSA]} heads, "
                        f"{STEPS[KINDS[1]]} steps)")
    p.add_argument("--tokens", type=int, default=d.tokens,
                   help=f"tokens of offline text the target reads, a tenth held out (default {d.tokens}); what it "
                        f"read before for this target is reused from beside the model cache")
    p.add_argument("--epochs", type=int, default=d.epochs,
                   help=f"the most passes over the training text (default {d.epochs}; the time bound usually ends "
                        f"it first)")
    p.add_argument("--minutes", type=float, default=d.minutes,
                   help=f"the most the whole training may take (default {d.minutes:g}); it stops early to keep it")
    p.add_argument("--dtype", default="auto", choices=DTYPE_CHOICES)


def train_command(a: argparse.Namespace) -> int:
    """Train heads (or an EAGLE layer) for the target (frozen), save them beside the model cache, print their
    provenance and what each phase took."""
    from specviz.engine.heads import draft_cost, heads_folder, save_heads
    from specviz.engine.heads_train import TrainPlan, train_heads
    from specviz.drafters.heads import MEDUSA
    from specviz.engine.machine import machine as machine_words
    from specviz.engine.pairs import cache_root, load_target

    if not (0 < a.minutes <= 600) or a.tokens < 1024 or a.epochs < 1:
        raise ValueError(f"train-heads wants 0 < --minutes <= 600, --tokens >= 1024 and --epochs >= 1; got "
                         f"{a.minutes:g}, {a.tokens} and {a.epochs}")
    t0 = time.perf_counter()
    target, tokenizer, name = load_target(a.preset, a.target, a.dtype, progress=_print_progress)
    loaded = time.perf_counter() - t0
    left = a.minutes - loaded / 60  # --minutes bounds the whole command: the load counts
    if left <= 0.1:
        raise ValueError(f"loading the target took {loaded / 60:.1f} min of the {a.minutes:g} allowed: raise --minutes")
    plan = TrainPlan(kind=a.kind, heads=a.heads, tokens=a.tokens, epochs=a.epochs, minutes=left)
    machine = machine_words(str(next(target.parameters()).device))
    heads, prov = train_heads(target, tokenizer, name, plan, _print_bar, heads_folder(cache_root(), name, "teacher"),
                              machine)
    folder = save_heads(heads, prov, heads_folder(cache_root(), name, heads.kind))
    print(f"\n{heads.title} for {name} (fingerprint {prov.target_hash}) saved in {folder}")
    print(f"data: {prov.data}\nthe target read {prov.train_tokens:,} tokens to train on and {prov.heldout_tokens:,} "
          f"held out")
    ph = prov.phases
    print(f"phases on {machine}: the target loaded in {loaded:.0f} s; text {ph['text']:.0f} s; teacher "
          f"{ph['teacher']:.0f} s ({ph['teacher_windows_read']} windows read now, {ph['teacher_windows_cached']} from "
          f"the cache); fit {ph['fit']:.0f} s ({prov.steps} steps); held-out check {ph['check']:.0f} s")
    print(f"training loss (last 10 steps) {prov.loss:.3f}; softmax over {prov.subset:,} tokens keeping "
          f"{prov.subset_mass:.1%} of the soft labels' mass")
    unit = "head" if heads.kind == MEDUSA else "EAGLE step"
    for i, (agreed, was) in enumerate(zip(prov.agreement, prov.untrained), start=1):
        print(f"{unit} {i} (the token {i} past the next): top-1 agreement with the target, held out: {agreed:.1%} "
              f"(untrained {was:.1%})")
    draft_s, pass_s = draft_cost(heads.to_target_dtype(), target)
    what = f"a draft of all {heads.n} heads" if heads.kind == MEDUSA else "one EAGLE step (a full window)"
    print(f"{what}, with the shared output layer: {draft_s * 1000:.1f} ms, "
          f"{draft_s / pass_s:.2f} of a one-token target pass ({pass_s * 1000:.1f} ms), medians of 5 here")
    return 0


def _print_bar(phase: str, fraction: float, left_s: float) -> None:
    """One progress line, rewritten in place: a bar, the phase, and the time left at this phase's pace so far."""
    done = round(30 * fraction)
    end = "\n" if fraction >= 1 else ""
    print(f"\r[{'#' * done}{'.' * (30 - done)}] {fraction:4.0%} {phase}, about {left_s / 60:.1f} min left   ",
          end=end, file=sys.stderr, flush=True)


def _print_progress(fraction: float, message: str) -> None:
    print(f"[{fraction * 100:3.0f}%] {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()  # our own progress lines say what is loading
    parser = argparse.ArgumentParser(prog="python -m specviz", description="speculative decoding, round by round")
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_args(sub.add_parser("run", help="one traced speculative decoding run"))
    from specviz.measure.bench import add_bench_args
    add_bench_args(sub.add_parser("bench", help="measure speedups (see docs/benchmarks.md)"))
    add_costs_args(sub.add_parser("costs", help="time the pair's passes against tokens and batch (the Costs tab)"))
    add_record_args(sub.add_parser("record-examples", help="record the examples the page ships (assets/examples/)"))
    add_train_args(sub.add_parser("train-heads", help="train Medusa drafting heads (or, with --kind eagle, an "
                                                      "EAGLE-style layer) for the target, on this machine"))
    a = parser.parse_args(argv)
    try:
        if a.command == "run":
            return run_command(a)
        if a.command == "costs":
            return costs_command(a)
        if a.command == "record-examples":
            return record_command(a)
        if a.command == "train-heads":
            return train_command(a)
        from specviz.measure.bench import bench_command
        refuse_unneeded_bench_flags(a, changed_flags(add_bench_args, a))
        return bench_command(a)
    except ValueError as e:
        print(f"error: {message_of(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

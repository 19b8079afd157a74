"""Command line: `python -m specviz run ...` (one traced run), `... bench ...`, `... costs ...` and
`... record-examples` (the recorded examples that ship in assets/examples/).

Errors in settings, prompts or models print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from specviz.app.errors import message_of
from specviz.drafters import REGISTRY, layers, tree
from specviz.settings.bounds import DRAFT_WEIGHTS, DTYPE_CHOICES, MAX_K, STOP_RULES, widths_text
from specviz.view.cost_words import round_note, run_account
from specviz.view.summary import free_drafter, spread_text
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
        lines.append(f"{what} {spread_text(sp)}".replace("×", "x") + (
            f": NOT A RESULT, above the {sp.ceiling:.2f} tokens per target pass of the same rounds, which "
            + ("a drafter that costs nothing cannot beat" if free_drafter(trace) else "no drafter should beat")
            + ": timing noise; time it again" if sp.beyond else ""))
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
    from specviz.engine.request import RunSettings

    d = RunSettings()  # every default is the request contract's
    p.add_argument("--k", type=int, default=d.k, help=f"draft tokens per round, 1..{MAX_K}")
    p.add_argument("--temperature", type=float, default=d.temperature, help="0 = greedy")
    p.add_argument("--top-k", type=int, default=d.top_k)
    p.add_argument("--top-p", type=float, default=d.top_p)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens)
    p.add_argument("--adaptive", action="store_true",
                   help="K per round: stop drafting once the product of the draft's probabilities of its drafts "
                        "falls below --confidence; --k is then the most per round")
    p.add_argument("--confidence", type=float, default=d.confidence, help=f"threshold of --adaptive (default "
                                                                          f"{d.confidence})")
    p.add_argument("--stop-rule", choices=list(STOP_RULES), default=d.stop_rule,
                   help="how --adaptive stops drafting: " + "; ".join(f"{key} = {name}" for key, name in
                                                                       STOP_RULES.items()) + " (each further draft "
                        "must pay for itself at this machine's measured costs, docs/engine.md)")
    p.add_argument("--drafter", choices=list(REGISTRY), default=d.drafter,
                   help="; ".join(f"{key} = {spec.label}" for key, spec in REGISTRY.items()))
    widths = tree.TREE_WIDTHS
    p.add_argument(widths.flag, default=None, metavar="WIDTHS",
                   help=f"with --drafter {tree.DRAFTER.key}: {widths.help}; default "
                        f"{widths_text(tree.DEFAULT_WIDTHS)}; --k is then unused")
    p.add_argument(layers.DRAFT_LAYERS.flag, type=int, default=d.draft_layers,
                   help=f"with --drafter {layers.DRAFTER.key}: {layers.DRAFT_LAYERS.help}")
    p.add_argument("--no-chat", action="store_true", help="feed the prompt raw, without the chat template")
    p.add_argument("--dtype", default="auto", choices=DTYPE_CHOICES)
    p.add_argument("--device", default="auto")
    p.add_argument("--draft-weights", default="auto", choices=DRAFT_WEIGHTS,
                   help="int4 / int8: a lighter draft with 4- or 8-bit weights (still exact); full: as loaded; "
                        "auto (default): on CPU whichever of the three this CPU runs fastest")
    p.add_argument("--baseline", action="store_true",
                   help="also time the target alone and report the speedup: the run and the target alone timed in "
                        "turns, after one warm-up run of each, the median and range of the turns' ratios")
    p.add_argument("--repeats", type=int, default=PUBLISHED_TURNS, metavar="N",
                   help=f"with --baseline: turns of the run and the target alone (default {PUBLISHED_TURNS}, as a "
                        f"paper publishes a speedup: at least 5 each)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the trace JSON here")
    p.add_argument("--quiet", action="store_true", help="no per-round table")


def run_command(a: argparse.Namespace) -> int:
    from specviz.engine import Engine, RunSettings
    from specviz.engine.pairs import PRESETS, load_pair
    from specviz.engine.repeats import WARM_UP, timed_baseline
    from specviz.algorithm.tree import parse_widths

    settings = RunSettings(k=a.k, temperature=a.temperature, top_k=a.top_k, top_p=a.top_p, seed=a.seed,
                           max_new_tokens=a.max_new_tokens, adaptive=a.adaptive, confidence=a.confidence,
                           stop_rule=a.stop_rule,
                           chat=not a.no_chat, drafter=a.drafter, draft_layers=a.draft_layers,
                           tree_widths=parse_widths(a.tree) if a.tree is not None else None)
    if not a.prompt.strip():
        raise ValueError("prompt is empty")
    if not 1 <= a.repeats <= MAX_TURNS:
        raise ValueError(f"--repeats should be a whole number from 1 to {MAX_TURNS}, got {a.repeats}")
    if a.preset and a.preset not in PRESETS:
        raise ValueError(f"unknown preset {a.preset!r}; known: {', '.join(PRESETS)}")
    pair = load_pair(a.preset, a.draft, a.target, a.device, a.dtype, progress=_print_progress,
                     draft_weights=a.draft_weights)
    engine = Engine.from_pair(pair)
    engine.warm_up()
    shape = f"tree {widths_text(settings.widths)}" if settings.drafter_spec.tree else f"K={a.k}"
    print(f"{pair.draft_name} → {pair.target_name} · {pair.device} · {pair.dtype} · {shape} · "
          f"T={a.temperature} · seed={a.seed}", flush=True)
    run = engine.start(a.prompt, settings)
    if not a.quiet:
        print("round  acc  tok  draft ms  verify ms  drafts (✓ accepted ✗ rejected ░ discarded) → ◆ replacement / ★ bonus"
              "   (· is a space, ⏎ a newline)")
    for r in run:
        if not a.quiet:
            print(round_line(r), flush=True)
            if r.cost is not None:
                print(f"      {round_note(r, run.prices)}", flush=True)
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


def add_costs_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default=None, help="a preset name (default: the offline packaged pair)")
    p.add_argument("--dtype", default="auto", choices=DTYPE_CHOICES)
    p.add_argument("--draft-weights", default="auto", choices=DRAFT_WEIGHTS)
    p.add_argument("--alpha", type=float, default=0.8, help="acceptance rate for the predicted speedups")
    p.add_argument("--k", type=int, default=4, help="draft tokens per round for the predicted speedups")


def costs_command(a: argparse.Namespace) -> int:
    """Print what the Costs tab shows: t(n)/t(1), the batch steps, v, c and the predicted speedup per batch."""
    from specviz.measure import pass_timing
    from specviz.engine import Engine
    from specviz.engine.pairs import load_pair

    engine = Engine.from_pair(load_pair(a.preset, dtype=a.dtype, progress=_print_progress,
                                        draft_weights=a.draft_weights))
    engine.warm_up()
    p = pass_timing.measure_costs(engine, progress=_print_progress)
    print(f"{p.draft} → {p.target} · {p.device} · {p.dtype} · {p.context}-token cache · measured in {p.seconds:.1f} s")
    print("tokens per pass  " + "  ".join(f"{n:>5}" for n in p.tokens))
    print("t(n) / t(1)      " + "  ".join(f"{t / p.target_s[0]:>5.2f}" for t in p.target_s))
    print("batch            " + "  ".join(f"{b:>5}" for b in p.batches))
    print("target step / t1 " + "  ".join(f"{t / p.target_s[0]:>5.2f}" for t in p.target_batch_s))
    print(f"speedup, α={a.alpha} K={a.k} " + "  ".join(f"{pass_timing.speedup_at_batch(p, a.alpha, a.k, b):>5.2f}"
                                                    for b in p.batches))
    cross = pass_timing.crossover_batch(p, a.alpha, a.k)
    print(f"t(1) = {p.target_s[0] * 1000:.0f} ms · v = t({a.k + 1})/t(1) = {p.v(a.k):.2f} · c = {p.c:.2f} · "
          + (f"stops paying at batch {cross}" if cross else f"pays at every batch up to {p.batches[-1]}"))
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
            print(f"  WARNING: its speedup is no result (fewer than {PUBLISHED_TURNS} turns, or above its tokens per "
                  f"target pass: timing noise); record it again")
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
    a = parser.parse_args(argv)
    try:
        if a.command == "run":
            return run_command(a)
        if a.command == "costs":
            return costs_command(a)
        if a.command == "record-examples":
            return record_command(a)
        from specviz.measure.bench import bench_command
        return bench_command(a)
    except ValueError as e:
        print(f"error: {message_of(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

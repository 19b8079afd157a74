"""`python -m specviz run`: one traced run of the pair, printed a round a line (view/trace_text.py), its summary, and
with --baseline the speedup over the target alone timed in interleaved turns; --json writes the trace."""

from __future__ import annotations

import argparse
import sys

from specviz.drafters import REGISTRY, SHAPED_TREES, layers, tree
from specviz.drafters.shaped_tree import SHAPED_PARAMS
from specviz.settings.bounds import (DRAFT_WEIGHTS, MAX_K, RUN_BOUNDS, STOP_RULES, THRESHOLD_RULE, check_prompt_given,
                                     widths_text)
from specviz.settings.needs import NEEDS
from specviz.record.trace import MAX_TURNS, PUBLISHED_TURNS
from specviz.view.cost_words import round_note
from specviz.view.trace_text import ROUND_HEADER, round_line, summary_lines
from specviz.cli.flags import flag
from specviz.cli.progress import print_progress
from specviz.models.pair_flags import MODELS, add_pair_flags


def add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prompt", required=True)
    add_pair_flags(p, MODELS, helps={
        "--draft-weights": "int4 / int8: a lighter draft with 4- or 8-bit weights (still exact); full: as loaded; "
                           "auto (default): on CPU whichever of the three this CPU runs fastest; with a drafter that "
                           "runs the draft model"})
    p.set_defaults(draft_weights=None)  # left out, None: refused only where typed (run_settings)
    p.add_argument("--device", default="auto")
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
    shaped = ", ".join(SHAPED_TREES)
    for param in SHAPED_PARAMS:  # --tree-budget, --tree-depth
        p.add_argument(param.flag, type=int, dest=param.name, help=f"with --drafter {shaped}: {param.help}")
    p.add_argument("--no-chat", action="store_true", help="feed the prompt raw, without the chat template")
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
    from specviz.engine.trained import check_trained
    from specviz.models.pairs import DEFAULT_PRESET, PRESETS, load_pair
    from specviz.engine.repeats import WARM_UP, timed_baseline

    settings = run_settings(a)
    check_prompt_given(a.prompt)
    if not 1 <= a.repeats <= MAX_TURNS:
        raise ValueError(f"--repeats should be a whole number from 1 to {MAX_TURNS}, got {a.repeats}")
    if a.preset and a.preset not in PRESETS:
        raise ValueError(f"unknown preset {a.preset!r}; known: {', '.join(PRESETS)}")
    check_trained(settings, a.target or PRESETS[a.preset or DEFAULT_PRESET].target)  # before a minute of loading
    pair = load_pair(a.preset, a.draft, a.target, a.device, a.dtype, progress=print_progress, kernels=a.kernels,
                     draft_weights=a.draft_weights or DRAFT_WEIGHTS[0])
    engine = Engine.from_pair(pair)
    engine.warm_up()
    shape = settings.tree_text if settings.drafter_spec.tree else f"K={settings.k}"
    print(f"{pair.draft_name} → {pair.target_name} · {pair.device} · {pair.dtype} · {pair.kernels} kernels · {shape} "
          f"· T={settings.temperature} · seed={settings.seed}", flush=True)
    print(f"kernels: {pair.dtype_why}", flush=True)
    run = engine.start(a.prompt, settings)
    if not a.quiet:
        print(ROUND_HEADER)
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


RULE_FLAGS = ("stop_rule", "confidence")  # refused whenever typed where their need is unmet (run_settings)
RUN_FLAGS = ("k", "temperature", "top_k", "top_p", "seed", "max_new_tokens", "adaptive", "confidence", "stop_rule",
             "drafter", "draft_layers", "tree_budget", "tree_depth")  # the `run` flags that are RunSettings fields
#                                                                            of the same name


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
    # A flag at its default value does nothing more than leaving it out, so it is never refused: but for the flags
    # that choose how adaptive K stops, typing one asks for a rule that runs only with --adaptive, whatever its value
    # (`--stop-rule cost` alone would run, silently, with no rule at all)
    asked_rule = {name: None for name in RULE_FLAGS}
    refuse_unneeded({**typed, **weights}, {"draft_weights": DRAFT_WEIGHTS[0], **asked_rule}, flag)
    return RunSettings(**typed, chat=not a.no_chat)

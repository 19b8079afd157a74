"""`python -m specviz serve-bench`: many users at once on the loaded pair, for the target alone, fixed K and the
cost-aware rule for a batch, at each number of users (measure/closed_loop.py runs it and writes the report)."""

from __future__ import annotations

import argparse
import json
import time

from specviz.settings.bounds import MAX_BATCH
from specviz.cli.progress import print_progress
from specviz.models.pair_flags import MODELS, add_pair_flags
from specviz.measure.peers import add_peers_flag  # llama.cpp beside specviz


def _numbers(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"a comma-separated list of whole numbers, got {text!r}") from None


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def add_serve_args(p: argparse.ArgumentParser) -> None:
    from specviz.measure.closed_loop import RULE_NAMES, Plan

    plan = Plan()
    add_pair_flags(p, MODELS, helps={"--draft": "a draft model (hub id, folder or packaged:NAME), with --target",
                                     "--target": "a target model, with --draft"})
    p.add_argument("--users", type=_numbers, default=plan.users,
                   help=f"numbers of users at once, comma-separated, each 1-{MAX_BATCH} (default 1,2,4,8)")
    p.add_argument("--prompt-kinds", type=_names, default=plan.kinds, help="the users' prompts' kinds, in turn "
                                                                            "(default code,story)")
    p.add_argument("--rules", type=_names, default=plan.rules, help=f"comma-separated: {RULE_NAMES} "
                                                                     "(default target,k4,cost)")
    p.add_argument("--max-new-tokens", type=int, default=plan.max_new_tokens)
    p.add_argument("--turns", type=int, default=plan.turns, help="interleaved turns of every (users, rule)")
    p.add_argument("--requests", type=int, default=plan.requests, help="requests each user sends in turn")
    p.add_argument("--seconds", type=float, default=plan.seconds, help="no request is sent after this long in a run")
    p.add_argument("--temperature", type=float, default=plan.temperature)
    add_peers_flag(p)
    p.add_argument("--json", default=None, metavar="FILE", help="write every run, every user's tokens, here")
    p.add_argument("--record", action="store_true", help="also write the recording the Costs tab ships "
                                                         "(assets/costs/serve.json)")


def serve_command(a: argparse.Namespace) -> int:
    """Check the plan before loading anything, load the pair, measure its costs where the cost rule needs them, run."""
    from specviz.engine import Engine
    from specviz.measure import closed_loop
    from specviz.measure.pass_timing import measure_costs
    from specviz.models.machine import machine
    from specviz.models.pairs import load_pair

    plan = closed_loop.Plan(a.users, a.rules, a.prompt_kinds, a.max_new_tokens, a.turns, a.temperature, a.requests,
                            a.seconds)
    from specviz.measure.peers import peers_to_run, start_serve_peer

    peers = peers_to_run(a.peers, (a.preset, a.draft, a.target), plan.temperature == 0)
    engine = Engine.from_pair(load_pair(a.preset, a.draft, a.target, dtype=a.dtype, progress=print_progress,
                                        kernels=a.kernels, draft_weights=a.draft_weights))
    engine.warm_up()
    profile = measure_costs(engine, progress=print_progress) if any(
        closed_loop.rule_k(r)[0] for r in plan.rules) else None
    from specviz.measure.recorded_costs import while_measuring

    llama = start_serve_peer(a, plan, engine) if peers else None  # measure/peers.py: its users in the same turns
    runs, busy = while_measuring(lambda: closed_loop.serve_runs(engine, plan, profile, print_progress,
                                                                peer=llama and llama.run))
    where = machine(engine.device) + busy
    ours = [r for r in runs if r.rule in plan.rules]  # the peer's runs are reported, not predicted or recorded
    print(closed_loop.report(runs, plan, where, closed_loop.predicted_crossovers(ours, profile)))
    if llama:
        print(llama.contrast(runs))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(closed_loop.as_json(runs, plan, where, profile), f, indent=1)
    if a.record:
        from specviz.measure.serve_chart import record_serve

        record_serve(ours, plan, where, profile, time.strftime("%Y-%m-%d", time.gmtime()))
    return 0

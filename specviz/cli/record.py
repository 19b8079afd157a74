"""`python -m specviz record-examples`: the recorded examples that ship in assets/examples/, recorded again on the
packaged pair, each checked against what its description says (and, with --costs, the Costs tab's recording)."""

from __future__ import annotations

import argparse

from specviz.record.stats import QUIET, quiet, speedups
from specviz.record.trace import MAX_TURNS, PUBLISHED_TURNS
from specviz.view.summary import speedup_text, steadiness
from specviz.cli.progress import print_progress


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
    from specviz.models.pairs import load_pair

    if not 1 <= a.repeats <= MAX_TURNS:
        raise ValueError(f"--repeats should be a whole number from 1 to {MAX_TURNS}, got {a.repeats}")
    engine = Engine.from_pair(load_pair(progress=print_progress))
    engine.warm_up()
    print(f"{engine.draft_name} → {engine.target_name} · {engine.device} · {engine.dtype}", flush=True)
    recorded = examples.record_examples(engine, a.only, Path(a.folder) if a.folder else None, print_progress,
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
        for why in examples.unsteady(r.trace):
            print(f"  WARNING: recorded on a busy machine: {why}; record it again on a quiet one")
        if not quiet(r.trace.baseline.repeats):
            print(f"  NOTE: timed twice, still over {QUIET:g}x, kept with its spread on the page: "
                  f"{steadiness(r.trace.baseline.repeats)}".replace("×", "x"))
    if a.costs:
        from specviz.measure.recorded_costs import record_costs
        profile = record_costs(engine, progress=print_progress)
        print(f"costs recorded {profile.recorded}: t(1) = {profile.target_s[0] * 1000:.0f} ms, c = {profile.c:.2f}")
    return 0 if all(r.shows for r in recorded) else 1


def recorded_line(r) -> str:
    """One recorded example in numbers: where, how big, what its rounds did."""
    from specviz.lecture.examples import rejections, shown

    s, both = r.trace.summary, speedups(r.trace)
    speedup = f"speedup {speedup_text(both[0])}".replace("×", "x") if both else "baseline: no tokens"
    return (f"{r.example.name:<9} {shown(r.path)}: {r.size / 1024:.0f} KiB · {s.n_rounds} rounds · {s.n_new_tokens} "
            f"tokens · acceptance {s.acceptance_rate:.2f} · {s.tokens_per_pass:.2f} tokens/pass · "
            f"{rejections(r.trace)} rejections · K {sorted({x.k for x in r.trace.rounds})} · {speedup}")

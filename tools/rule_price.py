"""The cost-aware rule's price of each round beside what the round paid, read from a trace with its baseline
(issue 62: "find why the cost-aware rule lost ... its price of a round against what the round paid").

    python -m specviz run --prompt "…" --temperature 0 --adaptive --stop-rule cost --baseline --json run.json
    python -m tools.rule_price run.json

A round's price is what the rule expected it to cost, K·c + v(K) one-token target steps (its CostDecision); what it
paid is its draft and verify seconds over the target alone's step (the baseline's median step after the first,
record/stats.target_step_time). Printed by K: the rounds, the price, what they paid split into draft and verify, and
the paid draft step c beside the priced one. A price below what a round paid makes drafting look cheaper than it is.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from specviz.record.load import load_trace
from specviz.record.round_costs import paid_steps
from specviz.record.stats import later_rounds, target_step_time


def by_k(trace) -> dict[int, list[tuple[float, float, float]]]:
    """K -> [(priced steps, paid draft steps, paid verify steps)] over the priced rounds after the first."""
    step = target_step_time(trace.baseline)
    rounds = defaultdict(list)
    for r in later_rounds(trace.rounds):
        if r.cost is not None:
            rounds[r.k].append((r.cost.expected_cost, *paid_steps(r, step)))
    return dict(sorted(rounds.items()))


def report(trace) -> list[str]:
    c, v = trace.pass_costs.c, trace.pass_costs.v
    lines = [f"priced by: {trace.pass_costs.source}; c = {c:.3f}, v = {', '.join(f'{x:.2f}' for x in v)}",
             f"target alone: {target_step_time(trace.baseline) * 1000:.1f} ms a step (the baseline's median)",
             f"{'K':>3} {'rounds':>6} {'priced':>8} {'paid':>8} {'draft':>8} {'verify':>8} {'v(K)':>6} "
             f"{'c paid':>7}   (medians, in one-token target steps)"]
    for k, rows in by_k(trace).items():
        priced, draft, verify = (statistics.median(x[i] for x in rows) for i in range(3))
        paid_c = f"{draft / k:.3f}" if k else "–"
        lines.append(f"{k:>3} {len(rows):>6} {priced:>8.2f} {draft + verify:>8.2f} {draft:>8.2f} {verify:>8.2f} "
                     f"{v[k] if k < len(v) else float('nan'):>6.2f} {paid_c:>7}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace", type=Path, help="a trace JSON of a cost-aware run with its baseline")
    trace = load_trace(parser.parse_args().trace.read_text())
    if trace.baseline is None or trace.pass_costs is None:
        raise SystemExit("the trace needs a baseline (--baseline) and the cost-aware rule's prices (--stop-rule cost)")
    print("\n".join(report(trace)))


if __name__ == "__main__":
    main()

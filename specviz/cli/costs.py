"""`python -m specviz costs`: what the Costs tab shows, in text: the loaded pair's pass times against tokens per
pass and batch size, and the speedups they predict (measure/cost_charts.costs_text)."""

from __future__ import annotations

import argparse

from specviz.settings import defaults
from specviz.cli.progress import print_progress
from specviz.models.pair_flags import add_pair_flags


def add_costs_args(p: argparse.ArgumentParser) -> None:
    add_pair_flags(p)
    p.add_argument("--alpha", type=float, default=0.8, help="acceptance rate for the predicted speedups")
    p.add_argument("--k", type=int, default=defaults.K, help="draft tokens per round for the predicted speedups")


def costs_command(a: argparse.Namespace) -> int:
    """Print what the Costs tab shows (measure/cost_charts.py: costs_text)."""
    from specviz.measure import pass_timing
    from specviz.measure.cost_charts import costs_text
    from specviz.engine import Engine
    from specviz.models.pairs import load_pair

    engine = Engine.from_pair(load_pair(a.preset, dtype=a.dtype, progress=print_progress, kernels=a.kernels,
                                        draft_weights=a.draft_weights))
    engine.warm_up()
    print(costs_text(pass_timing.measure_costs(engine, progress=print_progress), a.alpha, a.k))
    return 0

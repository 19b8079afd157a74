"""The command line's entry: `python -m specviz run|bench|costs|serve-bench|record-examples|train-drafters`, one
module a command (cli/run.py, measure/bench.py, cli/costs.py, cli/serve_bench.py, cli/record.py, train/command.py),
wired here. `train-heads`, train-drafters' name until issue 61, still runs it.

Errors in settings, prompts or models print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from specviz.app.errors import message_of
from specviz.cli.costs import add_costs_args, costs_command
from specviz.cli.flags import changed_flags, refuse_unneeded_bench_flags
from specviz.cli.progress import print_progress
from specviz.cli.record import add_record_args, record_command
from specviz.cli.run import add_run_args, run_command
from specviz.cli.serve_bench import add_serve_args, serve_command
from specviz.measure.bench_flags import add_bench_args

TRAIN_NAMES = ("train-drafters", "train-heads")  # Medusa heads or the EAGLE layer; the old name kept for old scripts


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()  # our own progress lines say what is loading
    parser = argparse.ArgumentParser(prog="python -m specviz", description="speculative decoding, round by round")
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_args(sub.add_parser("run", help="one traced speculative decoding run"))
    add_bench_args(sub.add_parser("bench", help="measure speedups (see docs/benchmarks.md)"))
    add_costs_args(sub.add_parser("costs", help="time the pair's passes against tokens and batch (the Costs tab)"))
    add_serve_args(sub.add_parser("serve-bench", help="many users at once: throughput, interactivity and time to first "
                                                      "token for the target alone, fixed K and the cost rule"))
    add_record_args(sub.add_parser("record-examples", help="record the examples the page ships (assets/examples/)"))
    from specviz.train.command import add_train_args, train_command  # torch's training side: only when asked for
    add_train_args(sub.add_parser(TRAIN_NAMES[0], aliases=TRAIN_NAMES[1:], help="train Medusa drafting heads (or, "
                                  "with --kind eagle, an EAGLE-style layer) for the target, on this machine"))
    a = parser.parse_args(argv)
    try:
        if a.command == "run":
            return run_command(a)
        if a.command == "costs":
            return costs_command(a)
        if a.command == "serve-bench":
            return serve_command(a)
        if a.command == "record-examples":
            return record_command(a)
        if a.command in TRAIN_NAMES:
            return train_command(a, print_progress)
        from specviz.measure.bench import bench_command
        refuse_unneeded_bench_flags(a, changed_flags(add_bench_args, a))
        return bench_command(a)
    except ValueError as e:
        print(f"error: {message_of(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

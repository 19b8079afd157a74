"""The flags that choose a pair and how it loads, declared once: `--preset`, `--draft`, `--target`, `--dtype`,
`--kernels` and `--draft-weights`, each with its one default and choices. Every command that loads a pair adds them
with `add_pair_flags` (cli/run.py, cli/costs.py, cli/serve_bench.py, measure/bench_flags.py, train/command.py) and
hands their values to load_pair or load_target (pairs.py); a command may say in its own words what a flag means
there (`helps`, by flag). The web app's --preset and --kernels are its own (app.py): read from the environment too,
and its --preset picks the pair shown first among --presets.

    add_pair_flags(p)                                # --preset --dtype --kernels --draft-weights
    add_pair_flags(p, MODELS)                        # and --draft --target, the models by name, instead of a preset
"""

from __future__ import annotations

import argparse
from typing import Any, Mapping

from specviz.settings.bounds import DRAFT_WEIGHTS, DTYPE_CHOICES
from specviz.models.kernels import PATHS

MODELS = ("--draft", "--target")  # the pair's models a command may name itself (hub id, folder or packaged:<name>)

# Each flag's add_argument keywords, in the order a command's help lists them
PAIR_FLAGS: dict[str, dict[str, Any]] = {
    "--preset": dict(default=None, help="a preset name (default: the offline packaged pair)"),
    "--draft": dict(default=None, help="draft model: hub id, local folder or packaged:<name>"),
    "--target": dict(default=None, help="target model: hub id, local folder or packaged:<name>"),
    "--dtype": dict(default="auto", choices=DTYPE_CHOICES),
    "--kernels": dict(default="auto", metavar="PATH",
                      help=f"on a CPU, the path the linear layers run on: auto (default: the fastest exact path, "
                           f"measured once on this machine and remembered; never gguf-ort, run only when named), "
                           f"or {', '.join(PATHS)} (refused where its rows measure not independent here: "
                           f"int8-dynamic everywhere; docs/engine.md)"),
    "--draft-weights": dict(default="auto", choices=DRAFT_WEIGHTS),
}


def add_pair_flags(p: argparse.ArgumentParser, models: tuple[str, ...] = (), draft_weights: bool = True,
                   helps: Mapping[str, str | None] | None = None) -> None:
    """Add --preset, the `models` named (of MODELS), --dtype, --kernels and, unless `draft_weights` is False (a
    command that loads no draft), --draft-weights; `helps` gives a command's own help for a flag (None: no help
    line). An unknown or impossible value is refused when the pair loads, with what this machine offers."""
    assert set(models) <= set(MODELS), f"{models} names a model of neither {MODELS}"
    taken = {"--preset", *models, "--dtype", "--kernels", *(("--draft-weights",) if draft_weights else ())}
    own = {flag: {"help": text} for flag, text in (helps or {}).items()}
    assert set(own) <= taken, f"a help for a flag not added: {sorted(set(own) - taken)}"
    for flag, options in PAIR_FLAGS.items():
        if flag in taken:
            p.add_argument(flag, **{**options, **own.get(flag, {})})


def add_kernels_flag(p: argparse.ArgumentParser) -> None:
    """`--kernels` alone, for a tool that loads the packaged pair as it is but on a path of its choosing."""
    p.add_argument("--kernels", **PAIR_FLAGS["--kernels"])

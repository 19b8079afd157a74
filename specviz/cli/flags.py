"""The command line's flags, said once: a setting's flag (`flag`), the flags a command was given besides its
defaults (`changed_flags`), and the bench's flags refused where they would do nothing beside the others
(measure/bench_flags.py's BENCH_NEEDS, read as settings/needs.py reads a run's)."""

from __future__ import annotations

import argparse
from typing import Callable

from specviz.drafters import REGISTRY
from specviz.measure.bench_flags import BENCH_NEEDS
from specviz.settings.needs import refusal, unmet


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
    """ValueError for the first bench flag set (besides its default) that would do nothing beside the others
    (measure/bench_flags.py's BENCH_NEEDS: --layers-k without --draft-layers, --alpha-from without --gpu-projection, --temperature without the
    sampled mode, a flag --quick, --rules, --tiny or --gpu-projection overrides), naming what it needs."""
    for need in unmet(typed, vars(a), table=BENCH_NEEDS):
        raise ValueError(refusal(need, flag))

"""How the command line shows a long step's progress: one line a step, on stderr (the results go to stdout)."""

from __future__ import annotations

import sys


def print_progress(fraction: float, message: str) -> None:
    """'[ 40%] loading the target': a load's or a measurement's progress callback (settings/bounds.Progress)."""
    print(f"[{fraction * 100:3.0f}%] {message}", file=sys.stderr, flush=True)

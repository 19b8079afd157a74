"""The page's static files (assets/): where they are, and a script as an expression that runs when called."""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def script(name: str) -> str:
    """assets/<name>, a `() => { … }` function, without the `;` that ends its file: `({script(name)})()` runs it."""
    return (ASSETS / name).read_text(encoding="utf-8").strip().rstrip(";")


def text(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")

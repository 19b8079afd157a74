"""The page's one-line notices: the status line (busy, done, or what went wrong), the run-info line (device, dtype,
draft and target) and a placeholder where a panel has nothing yet. Escaped text; the app writes them.
"""

from __future__ import annotations

from html import escape


def run_info(device: str, dtype: str, draft: str, target: str, recorded: bool = False, why: str = "") -> str:
    """'cpu · bfloat16 · draft X · target Y' (prefixed 'recorded on' for an uploaded trace); `why`, the reason
    for the dtype, follows it in brackets."""
    dtype_text = escape(dtype) + (f' <span class="sv-muted">({escape(why)})</span>' if why else "")
    text = " · ".join([escape(device), dtype_text, f"draft <b>{escape(draft)}</b>", f"target <b>{escape(target)}</b>"])
    return f'<div class="sv-info">{"recorded on " if recorded else ""}{text}</div>'


def placeholder(message: str) -> str:
    return f'<div class="sv-placeholder">{escape(message)}</div>'


def status(message: str, kind: str = "info") -> str:
    """A status line: kind is info, busy, done or error (an error also gets a ⚠)."""
    icon = {"error": "⚠ ", "done": "✓ "}.get(kind, "")
    return f'<div class="sv-status sv-status-{kind}">{icon}{escape(message)}</div>'

"""The page's one-line notices: the status line (busy, done, or what went wrong), the run-info line (device, dtype,
kernels, draft and target, what a pass costs) and a placeholder where a panel has nothing yet; a tab's own status
line beside its controls (`tab_status`: the Costs tab's measurement and busy server) and what its readout says before
there is one (`tab_waiting`). Escaped text; the app writes them.
"""

from __future__ import annotations

from html import escape


def run_info(device: str, dtype: str, draft: str, target: str, recorded: bool = False, why: str = "",
             kernels: str = "", costs: str = "", weights: str = "") -> str:
    """'cpu · activations float32 · weights float16 (float16-fbgemm kernels) · draft X · target Y' (prefixed 'recorded
    on' for an uploaded trace): `kernels`, the CPU path the linear layers ran on, where it is not the dtype's own, and
    `weights`, their weights' type on it (types_text); `why`, the reason for the kernels and dtype, follows in
    brackets; `costs`, what a pass costs on them (t(1), t(K + 1), v), after that."""
    dtype_text = types_text(dtype, kernels, weights)
    dtype_text += f' <span class="sv-muted">({escape(why)})</span>' if why else ""
    parts = [escape(device), dtype_text, f"draft <b>{escape(draft)}</b>", f"target <b>{escape(target)}</b>"]
    if costs:
        parts.append(f'<span class="sv-costs">{escape(costs)}</span>')
    return f'<div class="sv-info">{"recorded on " if recorded else ""}{" · ".join(parts)}</div>'


def types_text(dtype: str, kernels: str = "", weights: str = "") -> str:
    """Which type is whose (issue 64: "float32 · gguf-int4 kernels" did not say), escaped: 'weights and activations
    float32' on the dtype's own kernels, else the activations' type, then the weights' (`weights`: models/kernels.py's
    words for the path, which the app passes) and the kernels.

    >>> types_text("float32", "float16-fbgemm", "float16")
    'activations float32 · weights float16 (float16-fbgemm kernels)'
    """
    if not kernels or kernels == dtype:
        return f"weights and activations {escape(dtype)}"
    weights = f"{escape(weights)} " if weights else ""
    return f"activations {escape(dtype)} · weights {weights}({escape(kernels)} kernels)"


def placeholder(message: str) -> str:
    return f'<div class="sv-placeholder">{escape(message)}</div>'


def status(message: str, kind: str = "info") -> str:
    """A status line: kind is info, busy, done or error (an error also gets a ⚠)."""
    icon = {"error": "⚠ ", "done": "✓ "}.get(kind, "")
    return f'<div class="sv-status sv-status-{kind}">{icon}{escape(message)}</div>'


def tab_status(message: str, done: bool = False) -> str:
    """A tab's own status line, under the controls it answers: unboxed, in the tab's text size; `done` (a run or a
    measurement just finished) puts a ✓ before it. 'Measured X in 12 s.', done -> '✓ Measured X in 12 s.'."""
    return f'<div class="sv-tab-status">{"✓ " if done else ""}{escape(message)}</div>'


def tab_waiting(message: str) -> str:
    """What a tab's readout says before there is one to show (what to press), at the readout's own size."""
    return f'<div class="sv-tab-waiting">{escape(message)}</div>'

"""What the page accepts, checked on the server: an API client can send anything (a string, null, NaN,
10**400), and every handler answers bad input with a message, never a traceback.

`bounds.RUN_BOUNDS` says what a run accepts; the page offers a stated subset of it (`LIMITS`, narrower where a
shared server must stay responsive), and tests/test_layering.py checks that each page bound lies within the
run's. Navigation and Generate skip Gradio's preprocessing, so their values arrive exactly as sent.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from specviz.engine import RunSettings
from specviz.settings.bounds import MAX_K, Bound, short_repr
from specviz.algorithm.tree import parse_widths


class Limit(NamedTuple):
    """A numeric setting's bounds on the page."""

    name: str  # as messages say it
    low: int | float
    high: int | float
    whole: bool  # whole numbers only

    @property
    def bound(self) -> Bound:
        return Bound(self.low, self.high, whole=self.whole)


LIMITS = {
    "k": Limit("K", 1, MAX_K, True),
    "temperature": Limit("temperature", 0, 2, False),
    "top_p": Limit("top-p", 0.05, 1, False),
    "top_k": Limit("top-k", 0, 1000, True),
    "seed": Limit("seed", 0, 2**31 - 1, True),  # what a page's number field holds exactly
    "max_new_tokens": Limit("max new tokens", 1, 512, True),  # a long run is a slow run for everyone sharing
    "draft_layers": Limit("draft layers", 0, 1024, True),  # the engine checks N against the target's layers
}
MAX_PROMPT_CHARS = 10_000  # about 2,500 tokens: a long prompt is a slow prompt for everyone sharing the server


def limits(field: str) -> dict:
    """A setting's bounds as a slider's or number field's keyword arguments."""
    return dict(minimum=LIMITS[field].low, maximum=LIMITS[field].high)


def setting(value, field: str) -> int | float:
    """value as the number LIMITS[field] allows, or ValueError saying what is allowed."""
    limit = LIMITS[field]
    return limit.bound.check(value, limit.name)


def settings_from(*, k, temperature, top_p, top_k, seed, max_new_tokens, drafter, adaptive, draft_layers,
                  tree_widths, stop_rule=RunSettings.stop_rule) -> RunSettings:
    """RunSettings from the page's fields (numbers arrive as floats); ValueError names the first bad one. The tree
    widths' text is read only with the tree drafter (the box keeps its value while another drafter is chosen)."""
    if not isinstance(tree_widths, (str, type(None))):
        raise ValueError(f"tree widths must be text like 2-2-1-1, got {short_repr(tree_widths)}")
    settings = RunSettings(k=setting(k, "k"), temperature=setting(temperature, "temperature"),
                           top_p=setting(top_p, "top_p"), top_k=setting(top_k, "top_k"), seed=setting(seed, "seed"),
                           max_new_tokens=setting(max_new_tokens, "max_new_tokens"),
                           drafter=drafter or RunSettings.drafter,
                           adaptive=False if adaptive is None else adaptive,  # RunSettings refuses 1, "yes" or []
                           draft_layers=setting(draft_layers, "draft_layers"), stop_rule=stop_rule or RunSettings.stop_rule)
    if settings.drafter_spec.tree and (tree_widths or "").strip():
        settings = replace(settings, tree_widths=parse_widths(tree_widths))
    return settings


def check_prompt(prompt) -> str:
    """The prompt, or ValueError: empty, too long, or not encodable text (a lone surrogate from an API client)."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("prompt is empty")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ValueError(f"prompt is {len(prompt):,} characters long; the limit is {MAX_PROMPT_CHARS:,}")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("prompt holds a character that is not valid text (a lone UTF-16 surrogate)") from None
    return prompt


def check_preset(preset, offered: list[str]) -> str:
    """A model pair this page offers; no other may be named (Generate skips Gradio's check of the dropdown)."""
    if preset not in offered:
        raise ValueError(f"unknown model pair {short_repr(preset)}; this app offers: {', '.join(offered)}")
    return preset


def round_number(value) -> int:
    """A round number from the page or an API client, to clamp; 1 for what is no number (text, NaN, inf, null)."""
    try:
        return int(value or 1)
    except (TypeError, ValueError, OverflowError):
        return 1

"""What the page accepts, checked on the server: an API client can send anything (a string, null, NaN,
10**400), and every handler answers bad input with a message, never a traceback.

`bounds.RUN_BOUNDS` says what a run accepts; the page offers a stated subset of it (`LIMITS`, narrower where a
shared server must stay responsive), and tests/test_layering.py checks that each page bound lies within the
run's. Navigation and Generate skip Gradio's preprocessing, so their values arrive exactly as sent.
"""

from __future__ import annotations

from typing import NamedTuple

from specviz.drafters.tree import DEFAULT_WIDTHS
from specviz.engine import RunSettings
from specviz.engine.request import CONTRACT_DEFAULTS, asked_of, refuse_unneeded
from specviz.settings.needs import unmet
from specviz.settings.bounds import DEPTH_BOUND, MAX_K, MAX_TREE_NODES, Bound, check_prompt_given, short_repr
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
    "tree_budget": Limit("node budget", 1, MAX_TREE_NODES, True),  # a shaped tree's: the run's own bounds
    "tree_depth": Limit("most depth", 0, DEPTH_BOUND.high, True),
}
# What the page's controls hold until changed, and where it puts a control that does nothing in the current state
# (app/controls.py): the contract's defaults (settings/defaults.py), the tree's default widths shown
PAGE_DEFAULTS = {**CONTRACT_DEFAULTS, "tree_widths": DEFAULT_WIDTHS}
MAX_PROMPT_CHARS = 10_000  # about 2,500 tokens: a long prompt is a slow prompt for everyone sharing the server


def limits(field: str) -> dict:
    """A setting's bounds as a slider's or number field's keyword arguments."""
    return dict(minimum=LIMITS[field].low, maximum=LIMITS[field].high)


def setting(value, field: str) -> int | float:
    """value as the number LIMITS[field] allows, or ValueError saying what is allowed."""
    limit = LIMITS[field]
    return limit.bound.check(value, limit.name)


def settings_from(*, k, temperature, top_p, top_k, seed, max_new_tokens, drafter, adaptive, draft_layers,
                  tree_widths, stop_rule=RunSettings.stop_rule, tree_budget=RunSettings.tree_budget,
                  tree_depth=RunSettings.tree_depth) -> RunSettings:
    """RunSettings from the page's fields (numbers arrive as floats); ValueError names the first bad one. A field
    that would do nothing beside the others (settings/needs.py) must be at the page's default, where the page puts
    a control it disables; an API client that sets one gets a sentence naming what it needs."""
    if not isinstance(tree_widths, (str, type(None))):
        raise ValueError(f"tree widths must be text like 2-2-1-1, got {short_repr(tree_widths)}")
    values = dict(k=setting(k, "k"), temperature=setting(temperature, "temperature"), top_p=setting(top_p, "top_p"),
                  top_k=setting(top_k, "top_k"), seed=setting(seed, "seed"),
                  max_new_tokens=setting(max_new_tokens, "max_new_tokens"), drafter=drafter or RunSettings.drafter,
                  adaptive=False if adaptive is None else adaptive,  # RunSettings refuses 1, "yes" or []
                  draft_layers=setting(draft_layers, "draft_layers"), stop_rule=stop_rule or RunSettings.stop_rule,
                  tree_budget=setting(tree_budget, "tree_budget"), tree_depth=setting(tree_depth, "tree_depth"))
    if (tree_widths or "").strip():
        values["tree_widths"] = parse_widths(tree_widths)
    # what the page sends for a control that does nothing now: left out, so that the run asks the contract's default
    idle = {need.setting for need in unmet(values, asked_of(values))}
    settings = RunSettings(**{key: value for key, value in values.items()
                              if key not in idle or value != PAGE_DEFAULTS[key]})
    refuse_unneeded(values, PAGE_DEFAULTS)  # what an API client set beside the others: refused, named as sent
    return settings


def check_prompt(prompt) -> str:
    """The prompt, or ValueError: empty, too long, or not encodable text (a lone surrogate from an API client)."""
    check_prompt_given(prompt)
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

"""/generate and the page's controls against settings/needs.py: an API client that sets a parameter that would do
nothing beside the others (besides the page's default for it) gets a sentence naming it and what it needs, and the
app keeps serving; with what it needs, the parameter reaches the run; the page's control for it is disabled and
says why exactly while its need is unmet."""

from pathlib import Path

import pytest

from harness.endpoints import generate, text, value
from specviz.app.controls import state
from specviz.settings.defaults import STOP_RULE as PAGE_STOP_RULE
from specviz.record.load import load_trace
from specviz.settings.bounds import STOP_RULES, widths_text
from specviz.settings.needs import NEEDS, why_off
from tests.helpers import need_cases


def api_cases():
    """need_cases() as /generate sends them: tree widths as text, a stop rule besides the page's; no confidence
    (the page has no such parameter)."""
    for setting, value_, without, with_, words in need_cases():
        if setting == "confidence":
            continue
        if setting == "stop_rule":
            value_ = next(rule for rule in STOP_RULES if rule != PAGE_STOP_RULE)
        if setting == "tree_widths":
            value_ = widths_text(value_)
        yield pytest.param(setting, value_, without, with_, words, id=setting)


CASES = list(api_cases())


@pytest.mark.parametrize("setting, value_, without, with_, words", CASES)
def test_a_parameter_that_would_do_nothing_is_refused(client, setting, value_, without, with_, words):
    status = text(generate(client, **{**without, setting: value_, "max_new_tokens": 2})["status"])
    assert f"{setting} applies only {words}" in status and f"or leave {setting} out (it would do nothing)" in status
    assert text(generate(client, **{**without, "max_new_tokens": 2})["status"]).startswith("✓ Done")  # serving


@pytest.mark.parametrize("setting, value_, without, with_, words", CASES)
def test_with_what_it_needs_a_parameter_reaches_the_run(client, setting, value_, without, with_, words):
    final = generate(client, **{**with_, setting: value_, "max_new_tokens": 2})
    assert text(final["status"]).startswith("✓ Done"), final["status"]
    recorded = load_trace(Path(value(final["download"])).read_bytes()).settings[setting]
    assert recorded == ([int(w) for w in value_.split("-")] if setting == "tree_widths" else value_)


DECIDING = {"drafter": "model", "adaptive": False, "temperature": 0.7}  # as the page opens


@pytest.mark.parametrize("setting, value_, without, with_, words", CASES)
def test_the_pages_control_is_disabled_and_says_why_exactly_while_its_need_is_unmet(setting, value_, without, with_,
                                                                                     words):
    off = state(setting, "its info", **{**DECIDING, **without})
    on = state(setting, "its info", **{**DECIDING, **with_})
    assert off == {"interactive": False, "info": why_off(NEEDS[setting])}
    assert off["info"].startswith(f"Applies only {words}")
    assert on == {"interactive": True, "info": "its info"}


def test_the_pages_adaptive_k_is_disabled_for_heads_and_says_why():
    """The page's stop rule is the cost-aware one, which heads cannot run: adaptive K is off for them, with the
    reason settings/needs.py gives; for the draft model it is on."""
    off = state("adaptive", "its info", **{**DECIDING, "drafter": "heads"})
    assert off == {"interactive": False, "info": why_off(NEEDS["adaptive"])}
    assert "with Medusa heads or the EAGLE layer only by the confidence threshold" in off["info"]
    assert state("adaptive", "its info", **DECIDING)["interactive"]

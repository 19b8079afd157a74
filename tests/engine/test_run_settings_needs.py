"""RunSettings, the Python API's request, and settings/needs.py: a setting besides its default that would do nothing
beside the others is refused with a sentence naming it and what it needs (for the needs marked `contract`); the rest
(K beside a tree, top-k, top-p and the seed at temperature 0) a sweep or a record may carry, and the CLI and the page
refuse them. A trace's settings make their RunSettings again without what did nothing in its run."""

import pytest

from specviz.engine import RunSettings
from specviz.settings.needs import NEEDS
from tests.helpers import need_cases

CASES = need_cases()
IDS = [case[0] for case in CASES]


@pytest.mark.parametrize("setting, value, without, with_, words", CASES, ids=IDS)
def test_a_setting_that_would_do_nothing(setting, value, without, with_, words):
    if NEEDS[setting].contract:
        with pytest.raises(ValueError, match=f"^{setting} applies only {words}.*leave {setting} out"):
            RunSettings(**without, **{setting: value})
    else:  # carried: a seed sweep at temperature 0, a recorded tree run's K
        assert getattr(RunSettings(**without, **{setting: value}), setting) == value


@pytest.mark.parametrize("setting, value, without, with_, words", CASES, ids=IDS)
def test_with_what_it_needs_it_takes_effect_and_at_its_default_it_passes(setting, value, without, with_, words):
    assert getattr(RunSettings(**with_, **{setting: value}), setting) == value
    RunSettings(**without, **{setting: getattr(RunSettings(), setting)})


def test_a_bad_value_is_said_before_what_it_needs():
    with pytest.raises(ValueError, match="width at depth 1 must be"):
        RunSettings(drafter="model", tree_widths=(9, 1))
    with pytest.raises(ValueError, match="confidence must be"):
        RunSettings(confidence=2.0)


def test_a_traces_settings_come_back_without_what_did_nothing():
    """A page run records the page's stop rule with adaptive K off; a file may carry keys of its own."""
    other = next(rule for rule in ("threshold", "cost") if rule != RunSettings().stop_rule)
    recorded = {"k": 6, "temperature": 0.0, "seed": 9, "adaptive": False, "stop_rule": other, "confidence": 0.4,
                "drafter": "model", "draft_layers": 0, "tree_widths": None, "extra": "kept out"}
    settings = RunSettings.recorded(recorded)
    assert settings == RunSettings(k=6, temperature=0.0, seed=9)  # the seed at temperature 0 is carried, as recorded
    assert RunSettings.recorded({**recorded, "adaptive": True, "stop_rule": "threshold"}).confidence == 0.4


def test_medusa_heads_with_adaptive_k_stop_only_by_the_threshold():
    """settings/needs.py's rule, once a special case of RunSettings: the cost-aware rule prices draft passes and
    heads run none."""
    with pytest.raises(ValueError, match=r"^adaptive applies only .*Medusa heads or the EAGLE layer only by the confidence threshold.*"
                                         r"set drafter to model or layers, or set stop_rule to threshold"):
        RunSettings(drafter="heads", adaptive=True, stop_rule="cost")
    assert RunSettings(drafter="heads", adaptive=True, stop_rule="threshold").adaptive
    recorded = RunSettings.recorded({"drafter": "heads", "adaptive": True, "stop_rule": "cost"})
    assert not recorded.adaptive  # a record of it: adaptive K did nothing there, so it comes back without it

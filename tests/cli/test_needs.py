"""The CLI's flags that only apply with another (settings/needs.py), in this process: without what it needs, a flag
set besides its default stops `run` with status 2 and one line naming the flag and what it needs, before any model
loads; given at its default value it passes; with what it needs it takes effect."""

import argparse

import pytest

from specviz import cli
from specviz.cli import flags, run
from specviz.engine import RunSettings
from specviz.settings.bounds import widths_text
from tests.helpers import need_cases

CASES = need_cases() + [("draft_weights", "int8", {"drafter": "lookup"}, {"drafter": "tree"},
                         "with a drafter that runs the draft model")]
IDS = [f"{case[0]}-{i}" for i, case in enumerate(CASES)]


def argv(settings: dict) -> list[str]:
    """Flags for settings given as RunSettings' fields (a switch: its flag alone; tree widths: as text)."""
    out = []
    for name, value in settings.items():
        if isinstance(value, bool):
            out += [flags.flag(name)] if value else []
        else:
            out += [flags.flag(name), widths_text(value) if name == "tree_widths" else str(value)]
    return out


def parsed(settings: dict) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    run.add_run_args(parser)
    return parser.parse_args(["--prompt", "hi", *argv(settings)])


@pytest.mark.parametrize("setting, value, without, with_, words", CASES, ids=IDS)
def test_a_flag_that_would_do_nothing_is_refused(capsys, setting, value, without, with_, words):
    status = cli.main(["run", "--prompt", "hi", "--draft", "nowhere/draft", "--target", "nowhere/target",
                       *argv({**without, setting: value})])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert status == 2 and len(errors) == 1, errors
    assert errors[0].startswith(f"error: {flags.flag(setting)} applies only {words}")
    assert errors[0].endswith(f"or leave {flags.flag(setting)} out (it would do nothing)")


@pytest.mark.parametrize("setting, value, without, with_, words", CASES, ids=IDS)
def test_with_what_it_needs_a_flag_takes_effect(setting, value, without, with_, words):
    settings = run.run_settings(parsed({**with_, setting: value}))
    if setting != "draft_weights":  # a load option: load_pair reads it
        assert getattr(settings, setting) == value


ALWAYS_SAID = ("adaptive", "tree_widths", *run.RULE_FLAGS)  # refused when typed, whatever their value


@pytest.mark.parametrize("setting, value, without, with_, words",
                         [case for case in CASES if case[0] not in ALWAYS_SAID],
                         ids=[i for i, case in zip(IDS, CASES) if case[0] not in ALWAYS_SAID])
def test_a_flag_at_its_default_value_passes(setting, value, without, with_, words):
    """Typed, but at the value the run would take anyway (a switch cannot be typed off; --tree beside a chain
    drafter is refused whatever its widths, as it always was; --stop-rule and --confidence choose a rule that would
    not run, so they are refused at their defaults too: tests/cli/test_commands.py)."""
    default = "auto" if setting == "draft_weights" else getattr(RunSettings(), setting)
    run.run_settings(parsed({**without, setting: default}))


def test_a_preset_beside_two_models_is_refused(capsys):
    status = cli.main(["run", "--prompt", "hi", "--preset", "smollm2-135m-1.7b", "--draft", "a", "--target", "b"])
    assert status == 2 and "give a preset or a draft and a target, not both" in capsys.readouterr().err


def test_a_bad_value_is_said_before_what_it_needs(capsys):
    """--top-p 1.5 at temperature 0 is out of bounds first: that is wrong with any other flags."""
    assert cli.main(["run", "--prompt", "hi", "--temperature", "0", "--top-p", "1.5"]) == 2
    assert "error: top_p must be a number above 0 and at most 1" in capsys.readouterr().err

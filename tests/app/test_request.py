"""The request contract: Generate's parameters are RunSettings' field names (beside the prompt, the pair and lecture
mode), the page's inputs and the API's parameter list follow them, and every output is read by name."""

import dataclasses
import inspect

import pytest

from specviz.app.actions import EVENT_OUTPUTS, ModelActions, api_outputs
from specviz.app.inputs import LIMITS
from specviz.app.page import build_demo
from specviz.engine import RunSettings

PAGE_ONLY = {"prompt", "preset", "lecture"}  # what Generate reads beside the run's settings


def generate_parameters() -> list[str]:
    return [name for name in inspect.signature(ModelActions.generate).parameters
            if name not in ("self", "progress", "request")]


@pytest.fixture(scope="module")
def api():
    return build_demo(lambda preset, progress: None, {"tiny": "tiny"}).get_api_info()["named_endpoints"]


def test_generate_takes_the_contracts_fields_by_their_names():
    run_fields = {f.name for f in dataclasses.fields(RunSettings)}
    names = generate_parameters()
    assert set(names) - PAGE_ONLY <= run_fields
    assert set(LIMITS) <= set(names)  # every bounded field the page offers reaches the run


def test_the_apis_parameters_follow_the_handlers_signature(api):
    # the same names in the same order as before the contract: API clients keep working
    assert [p["parameter_name"] for p in api["/generate"]["parameters"]] == generate_parameters() == [
        "prompt", "preset", "k", "temperature", "top_p", "top_k", "seed", "max_new_tokens", "lecture", "drafter",
        "adaptive", "draft_layers", "tree_widths", "stop_rule", "tree_budget", "tree_depth"]


@pytest.mark.parametrize("event", sorted(EVENT_OUTPUTS))
def test_each_events_outputs_have_names_in_the_apis_order(api, event):
    names = api_outputs(event)
    assert len(names) == len(set(names)) == len(api[f"/{event}"]["returns"])
    assert names[0] == "status" and "trace" not in names
    assert api_outputs("generate") == ["status", "info", "download", "slider", "stage", "per_pass", "summary",
                                       "timeline"]


def test_a_steps_outputs_have_names_too(api):
    assert api_outputs("show_round") == ["slider", "per_pass"] and len(api["/show_round"]["returns"]) == 2


def test_the_page_the_cli_and_the_api_share_one_default_per_setting(api):
    """Each default is settings/defaults.py's, read by RunSettings (the Python API), the CLI's flags, the page's
    controls (so an API client that names no value gets it) and the warping: one value each, not two."""
    import argparse

    from specviz.algorithm.sampling import SamplingSettings
    from specviz.cli.run import add_run_args, run_settings
    from specviz.settings import defaults

    contract = RunSettings()
    cli = argparse.ArgumentParser()
    add_run_args(cli)
    cli_args = cli.parse_args(["--prompt", "x"])  # flags left out are None: the run asks the contract's defaults
    cli_defaults = vars(run_settings(cli_args))
    page = {p["parameter_name"]: p["parameter_default"] for p in api["/generate"]["parameters"]
            if p["parameter_has_default"]}
    for name in ("k", "temperature", "top_k", "top_p", "seed", "max_new_tokens", "adaptive", "stop_rule",
                 "drafter", "draft_layers", "tree_budget", "tree_depth"):
        assert page[name] == cli_defaults[name] == getattr(contract, name), name
    assert contract.temperature is defaults.TEMPERATURE is SamplingSettings().temperature
    assert contract.stop_rule is defaults.STOP_RULE and contract.adaptive is defaults.ADAPTIVE
    assert (defaults.TEMPERATURE, defaults.STOP_RULE) == (0.7, "cost")  # what docs/settings.md states
    assert cli_args.no_chat is not contract.chat

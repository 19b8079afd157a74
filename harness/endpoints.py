"""The app through gradio_client: every input of /generate in one place (in the handler's order, each at the
page's default), and what an endpoint returned read by name, never by position. The tests and tools/load_test.py
call the app with these.
"""

from __future__ import annotations

import html
import inspect
import re

from specviz.app.actions import ModelActions, api_outputs
from specviz.drafters.tree import DEFAULT_WIDTHS
from specviz.engine import RunSettings
from specviz.settings.bounds import widths_text

def named(event: str, outputs) -> dict:
    """What the endpoint /`event` returned, by name (specviz.app.actions.api_outputs: status, info, download, then
    the round view's panels, and for /open_trace the quiz): tests read outputs by name, never by position."""
    names = api_outputs(event)
    assert len(outputs) == len(names), f"/{event} returned {len(outputs)} outputs for {names}"
    return dict(zip(names, outputs))


def open_trace(client, path, lecture: bool = False) -> dict:
    """/open_trace with the file at `path` -> its outputs by name."""
    from gradio_client import handle_file

    return named("open_trace", client.predict(handle_file(str(path)), lecture, api_name="/open_trace"))


def show_round(client, number, lecture: bool = False):
    """/show_round: the slider's value after the step (the server clamps `number` to the trace's rounds)."""
    return value(named("show_round", client.predict(number, lecture, api_name="/show_round"))["slider"])


def open_example(client, index, lecture: bool = False) -> dict:
    """/open_example with the gallery's `index` -> its outputs by name."""
    return named("open_example", client.predict(index, lecture, api_name="/open_example"))


# /generate's inputs after the prompt and the preset, each at the page's default (settings/defaults.py's) but for
# 24 new tokens, a short run; the order is the handler's signature, the API's parameter list.
GENERATE_DEFAULTS = {**{name: getattr(RunSettings(), name) for name in ("k", "temperature", "top_p", "top_k", "seed",
                                                                        "drafter", "adaptive", "draft_layers",
                                                                        "stop_rule", "tree_budget", "tree_depth")},
                     "max_new_tokens": 24, "lecture": False, "tree_widths": widths_text(DEFAULT_WIDTHS)}
GENERATE_ORDER = [name for name in inspect.signature(ModelActions.generate).parameters
                  if name not in ("self", "prompt", "preset", "progress", "request")]
assert sorted(GENERATE_ORDER) == sorted(GENERATE_DEFAULTS), "the tests' /generate inputs follow the handler's"


def generate_inputs(prompt: str = "def fib(n):", preset: str = "tiny", **settings) -> list:
    """Every input of /generate in order: the prompt, the preset, then GENERATE_DEFAULTS with `settings` in their
    place (any value, valid or not: the tests of bad input send what the page could not)."""
    chosen = generate_settings(**settings)
    return [prompt, preset, *(chosen[name] for name in GENERATE_ORDER)]


def generate_settings(**settings) -> dict:
    """/generate's inputs after the prompt and the preset, by name: for calling ModelActions.generate directly."""
    unknown = settings.keys() - GENERATE_DEFAULTS.keys()
    assert not unknown, f"/generate has no input {sorted(unknown)}"
    return {**GENERATE_DEFAULTS, **settings}


def submit(client, prompt: str = "def fib(n):", preset: str = "tiny", **settings):
    """Press Generate through `client` (a gradio_client Client) -> its Job: .result() the last frame's outputs,
    .outputs() every frame's (read them with `named("generate", ...)`)."""
    return client.submit(*generate_inputs(prompt, preset, **settings), api_name="/generate")


def generate(client, prompt: str = "def fib(n):", preset: str = "tiny", **settings) -> dict:
    """A whole run of /generate -> the outputs of its last frame, by name."""
    return named("generate", submit(client, prompt, preset, **settings).result())


def generate_frames(client, prompt: str = "def fib(n):", preset: str = "tiny", **settings) -> tuple[dict, list]:
    """A whole run of /generate -> (the outputs of its last frame, those of every frame streamed), by name."""
    job = submit(client, prompt, preset, **settings)
    return named("generate", job.result()), [named("generate", frame) for frame in job.outputs()]


def value(update):
    return update["value"] if isinstance(update, dict) else update


def text(markup: str) -> str:
    """What a status line says, without its tags and entities."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))

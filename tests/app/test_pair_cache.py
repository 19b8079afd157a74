"""app/pair_cache.py: a pair loads once however many ask, and whoever waits on a load another began (the app's own, at
its start) hears how far it is: Generate's status line says at once what it waits for (issue 64, item 15)."""

import html
import threading
import time
from dataclasses import fields
from types import SimpleNamespace

import gradio as gr
import pytest

import app
from harness.endpoints import generate_settings
from specviz.app import pair_cache
from specviz.app.actions import ModelActions, RunOutputs
from specviz.app.round_view import RoundView

WAIT_S = 60  # the most a condition is waited for on a busy machine (never a timing asserted)
STAGE = "loading the target's weights"


class HeldLoad:
    """A load_pair stand-in that says how far it is, then holds until released: a load in progress."""

    def __init__(self, pair):
        self.pair, self.reached, self.release = pair, threading.Event(), threading.Event()

    def __call__(self, preset, progress=None):
        progress(0.5, STAGE)
        self.reached.set()
        self.release.wait(WAIT_S)
        return self.pair


@pytest.fixture
def held(tiny_pair, tokenizer):
    draft, target = tiny_pair
    return HeldLoad(SimpleNamespace(draft=draft, target=target, tokenizer=tokenizer, draft_name="tiny-draft",
                                    target_name="tiny-target", dtype="float32"))


def in_thread(fn):
    """fn() started in a thread: (its result holder, the thread); the holder gets "value" or "error"."""
    result = {}

    def run():
        try:
            result["value"] = fn()
        except BaseException as e:
            result["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return result, thread


def waited_for(condition) -> bool:
    deadline = time.monotonic() + WAIT_S
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_a_caller_waiting_on_a_load_another_began_hears_its_stage(held):
    cache = pair_cache.EngineCache(held, measure_at_load=False)
    app.load_in_background(cache, "tiny")  # as app.py starts the first pair: no progress of its own
    assert held.reached.wait(WAIT_S)
    heard = []
    second, thread = in_thread(lambda: cache("tiny", lambda fraction, text: heard.append((fraction, text))))
    assert waited_for(lambda: heard), "the waiting caller heard nothing while the load was held"
    assert heard[0] == (0.5, STAGE) and cache.loading("tiny").text == STAGE and cache.loaded("tiny") is None
    held.release.set()
    thread.join(WAIT_S)
    assert second["value"] is cache.loaded("tiny") and cache.loading("tiny") is None


def _outputs() -> RunOutputs:
    with gr.Blocks():  # the components Generate writes to, outside a page
        return RunOutputs(gr.State(), gr.HTML(), gr.HTML(), gr.DownloadButton(),
                          RoundView(*(gr.HTML() for _ in fields(RoundView))), gr.Checkbox())


def test_generate_during_the_apps_own_load_says_at_once_what_it_waits_for(held):
    """The first Generate after a start used to wait for the load the app began, silent under Gradio's "processing":
    now its first frame, while the load is still held, is the status line saying what it waits for and how far the
    load is; once the pair is ready the run goes on, and a later Generate has nothing to wait for."""
    cache = pair_cache.EngineCache(held, measure_at_load=False)
    app.load_in_background(cache, "tiny")
    assert held.reached.wait(WAIT_S)
    out = _outputs()
    actions = ModelActions(cache, ["tiny"], out)
    frames = actions.generate("def fib(n):", "tiny", **generate_settings(temperature=0.0, max_new_tokens=8))
    first, thread = in_thread(lambda: next(frames))
    thread.join(WAIT_S)
    assert "value" in first and not held.release.is_set(), "no frame came while the pair was loading"
    assert out.trace not in first["value"]  # the status alone: no round yet
    said = html.unescape(first["value"][out.status])
    assert said.count("Generate waits for the model pair to load: ") == 1 and "of the load; waiting" in said
    # it says again every WAIT_SAY_S while the load goes on: soon with the stage the load has reached
    while not held.release.is_set() and f"to load: {STAGE} (50% of the load" not in said:
        said = html.unescape(next(frames)[out.status])
    held.release.set()
    *_, last = frames
    assert "Done:" in last[out.status] and last[out.trace].rounds
    again = list(actions.generate("def fib(n):", "tiny", **generate_settings(temperature=0.0, max_new_tokens=8)))
    assert not any("waits for the model pair" in frame.get(out.status, "") for frame in again)

"""Faults in the middle of a run: the model failing (out of memory, a CUDA error), the user closing the tab,
Generate pressed again. The app keeps serving, the rounds so far stay viewable, the status says what happened,
and the next Generate works.

Through the API (gradio_client against a demo on tiny models), and once in a real browser for the double
Generate, whose stop depends on how the page sends the second click.
"""

import copy
import os
import re
import threading
import time
from pathlib import Path

import pytest
import torch

os.environ["HF_HUB_OFFLINE"] = "1"  # gradio_client must not look anything up on the hub

from specviz.app.actions import ModelActions, RunOutputs  # noqa: E402
from specviz.app.round_view import RoundView  # noqa: E402
from specviz.engine import Engine  # noqa: E402
from specviz.record.load import load_trace  # noqa: E402
from harness import endpoints  # noqa: E402
from harness.browser import CHROMIUM, serve  # noqa: E402
from harness.endpoints import generate_settings, named, show_round, text, value  # noqa: E402
from harness.tiny_models import noisy_copy, tiny_model  # noqa: E402

RECORD_STATUS = """() => {  // every text the status line shows, however briefly
    window.statuses = [];
    const status = document.querySelector('#status');
    new MutationObserver(() => window.statuses.push(status.textContent.trim()))
        .observe(status, {subtree: true, childList: true, characterData: true});
}"""


class Fault:
    """A forward pre-hook: slows every call of a model by `delay` s (and holds it while `gate` is clear), and once
    armed raises an error on its n-th call (once, so the next run works)."""

    def __init__(self, model: torch.nn.Module, delay: float = 0.0):
        self.calls, self.delay, self.error, self.on = 0, delay, None, 0
        self.gate = threading.Event()  # while clear, every call waits for it (at most a minute)
        self.gate.set()
        self.close_at = None  # the call that clears the gate: a run held mid-way, whatever the machine's speed
        self.handle = model.register_forward_pre_hook(self)

    def arm(self, error: BaseException, on: int) -> None:
        self.calls, self.error, self.on = 0, error, on

    def __call__(self, module, args):
        self.calls += 1
        if self.calls == self.close_at:
            self.gate.clear()
        self.gate.wait(60)
        time.sleep(self.delay)
        if self.error is not None and self.calls == self.on:
            error, self.error = self.error, None
            raise error


@pytest.fixture(scope="module")
def app(tokenizer):
    """A demo with two pairs: "tiny" (its target can be armed to fail) and "slow" (0.1 s per target pass)."""
    target = tiny_model(seed=5)
    draft, slow_target = noisy_copy(target, 0.2), copy.deepcopy(target)
    engines = {"tiny": Engine(draft, target, tokenizer, "tiny-draft", "tiny-target"),
               "slow": Engine(draft, slow_target, tokenizer, "tiny-draft", "tiny-target")}
    faulty, slow = Fault(target), Fault(slow_target, delay=0.1)
    demo, url = serve(lambda preset, progress: engines[preset], {"slow": "Slow", "tiny": "Tiny"}, "slow")
    yield dict(url=url, faulty=faulty, slow=slow, engines=engines)
    demo.close()


@pytest.fixture(scope="module")
def url(app):
    """This module's app, in place of conftest's `url`: `client` here is on it."""
    return app["url"]


def submit(client, preset="tiny", max_new_tokens=40):
    """A greedy run of "def fib(n):" on one of this module's pairs -> its gradio_client Job."""
    return endpoints.submit(client, "def fib(n):", preset, temperature=0.0, max_new_tokens=max_new_tokens)


def generate(client, preset="tiny", max_new_tokens=40) -> dict:
    return named("generate", submit(client, preset, max_new_tokens).result())


def first_frame(job, timeout: float = 30):
    deadline = time.time() + timeout
    while not job.outputs():
        assert time.time() < deadline, "no frame from the run"
        time.sleep(0.02)


def assert_done(outputs):
    assert text(outputs["status"]).startswith("✓ Done"), outputs["status"]


@pytest.mark.parametrize("error, said", [
    (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
     "out of memory (OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB)"),
    (MemoryError(), "out of memory (MemoryError)"),
    (RuntimeError("CUDA error: an illegal memory access was encountered"),
     "RuntimeError: CUDA error: an illegal memory access was encountered"),
], ids=["cuda-oom", "cpu-oom", "cuda-error"])
def test_a_failure_midway_keeps_the_rounds_so_far(app, client, error, said):
    app["faulty"].arm(error, on=3)  # the target's 3rd pass is round 3's verify: rounds 1 and 2 are done
    final = generate(client)
    assert f"Generation stopped after round 2: {said}" in text(final["status"]) and "error" in final["status"]
    assert value(final["slider"]) == 2 and "Round 2 of 2" in final["stage"]
    assert len(load_trace(Path(value(final["download"])).read_bytes()).rounds) == 2  # the partial trace, as a file
    assert "Round 1 of 2" in final["stage"]  # the stage holds both rounds ...
    assert show_round(client, 99) == 2  # ... and so does the trace state
    assert_done(generate(client))  # the same pair works again


def test_a_failure_in_round_1_keeps_the_previous_trace(app, client):
    n = value(generate(client)["slider"])
    app["faulty"].arm(torch.OutOfMemoryError("CUDA out of memory"), on=1)
    final = generate(client)
    assert "Generation failed in round 1: out of memory" in text(final["status"])
    assert show_round(client, 10**6) == n  # the state keeps the previous n rounds
    assert_done(generate(client))


def test_closing_the_tab_stops_the_run_and_the_next_generate_works(app, client):
    slow = app["slow"]
    job = submit(client, "slow", max_new_tokens=200)
    first_frame(job)
    job.cancel()  # what Gradio does for a closed tab: the handler's generator is closed at its next frame
    time.sleep(0.5)
    calls = slow.calls
    time.sleep(0.5)
    assert slow.calls == calls, "the run kept going after its tab was closed"
    assert_done(generate(client))


def test_closing_the_handler_generator_frees_the_run(app):
    """The same, one level down: closing Generate's generator closes the model run inside it at once."""
    from dataclasses import fields

    import gradio as gr

    with gr.Blocks():  # the components Generate writes to, outside a page
        out = RunOutputs(gr.State(), gr.HTML(), gr.HTML(), gr.DownloadButton(), RoundView(*(gr.HTML() for _ in fields(RoundView))),
                         gr.Checkbox())
    actions = ModelActions(lambda preset, progress: app["engines"][preset], ["slow"], out)
    frames = actions.generate("def fib(n):", "slow", **generate_settings(temperature=0.0, max_new_tokens=200))
    next(frames)
    calls = app["slow"].calls
    frames.close()
    time.sleep(0.2)
    assert app["slow"].calls == calls and not actions.runs._stops
    *_, last = actions.generate("def fib(n):", "slow", **generate_settings(temperature=0.0, max_new_tokens=8))
    assert_done({"status": last[out.status]})


def test_generate_pressed_again_stops_the_run_after_its_round(app, client):
    job = submit(client, "slow", max_new_tokens=200)
    first_frame(job)
    client.predict(api_name="/stop")  # the first of Generate's two listeners; the page sends it on every press
    final = named("generate", job.result())
    said = text(final["status"])
    assert re.search(r"Stopped after round \d+ \(\d+ new tokens\): Generate was pressed again", said), said
    n = value(final["slider"])
    assert f"Round {n} of {n}" in final["stage"]
    assert f"Round 1 of {n}" in final["stage"]  # the partial trace, viewable
    assert show_round(client, 10**6) == n
    assert_done(generate(client))


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")
def test_generate_pressed_twice_in_the_page_stops_the_first_run_and_starts_the_second(app, monkeypatch):
    sync_api = pytest.importorskip("playwright.sync_api")
    from harness.browser import launch_browser
    from specviz.app.serving import Runs

    # The first run is held mid-way (its target waits at the gate) until the server has stopped it: on a busy
    # machine the page may send the second press seconds late, and a run that had ended by then stops nothing.
    stopped, stop = threading.Event(), Runs.stop

    def stop_and_tell(self, session):
        with self._lock:
            running = session in self._stops
        stop(self, session)
        if running:
            stopped.set()

    monkeypatch.setattr(Runs, "stop", stop_and_tell)
    slow = app["slow"]
    with sync_api.sync_playwright() as pw:
        browser = launch_browser(pw)
        page = browser.new_page()
        page.goto(app["url"])
        # ready as a person sees it: Generate enabled and the opening example shown (its load event has run, so
        # its status cannot land after the run's and hide it)
        page.wait_for_selector("#generate:not([disabled])", timeout=120_000)
        page.wait_for_function("document.querySelector('#status')?.textContent.includes('Recorded example')",
                               polling=50, timeout=120_000)
        page.evaluate(RECORD_STATUS)
        # Clicks from script: playwright's own click waits for the page to settle, which it never does mid-run.
        slow.delay, slow.close_at = 0.05, slow.calls + 3  # the first run holds in its third round
        try:
            page.evaluate("document.querySelector('#generate').click()")
            page.wait_for_function("window.statuses.some(s => s.includes('Generating'))", polling=50,
                                   timeout=120_000)
            stopped.clear()  # the first press's stop found nothing running (its run had not started)
            page.evaluate("document.querySelector('#generate').click()")
            assert stopped.wait(120), "the second press's stop never reached the running run"
        finally:
            slow.close_at = None
            slow.gate.set()
        page.wait_for_function("window.statuses.some(s => s.includes('Done:'))", polling=50, timeout=180_000)
        statuses = page.evaluate("window.statuses")
        browser.close()
    said = [i for i, s in enumerate(statuses) if "Generate was pressed again" in s]
    assert said and "Generating… round 1," in " ".join(statuses[said[0]:]), "\n".join(statuses)

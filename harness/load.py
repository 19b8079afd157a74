"""The load test's driver: many sessions at once against a served app, each a thread with its own gradio_client
Client (so its own Gradio session and trace state), all pressing Generate at once and then stepping through every
recorded round, with the engine's runs counted as they overlap. tools/load_test.py runs it on the packaged pair
(or tiny models) and prints the README's table; tests/app/test_load.py runs it on tiny models.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # before gradio is imported: no telemetry
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # gradio_client must not look anything up on the hub

from gradio_client import Client  # noqa: E402

from harness.browser import serve as serve_app  # noqa: E402
from harness.endpoints import named, submit, value  # noqa: E402
from specviz.engine import Engine, RunSettings  # noqa: E402
from specviz.record.load import load_trace  # noqa: E402
from specviz.view import token_text  # noqa: E402


# --- the server side: how many generations run at once -----------------------------------------------------

class Overlap:
    """Counts the engine's runs in progress: Generate streams one run per press, so the most at once is the
    concurrency the queue really allowed."""

    def __init__(self):
        self._lock = threading.Lock()
        self.now = self.most = self.total = 0

    @contextmanager
    def running(self):
        with self._lock:
            self.now += 1
            self.total += 1
            self.most = max(self.most, self.now)
        try:
            yield
        finally:
            with self._lock:
                self.now -= 1

    def watch(self, engine: Engine) -> Engine:
        """Count every run `engine.start` begins from now on, from its first round until it ends or is closed."""
        start = engine.start

        def counted(*args, **kwargs):  # whatever Engine.start takes (the app passes the prompt's ids by name)
            return CountedRun(start(*args, **kwargs), self)

        engine.start = counted  # an instance attribute shadows the method for this engine only
        return engine


class CountedRun:
    """A ChainRun whose iteration is counted by an Overlap (everything else passes through)."""

    def __init__(self, run, overlap: Overlap):
        self._run, self._overlap = run, overlap

    def __iter__(self):
        with self._overlap.running():  # a closed stream drops this generator, which exits the block
            yield from self._run

    def __getattr__(self, name):
        return getattr(self._run, name)


# --- the client side: one session ----------------------------------------------------------------------------

@dataclass
class Session:
    prompt: str
    seed: int
    tokens: list[int] | None = None  # the output the app's trace file holds
    gen_s: float = 0.0  # press to final frame, at the client: queue wait + run
    steps: list[tuple[float, bool]] = field(default_factory=list)  # (seconds, a generation was running)
    error: str | None = None


def run_session(url: str, session: Session, settings: RunSettings, preset: str, go: threading.Barrier,
                overlap: Overlap, downloads: Path, timeout: float) -> None:
    """Generate once, then step through every round; any failure is recorded, not raised (threads)."""
    client = None
    try:
        client = Client(url, verbose=False, download_files=str(downloads))
        go.wait(timeout)  # every client connected: now all press Generate at once
        t0 = time.perf_counter()
        job = submit(client, session.prompt, preset, k=settings.k, temperature=settings.temperature,
                     top_p=settings.top_p, top_k=settings.top_k, seed=session.seed,
                     max_new_tokens=settings.max_new_tokens, drafter=settings.drafter)
        final = named("generate", job.result(timeout=timeout))
        session.gen_s = time.perf_counter() - t0
        assert "Done" in final["status"], f"status: {final['status']}"
        trace = load_trace(Path(value(final["download"])).read_bytes())
        assert trace.prompt == session.prompt and trace.settings["seed"] == session.seed, "another session's trace"
        session.tokens = trace.output_token_ids
        n = value(final["slider"])
        assert n == len(trace.rounds), f"slider at {n}, trace has {len(trace.rounds)} rounds"
        assert token_text.text_html(session.prompt) in final["stage"], "another session's prompt on the stage"
        for r in range(1, n + 1):
            step(client, session, overlap, r, trace, timeout)
    except Exception as e:  # noqa: BLE001 - the report says which session failed and how
        session.error = f"{type(e).__name__}: {e}"
        go.abort()  # a session that never got to the barrier must not hold the others there
    finally:
        if client is not None:
            client.close()  # ends its heartbeat: the server then treats the session as a closed tab


def step(client: Client, session: Session, overlap: Overlap, number: int, trace, timeout: float) -> None:
    """One round step (/show_round: the slider and the chart's mark; the browser shows the round itself), timed;
    the chart must be this session's trace's, marked at round `number`."""
    busy = overlap.now > 0
    t0 = time.perf_counter()
    slider, per_pass = client.submit(number, False, api_name="/show_round").result(timeout=timeout)
    session.steps.append((time.perf_counter() - t0, busy and overlap.now > 0))
    assert value(slider) == number, f"/show_round({number}) moved the slider to {value(slider)}"
    figure = json.loads(per_pass["plot"])
    stacked = [sum(t["y"][i] for t in figure["data"] if t["type"] == "bar") for i in range(len(trace.rounds))]
    assert stacked == [r.tokens_this_pass for r in trace.rounds], f"/show_round({number}): another session's chart"


# --- the whole run --------------------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), linearly interpolated between the nearest ranks; NaN for no values."""
    if not values:
        return float("nan")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def run_load(url: str, overlap: Overlap, prompts: list[str], settings: RunSettings,
             preset: str, expected: list[list[int]], timeout: float = 300) -> dict:
    """Drive len(prompts) sessions at once (session i: prompts[i], seed i); -> report (see `summarize`)."""
    sessions = [Session(prompt, seed) for seed, prompt in enumerate(prompts)]
    go = threading.Barrier(len(sessions))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="specviz-load-") as downloads:
        threads = [threading.Thread(target=run_session, daemon=True,
                                    args=(url, s, settings, preset, go, overlap, Path(downloads) / str(i), timeout))
                   for i, s in enumerate(sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(1.0, timeout - (time.perf_counter() - started)))
    report = summarize(sessions, expected, overlap)
    report["wall_s"] = time.perf_counter() - started
    report["unfinished"] = sum(t.is_alive() for t in threads)
    return report


def summarize(sessions: list[Session], expected: list[list[int]], overlap: Overlap) -> dict:
    steps = [s for session in sessions for s, _ in session.steps]
    busy_steps = [s for session in sessions for s, busy in session.steps if busy]
    gens = [s.gen_s for s in sessions if s.error is None]
    return dict(
        sessions=len(sessions),
        errors=[f"session {i}: {s.error}" for i, s in enumerate(sessions) if s.error],
        mismatched=[i for i, (s, tokens) in enumerate(zip(sessions, expected)) if s.tokens != tokens],
        most_at_once=overlap.most, runs=overlap.total,
        steps=len(steps), steps_during_generation=len(busy_steps),
        step_p50=percentile(steps, 50), step_p95=percentile(steps, 95),
        busy_step_p50=percentile(busy_steps, 50), busy_step_p95=percentile(busy_steps, 95),
        gen_p50=percentile(gens, 50), gen_p95=percentile(gens, 95),
    )


def expected_tokens(engine: Engine, prompts: list[str], settings: RunSettings) -> list[list[int]]:
    """Each session's prompt and seed run alone, on the engine directly (seed i for prompts[i])."""
    return [engine.run(prompt, dataclasses.replace(settings, seed=seed)).output_token_ids
            for seed, prompt in enumerate(prompts)]


def serve(get_engine, presets: dict[str, str], preset: str, concurrency: int):
    """The app on loopback in this process, `concurrency` generations at once -> (demo, url)."""
    return serve_app(get_engine, presets, preset, concurrency=concurrency)


def ms(seconds: float) -> str:
    if math.isnan(seconds):
        return "–"  # no such requests
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def table(report: dict) -> str:
    """The report's latencies as the README's markdown table."""
    return "\n".join([
        "| under load | p50 | p95 |", "|---|---|---|",
        f"| round step (all {report['steps']}) | {ms(report['step_p50'])} | {ms(report['step_p95'])} |",
        f"| round step while a generation ran ({report['steps_during_generation']}) | "
        f"{ms(report['busy_step_p50'])} | {ms(report['busy_step_p95'])} |",
        f"| generation, press to last frame ({report['sessions']}) | {ms(report['gen_p50'])} | "
        f"{ms(report['gen_p95'])} |"])

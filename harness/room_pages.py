"""Rooms driven from outside: a follower's tab (ready once it follows the lecturer's round) and a room opened from a
lecturer's tab in a browser; the rooms' routes served alone on a loopback port (no Gradio page); a long trace to
measure rooms by (64 rounds of the tiny pair), and what a phone downloads to follow a lecture on it (`sizes`).
tests/app/test_room_browser.py, test_room_secrets*.py, tools/screenshot_room.py and tools/room_bench.py drive rooms
with these.
"""

from __future__ import annotations

import gzip
import json
import statistics
import threading
import time
import zlib
from contextlib import contextmanager

from harness.browser import AppPage, Page, free_port

WHERE = "#sv-where"


class FollowerPage(Page):
    def wait_ready(self) -> None:
        self.wait_text(WHERE, "Following: round")

    def shown(self) -> int:
        return int(self.page.evaluate("() => document.querySelector('#stage .sv-stage').dataset.current"))

    def picked(self) -> list[str]:
        """The answers marked as picked anywhere on this page."""
        return self.page.evaluate("() => [...document.querySelectorAll('.sv-guess.sv-picked')]"
                                  ".map(b => b.closest('.sv-round').dataset.round + ':' + b.dataset.guess)")


def open_room(lecturer: AppPage) -> str:
    """Open a room on the trace on screen; -> its join link."""
    lecturer.page.click("#room-panel button, #room-panel .label-wrap")  # the accordion opens
    lecturer.page.click("#open-room")
    lecturer.wait_text("#status", "Room ", "is open")
    return lecturer.wait_js("() => document.querySelector('#room-box .sv-lead') && "
                            "document.querySelector('#room-box .sv-room-link').textContent")


@contextmanager
def room_server(hub):
    """Serve the rooms' routes of `hub` (specviz/app/room_routes.py) alone on a loopback port; -> its base url."""
    import uvicorn
    from starlette.applications import Starlette

    from specviz.app.room_routes import room_routes

    port = free_port()
    config = uvicorn.Config(Starlette(routes=room_routes(hub)), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


LONG_ROUNDS = 64  # a long lecture's trace: what a room's page and stream are measured on (docs/lecture.md)


def long_trace(rounds: int = LONG_ROUNDS):
    """A real run of the tiny pair with exactly `rounds` rounds (K = 4, temperature 1, seed 1; max new tokens found
    near 170, where this pair makes 64; a few seconds a run)."""
    from harness.tiny_models import char_tokenizer, noisy_copy, tiny_model
    from specviz.engine import Engine, RunSettings

    target = tiny_model(seed=2, layers=2)
    engine = Engine(noisy_copy(target, 0.2), target, char_tokenizer(), "tiny-draft", "tiny-target")
    tokens = 170 * rounds // LONG_ROUNDS
    for tries in range(12):
        trace = engine.run("def fib(n):", RunSettings(k=4, temperature=1.0, seed=1, max_new_tokens=tokens))
        if len(trace.rounds) == rounds:
            return trace
        tokens += 2 if len(trace.rounds) < rounds else -1
    raise RuntimeError(f"no run of the tiny pair near {tokens} new tokens has {rounds} rounds")


def sizes(trace) -> dict:
    """Bytes a phone downloads for a room on `trace`: the page to join (gzipped) before the first step, half way and
    at the end, and its stream's bytes per step over the whole lecture (quiz on, each round revealed step by step)."""
    import httpx

    from specviz.app.room_html import follower_page
    from specviz.app.room_hub import RoomHub
    from specviz.lecture.room_trace import quiz_facts, trace_title
    from specviz.lecture.rooms import Rooms
    from specviz.record.quiz_data import reveal_steps

    hub = RoomHub(Rooms())
    opened = hub.rooms.open(trace.to_json(), quiz_facts(trace), trace_title(trace))
    old = len(gzip.compress(follower_page(opened.room, 1, trace, {n: reveal_steps(r) for n, r in
                                                                   enumerate(trace.rounds, 1)}, 0).encode(), 6))
    with room_server(hub) as base, httpx.Client(base_url=base, timeout=60) as http:
        def join() -> int:
            page = http.get(f"/room/{opened.room}", headers={"Accept-Encoding": "gzip"})
            return page.num_bytes_downloaded

        follower = http.post(f"/room/{opened.room}/join", json={}).json()["follower"]
        joined, since = [join()], hub.rooms.view(opened.room).forms_version
        got, lock = [], threading.Lock()

        def read():  # the stream as a browser gets it, gzipped: its bytes counted as they come, message by message
            url = f"{base}/room/{opened.room}/events?follower={follower}&since={since}"
            with httpx.stream("GET", url, headers={"Accept-Encoding": "gzip"}, timeout=60) as stream:
                unzip, text, size = zlib.decompressobj(16 + zlib.MAX_WBITS), "", 0
                for chunk in stream.iter_raw():
                    size += len(chunk)
                    text += unzip.decompress(chunk).decode()
                    while "\n\n" in text:
                        message, text = text.split("\n\n", 1)
                        data = [line[5:] for line in message.splitlines() if line.startswith("data:")]
                        if data:
                            with lock:
                                got.append((json.loads(data[0])["version"], size))
                            size = 0

        threading.Thread(target=read, daemon=True).start()
        per_step = []
        for n, rnd in enumerate(trace.rounds, 1):
            for step in range(reveal_steps(rnd) + 1):
                body = {"key": opened.key, "trace": opened.trace, "round": n, "step": step, "quiz": True}
                version = http.post(f"/room/{opened.room}/drive", json=body).json()["version"]
                deadline = time.monotonic() + 30
                while not any(v >= version for v, _ in got):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the stream never sent version {version}")
                    time.sleep(0.005)
                with lock:
                    per_step.append(next(b for v, b in got if v >= version))
                    got.clear()
            if n == len(trace.rounds) // 2:
                joined.append(join())
        joined.append(join())
    return {"rounds": len(trace.rounds), "trace_json_bytes": len(trace.to_json()),
            "join_page_gzip_bytes_start_middle_end": joined, "old_page_gzip_bytes": old, "steps": len(per_step),
            "stream_bytes_per_step_median": statistics.median(per_step),
            "stream_bytes_per_step_mean": round(statistics.mean(per_step)), "stream_bytes_per_step_max": max(per_step),
            "stream_bytes_whole_lecture": sum(per_step)}

"""Rooms under load: simulated followers over HTTP on loopback (issue 23's figures; a benchmark, not a test).

    python -m tools.room_bench                      # 100 followers in one room, then 10 rooms × 20
    python -m tools.room_bench --rooms 1 --followers 20 --steps 5

The server is the app itself (build_demo on tiny models: a room runs no model) in a process of its own, so its
memory is its own; it opens the rooms on the "code" example at start and prints their ids and keys. The load
generator is one asyncio process (one httpx client, one task per follower: 100 gradio Clients in threads would
load the machine more than the server does): each follower gets the page (gzipped), joins, and reads the room's
server-sent stream. The lecturer of each room then drives `--steps` steps, every room at the same moment, one step
every `--pace` seconds, and each follower records when it saw each new version. Reported: the delay from the
lecturer's request to each follower's copy of the step (median, 95th percentile, max), messages seen in the wrong
room, the server's resident memory per follower (connected streams) and, measured in-process with tracemalloc, what
an idle room holds beyond its trace.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

MAX_FOLLOWERS_BENCH = 300  # the most this script simulates (rooms × followers): bounded, loopback only
MAX_SECONDS = 600  # and the longest it runs


# --- the server process ---------------------------------------------------------------------------------------

def serve(port: int, rooms: int) -> None:
    """Serve the app with `rooms` rooms open; print one JSON line {"rooms": [[id, key], …]}, then serve."""
    from specviz.app.room_routes import ROOMS
    from specviz.engine import Engine
    from specviz.lecture.examples import load_example
    from specviz.view.room import quiz_facts
    from harness.browser import serve_demo
    from harness.tiny_models import char_tokenizer, noisy_copy, tiny_model
    from specviz.app import page, serving

    target = tiny_model(seed=2, layers=2)
    engine = Engine(noisy_copy(target, 0.2), target, char_tokenizer(), "tiny-draft", "tiny-target")
    demo = page.build_demo(lambda preset, progress: engine, {"tiny": "Tiny"}, "tiny")
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                **serving.launch_kwargs())
    trace = load_example("code")
    opened = [ROOMS.store.open(trace.to_json(), quiz_facts(trace)) for _ in range(rooms)]
    print(json.dumps({"rooms": [[o.room, o.key] for o in opened], "pid": os.getpid()}), flush=True)
    del serve_demo
    while True:
        time.sleep(3600)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


# --- the followers and the lecturer -----------------------------------------------------------------------------

async def follow(client, base: str, room: str, seen: dict, wrong: list, connected: asyncio.Event, counter: list,
                 ids: dict, everyone: int):
    """One follower: the page, a join, then the stream; records when each version arrived, and when it first saw
    every follower of its room answered (key (room, "all answered"))."""
    import httpx

    page = await client.get(f"{base}/room/{room}", headers={"Accept-Encoding": "gzip"})
    page.raise_for_status()
    joined = await client.post(f"{base}/room/{room}/join", json={})
    joined.raise_for_status()
    ids.setdefault(room, []).append(joined.json()["follower"])
    async with client.stream("GET", f"{base}/room/{room}/events", timeout=httpx.Timeout(None)) as stream:
        counter[0] += 1
        if counter[0] == counter[1]:
            connected.set()
        async for line in stream.aiter_lines():
            if line.startswith("data:"):
                now, state = time.perf_counter(), json.loads(line[5:])
                if state.get("room") != room:
                    wrong.append(state.get("room"))
                seen.setdefault((state.get("room"), state["version"]), []).append(now)
                if state["answered"] == everyone:
                    seen.setdefault((room, "all answered"), []).append(now)


async def run(base: str, pid: int, rooms: list, followers: int, steps: int, pace: float) -> dict:
    import httpx

    seen: dict = {}
    wrong: list = []
    ids: dict = {}
    connected, counter = asyncio.Event(), [0, len(rooms) * followers]
    before = rss_kib(pid)
    limits = httpx.Limits(max_connections=len(rooms) * followers + 20, max_keepalive_connections=None)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        joined = time.perf_counter()
        tasks = [asyncio.create_task(follow(client, base, room, seen, wrong, connected, counter, ids, followers))
                 for room, _ in rooms for _ in range(followers)]
        await asyncio.wait_for(connected.wait(), 120)
        join_s = time.perf_counter() - joined
        await asyncio.sleep(1.0)
        with_followers = rss_kib(pid)
        delays = []
        for step in range(steps):  # rounds 2, 3, … 2, 3, …: each drive a new version of the room's state
            sent, versions = {}, {}

            async def drive(room, key):
                sent[room] = time.perf_counter()
                r = await client.post(f"{base}/room/{room}/drive", json={"key": key, "round": 2 + step % 10})
                r.raise_for_status()
                versions[room] = r.json()["version"]
            await asyncio.gather(*(drive(room, key) for room, key in rooms))
            await asyncio.sleep(pace)
            for room, _ in rooms:
                got = seen.get((room, versions[room]), [])
                delays += [t - sent[room] for t in got]
                delays += [float("inf")] * (followers - len(got))  # a follower that never saw it
        answers_s = await answer_burst(client, base, rooms, ids, seen, followers, pace)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {"rooms": len(rooms), "followers_per_room": followers, "steps": steps, "join_all_s": round(join_s, 2),
            **delay_figures(delays), "wrong_room": len(wrong), "all_answers_seen_by_all_s": answers_s,
            "rss_per_follower_kib": round((with_followers - before) / (len(rooms) * followers), 1)}


def delay_figures(delays: list[float]) -> dict:
    """Delays in seconds (infinity: a follower that never saw the step) as the report's figures in ms: how many,
    how many missed, median, 95th percentile (nearest rank below), max. tools/room_transport.py reports the same."""
    ordered = sorted(delays)
    return {"delays": len(ordered), "missed": sum(d == float("inf") for d in ordered),
            "median_ms": round(1000 * statistics.median(ordered), 1),
            "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1), "max_ms": round(1000 * ordered[-1], 1)}


async def answer_burst(client, base: str, rooms: list, ids: dict, seen: dict, followers: int, pace: float) -> float:
    """Quiz on, then every follower answers at once: the seconds until the last follower of every room saw all
    of its room's answers counted (each answer is a new version; a slow stream skips to the latest)."""
    for room, key in rooms:
        (await client.post(f"{base}/room/{room}/drive", json={"key": key, "round": 3, "quiz": True})).raise_for_status()
    await asyncio.sleep(pace)
    started = time.perf_counter()
    answers = [client.post(f"{base}/room/{room}/answer", json={"follower": f, "round": 3, "guess": 1})
               for room, _ in rooms for f in ids[room]]
    for r in await asyncio.gather(*answers):
        r.raise_for_status()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(len(seen.get((room, "all answered"), [])) < followers
                                              for room, _ in rooms):
        await asyncio.sleep(0.01)
    last = [max(seen.get((room, "all answered"), [float("inf")])) for room, _ in rooms]
    return round(max(last) - started, 2)


def one_setup(rooms: int, followers: int, steps: int, pace: float) -> dict:
    from harness.browser import free_port

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tools.room_bench", "--serve", str(port), "--rooms", str(rooms)],
                              stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(server.stdout.readline())
        return asyncio.run(asyncio.wait_for(run(f"http://127.0.0.1:{port}", info["pid"], info["rooms"], followers,
                                                steps, pace), MAX_SECONDS))
    finally:
        server.terminate()
        server.wait(30)


def idle_room_bytes(n: int = 20) -> dict:
    """What an idle room holds beyond its trace's JSON, measured with tracemalloc in this process: n rooms opened,
    each joined by no one; then the same with 100 followers joined and answering one round."""
    from specviz.app.room_routes import RoomHub
    from specviz.lecture.examples import load_example
    from specviz.lecture.rooms import RoomStore
    from specviz.view.room import quiz_facts

    trace = load_example("code")
    texts = [trace.to_json() for _ in range(n)]  # made before measuring: the trace is not the room's cost
    hub = RoomHub(RoomStore(max_rooms=n, max_followers=100))
    tracemalloc.start()
    start = tracemalloc.take_snapshot()
    opened = [hub.store.open(text, quiz_facts(trace)) for text in texts]
    for o in opened:
        hub.state(o.room)  # its stream's message, built once per version and kept
    idle = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(start, "filename")) / n
    middle = tracemalloc.take_snapshot()
    o = opened[0]
    hub.store.drive(o.room, o.key, 3, quiz=True)
    for _ in range(100):
        follower = hub.store.join(o.room)[1]
        hub.store.answer(o.room, follower, 3, 1)
    hub.state(o.room)
    full = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(middle, "filename"))
    tracemalloc.stop()
    return {"idle_room_bytes_beyond_trace": round(idle), "trace_json_bytes": len(texts[0]),
            "bytes_per_follower_in_store": round(full / 100)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rooms", type=int)
    parser.add_argument("--followers", type=int)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--pace", type=float, default=1.0, help="seconds between the lecturer's steps")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.rooms)
        return
    setups = [(args.rooms, args.followers)] if args.rooms else [(1, 100), (10, 20)]
    for rooms, followers in setups:
        if rooms * followers > MAX_FOLLOWERS_BENCH:
            parser.error(f"at most {MAX_FOLLOWERS_BENCH} simulated followers")
        print(json.dumps(one_setup(rooms, followers or 20, args.steps, args.pace)), flush=True)
    print(json.dumps(idle_room_bytes()), flush=True)


if __name__ == "__main__":
    main()

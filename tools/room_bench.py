"""Rooms under load: simulated followers over HTTP on loopback (issue 34's figures; a benchmark, not a test).

    python -m tools.room_bench                      # 300 followers in one room, then 3 rooms × 100
    python -m tools.room_bench --rooms 1 --followers 20 --steps 5
    python -m tools.room_bench --sizes              # what a phone downloads: a 64-round trace, joined and followed

The server is the app itself (build_demo on tiny models: a room runs no model) in a process of its own, so its
memory is its own; it opens the rooms on the "code" example at start and prints their ids and keys. The load
generator is one asyncio process speaking raw HTTP/1.0 over asyncio streams (no HTTP client library: 300 gradio
Clients in threads, or even one httpx client per stream, would load the 2 cores more than the server does). Every
follower arrives in one burst: it gets the page (gzipped), joins, and reads the room's server-sent stream; the burst
is timed until the last follower has the room's state. The lecturer of each room then drives `--steps` changes,
every room at the same moment, one every `--pace` seconds, alternately the next round and its first reveal step;
each follower records when it saw each new version. Reported: the burst's seconds, the delay from the lecturer's
request to each follower's copy of each change (median, 95th percentile, max, missed), messages seen in the wrong
room, the server's resident memory per follower (connected streams) and, measured in-process with tracemalloc, what
an idle room holds beyond its trace. Bounded: at most MAX_FOLLOWERS_BENCH followers, MAX_SECONDS, loopback only.

`--processes N --store redis://HOST:PORT/DB` (issue 63): N room servers (the rooms' routes alone, no model:
harness/room_processes.py) on one Redis, the rooms opened from this process, the followers spread round-robin over
the servers, the lecturer driving through the first. Reported: the burst's seconds, each step's delay (median, 95th
percentile, max, missed; a follower has a step once it has that state or a later one, as a stream sends the
latest), each server's resident memory; with `--kill`, the last server is killed (SIGKILL) half way through the
steps and its followers come back through another as a browser's EventSource does (after the `retry` the stream
sent, the stream again with their ids and last versions): the seconds until each had the room's state again
(median, max), and the steps after it. Bounded: at most MAX_FOLLOWERS_SPREAD followers.

`--sizes` measures what one phone downloads for a long lecture (issue 44), on the rooms' routes alone in this
process: a real 64-round trace of the tiny pair (harness/room_pages.long_trace) and a 64-round trace made of the
"paris" example's rounds over and over (its rounds are the largest shipped). The lecture: each round with quiz mode
on, then revealed step by step. Reported: the page a phone downloads to join (gzipped, as sent) at the start, half
way and at the end; the old page (every round in full, as before issue 44) for comparison; and the stream's bytes
per step (each state with the sections that changed, gzipped as a browser gets it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import tracemalloc

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

MAX_FOLLOWERS_BENCH = 300  # the most this script simulates (rooms × followers): bounded, loopback only
MAX_SECONDS = 600  # and the longest it runs
MAX_FOLLOWERS_SPREAD = 1200  # followers over several processes (`--processes`): a hall of 1,000 and some


# --- the server process ---------------------------------------------------------------------------------------

def serve(port: int, rooms: int) -> None:
    """Serve the app with `rooms` rooms open; print one JSON line {"rooms": [[id, key], …]}, then serve."""
    from specviz.app.room_hub import ROOMS
    from specviz.engine import Engine
    from specviz.lecture.examples import load_example
    from specviz.lecture.room_trace import quiz_facts
    from harness.browser import serve_demo
    from harness.tiny_models import char_tokenizer, noisy_copy, tiny_model
    from specviz.app import page, serving

    target = tiny_model(seed=2, layers=2)
    engine = Engine(noisy_copy(target, 0.2), target, char_tokenizer(), "tiny-draft", "tiny-target")
    demo = page.build_demo(lambda preset, progress: engine, {"tiny": "Tiny"}, "tiny")
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                **serving.launch_kwargs())
    trace = load_example("code")
    opened = [ROOMS.rooms.open(trace.to_json(), quiz_facts(trace)) for _ in range(rooms)]
    print(json.dumps({"rooms": [[o.room, o.key, o.trace] for o in opened], "pid": os.getpid()}), flush=True)
    del serve_demo
    while True:
        time.sleep(3600)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


# --- raw HTTP/1.0 on loopback ----------------------------------------------------------------------------------

async def http(port: int, method: str, path: str, body: dict | None = None, gzip_ok: bool = False):
    """One request, the connection closed after it: -> (status, body bytes)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: {len(data)}\r\n"
    head += "Content-Type: application/json\r\n" if body is not None else ""
    head += "Accept-Encoding: gzip\r\n" if gzip_ok else ""
    writer.write(head.encode() + b"\r\n" + data)
    response = await reader.read()
    writer.close()
    status = int(response.split(b" ", 2)[1])
    return status, response.split(b"\r\n\r\n", 1)[1]


async def follow(port: int, room: str, seen: dict, wrong: list, arrived: list, ids: dict, everyone: int):
    """One follower: the page, a join, then the stream (HTTP/1.0: no chunking, lines as sent); records when it
    first had the room's state, when each version arrived, and when it first saw all of its room answered."""
    status, _ = await http(port, "GET", f"/room/{room}", gzip_ok=True)
    assert status == 200, status
    status, body = await http(port, "POST", f"/room/{room}/join", {})
    assert status == 200, body
    follower = json.loads(body)["follower"]
    ids.setdefault(room, []).append(follower)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /room/{room}/events?follower={follower} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
    try:
        while (line := await reader.readline()) not in (b"\r\n", b""):
            pass
        first = True
        while line := await reader.readline():
            if not line.startswith(b"data:"):
                continue
            now, state = time.perf_counter(), json.loads(line[5:])
            if first:
                arrived.append(now)
                first = False
            if state.get("room") != room:
                wrong.append(state.get("room"))
            seen.setdefault((state.get("room"), state["version"]), []).append(now)
            if state["answered"] == everyone:
                seen.setdefault((room, "all answered"), []).append(now)
    finally:
        writer.close()


# --- the followers and the lecturer -----------------------------------------------------------------------------

async def run(port: int, pid: int, rooms: list, followers: int, steps: int, pace: float) -> dict:
    seen, wrong, arrived, ids = {}, [], [], {}
    total = len(rooms) * followers
    before = rss_kib(pid)
    started = time.perf_counter()
    tasks = [asyncio.create_task(follow(port, room, seen, wrong, arrived, ids, followers))
             for room, _, _ in rooms for _ in range(followers)]
    while len(arrived) < total and time.perf_counter() - started < 120:
        failed = [t for t in tasks if t.done() and t.exception()]
        if failed:
            raise failed[0].exception()
        await asyncio.sleep(0.01)
    burst_s = max(arrived) - started if len(arrived) == total else float("inf")
    await asyncio.sleep(1.0)
    with_followers = rss_kib(pid)
    delays = []
    for step in range(steps):  # round 2, its first reveal, round 3, its first reveal, …: each a new version
        sent, versions = {}, {}
        change = {"round": 2 + (step // 2) % 10, "step": step % 2}

        async def drive(room, key, trace):
            sent[room] = time.perf_counter()
            status, body = await http(port, "POST", f"/room/{room}/drive", {"key": key, "trace": trace, **change})
            assert status == 200, body
            versions[room] = json.loads(body)["version"]
        await asyncio.gather(*(drive(room, key, trace) for room, key, trace in rooms))
        await asyncio.sleep(pace)
        for room, _, _ in rooms:
            got = seen.get((room, versions[room]), [])
            delays += [t - sent[room] for t in got]
            delays += [float("inf")] * (followers - len(got))  # a follower that never saw it
    answers_s = await answer_burst(port, rooms, ids, seen, followers, pace)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"rooms": len(rooms), "followers_per_room": followers, "steps": steps,
            "burst_all_in_s": round(burst_s, 2), **delay_figures(delays), "wrong_room": len(wrong),
            "all_answers_seen_by_all_s": answers_s,
            "rss_per_follower_kib": round((with_followers - before) / total, 1)}


def delay_figures(delays: list[float]) -> dict:
    """Delays in seconds (infinity: a follower that never saw the step) as the report's figures in ms: how many,
    how many missed, median, 95th percentile (nearest rank below), max. tools/room_transport.py reports the same."""
    ordered = sorted(delays)
    return {"delays": len(ordered), "missed": sum(d == float("inf") for d in ordered),
            "median_ms": round(1000 * statistics.median(ordered), 1),
            "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1), "max_ms": round(1000 * ordered[-1], 1)}


async def answer_burst(port: int, rooms: list, ids: dict, seen: dict, followers: int, pace: float) -> float:
    """Quiz on at round 13 (past every round the steps revealed), then every follower answers at once: the seconds
    until the last follower of every room saw all of its room's answers counted (each answer is a new version; a
    slow stream skips to the latest)."""
    for room, key, trace in rooms:
        status, body = await http(port, "POST", f"/room/{room}/drive", {"key": key, "trace": trace, "round": 13,
                                                                         "quiz": True})
        assert status == 200, body
    await asyncio.sleep(pace)
    started = time.perf_counter()
    answers = [http(port, "POST", f"/room/{room}/answer", {"follower": f, "round": 13, "guess": 0})
               for room, _, _ in rooms for f in ids[room]]
    for status, body in await asyncio.gather(*answers):
        assert status == 200, body
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(len(seen.get((room, "all answered"), [])) < followers
                                              for room, _, _ in rooms):
        await asyncio.sleep(0.01)
    last = [max(seen.get((room, "all answered"), [float("inf")])) for room, _, _ in rooms]
    return round(max(last) - started, 2)


def one_setup(rooms: int, followers: int, steps: int, pace: float) -> dict:
    from harness.browser import free_port

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tools.room_bench", "--serve", str(port), "--rooms", str(rooms)],
                              stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(server.stdout.readline())
        return asyncio.run(asyncio.wait_for(run(port, info["pid"], info["rooms"], followers, steps, pace),
                                            MAX_SECONDS))
    finally:
        server.terminate()
        server.wait(30)


def idle_room_bytes(n: int = 20) -> dict:
    """What an idle room holds beyond its trace's JSON, measured with tracemalloc in this process: n rooms opened,
    each joined by no one; then the same with 100 followers joined and answering one round."""
    from specviz.app.room_hub import RoomHub
    from specviz.lecture.examples import load_example
    from specviz.lecture.rooms import Rooms
    from specviz.lecture.room_trace import quiz_facts

    trace = load_example("code")
    texts = [trace.to_json() for _ in range(n)]  # made before measuring: the trace is not the room's cost
    hub = RoomHub(Rooms(max_rooms=n, max_followers=100))
    tracemalloc.start()
    start = tracemalloc.take_snapshot()
    opened = [hub.rooms.open(text, quiz_facts(trace)) for text in texts]
    for o in opened:
        hub.state(o.room)  # its stream's message, built once per version and kept
    idle = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(start, "filename")) / n
    middle = tracemalloc.take_snapshot()
    o = opened[0]
    hub.rooms.drive(o.room, o.key, 3, quiz=True, trace=o.trace)
    for _ in range(100):
        follower = hub.rooms.join(o.room)[1]
        hub.rooms.answer(o.room, follower, 3, 1)
    hub.state(o.room)
    full = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(middle, "filename"))
    tracemalloc.stop()
    return {"idle_room_bytes_beyond_trace": round(idle), "trace_json_bytes": len(texts[0]),
            "bytes_per_follower_in_store": round(full / 100)}


def repeated(trace, rounds: int):
    """`trace` made `rounds` rounds long by taking its rounds over and over (each renumbered): a long lecture whose
    rounds are as large as the trace's."""
    import dataclasses

    from specviz.record.stats import summarize

    made = [dataclasses.replace(trace.rounds[i % len(trace.rounds)], index=i) for i in range(rounds)]
    made = [dataclasses.replace(r, stop=None) for r in made[:-1]] + made[-1:]
    return dataclasses.replace(trace, rounds=made, summary=summarize(made, trace.summary.total_time_s),
                               output_token_ids=[t for r in made for t in r.committed_ids], baseline=None)


# --- several processes on one Redis (issue 63) ------------------------------------------------------------------

async def follow_spread(ports: list, alive: list, i: int, room: str, seen: dict, arrived: list, back: list,
                        killed: list) -> None:
    """Follower `i` of `room` through server i mod N, each state it gets in seen[room, i] as (version, when); when its stream is cut (its server killed) it does what a
    browser's EventSource does: waits the `retry` the stream sent, then opens the stream again with its id and the
    last version it had, here through the next server alive (a proxy's next upstream), and records the seconds from
    the kill to its first state there."""
    port = ports[i % len(ports)]
    status, _ = await http(port, "GET", f"/room/{room}", gzip_ok=True)
    status, body = await http(port, "POST", f"/room/{room}/join", {})
    assert status == 200, body
    follower, since, first, returned, retry_s = json.loads(body)["follower"], 0, True, False, 3.0
    while True:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /room/{room}/events?follower={follower} HTTP/1.0\r\nLast-Event-ID: {since}\r\n\r\n"
                     .encode())
        try:
            while (line := await reader.readline()) not in (b"\r\n", b""):
                pass
            while line := await reader.readline():
                if line.startswith(b"retry:"):
                    retry_s = int(line[6:]) / 1000
                elif line.startswith(b"event: closed"):
                    raise RuntimeError(f"follower {follower} refused: {await reader.readline()!r}")
                elif line.startswith(b"data:"):
                    now, state = time.perf_counter(), json.loads(line[5:])
                    since = state["version"]
                    if first:
                        arrived.append(now)
                        first = False
                    if returned:
                        back.append(now - killed[0])
                        returned = False
                    seen.setdefault((room, i), []).append((state["version"], now))
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
        await asyncio.sleep(retry_s)
        port = next(p for p in ports[i % len(ports):] + ports if p in alive)  # the next server alive
        returned = True


async def run_spread(ports: list, pids: list, rooms: list, followers: int, steps: int, pace: float,
                     kill) -> dict:
    seen, arrived, back, killed, alive = {}, [], [], [], list(ports)
    started = time.perf_counter()
    tasks = [asyncio.create_task(follow_spread(ports, alive, i, room, seen, arrived, back, killed))
             for n, (room, _, _) in enumerate(rooms) for i in range(n * followers, (n + 1) * followers)]
    total = len(tasks)
    while len(arrived) < total and time.perf_counter() - started < 120:
        failed = [t for t in tasks if t.done() and t.exception()]
        if failed:
            raise failed[0].exception()
        await asyncio.sleep(0.01)
    burst_s = max(arrived) - started if len(arrived) >= total else float("inf")
    await asyncio.sleep(1.0)
    memory = [round(rss_kib(pid) / 1024, 1) for pid in pids]
    before, after = [], []
    for step in range(steps):
        if kill is not None and step == steps // 2:
            alive.remove(ports[-1])
            killed.append(time.perf_counter())
            kill()
            await asyncio.sleep(pace)
        sent, versions = {}, {}
        change = {"round": 2 + (step // 2) % 10, "step": step % 2}

        async def drive(room, key, trace):
            sent[room] = time.perf_counter()
            status, body = await http(ports[0], "POST", f"/room/{room}/drive", {"key": key, "trace": trace, **change})
            assert status == 200, body
            versions[room] = json.loads(body)["version"]
        await asyncio.gather(*(drive(room, key, trace) for room, key, trace in rooms))
        await asyncio.sleep(pace)
        delays = after if killed else before
        for n, (room, _, _) in enumerate(rooms):
            delays += [step_seen(seen.get((room, i), []), versions[room]) - sent[room]
                       for i in range(n * followers, (n + 1) * followers)]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    report = {"processes": len(ports), "rooms": len(rooms), "followers": total, "burst_all_in_s": round(burst_s, 2),
              "rss_mib_per_process": memory, **delay_figures(before)}
    if killed:
        report["after_kill"] = {"followers_moved": len(back), "back_median_s": round(statistics.median(back), 2)
                                if back else None, "back_max_s": round(max(back), 2) if back else None,
                                **delay_figures(after)}
    return report


def step_seen(heard: list, version: int) -> float:
    """When a follower first had a state of `version` or later (a stream sends the latest: a later state holds the
    step too); infinity if never."""
    return next((t for v, t in heard if v >= version), float("inf"))


def spread_setup(store: str, processes: int, rooms: int, followers: int, steps: int, pace: float,
                 kill: bool) -> dict:
    """`processes` room servers on the Redis at `store`, `rooms` rooms of the "code" example opened here."""
    from contextlib import ExitStack

    from harness.room_processes import room_process
    from specviz.lecture.examples import load_example
    from specviz.lecture.room_redis import RedisStore
    from specviz.lecture.room_trace import quiz_facts
    from specviz.lecture.rooms import Rooms

    trace = load_example("code")
    lecturer = Rooms(RedisStore(store))
    opened = [lecturer.open(trace.to_json(), quiz_facts(trace)) for _ in range(rooms)]
    with ExitStack() as servers:
        started = [servers.enter_context(room_process(store)) for _ in range(processes)]
        ports = [int(base.rsplit(":", 1)[1]) for base, _ in started]
        last = started[-1][1]
        return asyncio.run(asyncio.wait_for(run_spread(
            ports, [p.pid for _, p in started], [[o.room, o.key, o.trace] for o in opened], followers, steps, pace,
            (lambda: last.send_signal(signal.SIGKILL)) if kill else None), MAX_SECONDS))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rooms", type=int)
    parser.add_argument("--followers", type=int)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--pace", type=float, default=1.0, help="seconds between the lecturer's steps")
    parser.add_argument("--sizes", action="store_true", help="what a phone downloads for a 64-round trace")
    parser.add_argument("--processes", type=int, help="room servers on one Redis (with --store)")
    parser.add_argument("--store", help="the Redis they share: redis://HOST:PORT/DB (loopback)")
    parser.add_argument("--kill", action="store_true", help="kill the last server half way (with --processes)")
    args = parser.parse_args(argv)
    if args.processes:
        rooms, followers = args.rooms or 4, args.followers or 250
        if not args.store or not args.store.startswith("redis://127.0.0.1:"):
            parser.error("--processes needs --store redis://127.0.0.1:PORT/DB (loopback only)")
        if rooms * followers > MAX_FOLLOWERS_SPREAD or not 1 <= args.processes <= 8:
            parser.error(f"at most {MAX_FOLLOWERS_SPREAD} followers and 8 processes")
        print(json.dumps(spread_setup(args.store, args.processes, rooms, followers, args.steps, args.pace,
                                      args.kill)), flush=True)
        return
    if args.serve:
        serve(args.serve, args.rooms)
        return
    if args.sizes:
        from harness.room_pages import LONG_ROUNDS, long_trace, sizes
        from specviz.lecture.examples import load_example

        for name, trace in (("tiny pair, a real run", long_trace()),
                            ("paris example's rounds, repeated", repeated(load_example("paris"), LONG_ROUNDS))):
            print(json.dumps({"trace": name, **sizes(trace)}), flush=True)
        return
    setups = [(args.rooms, args.followers)] if args.rooms else [(1, 300), (3, 100)]
    for rooms, followers in setups:
        if rooms * followers > MAX_FOLLOWERS_BENCH:
            parser.error(f"at most {MAX_FOLLOWERS_BENCH} simulated followers")
        print(json.dumps(one_setup(rooms, followers or 20, args.steps, args.pace)), flush=True)
    print(json.dumps(idle_room_bytes()), flush=True)


if __name__ == "__main__":
    main()

"""How followers could receive a lecturer's steps, measured on loopback: Gradio's own streaming events (what the
rooms would be without a route of their own) against the rooms' server-sent route (tools/room_bench.py).

    python -m tools.room_transport --followers 100 --steps 20

The server is a minimal Gradio app in a process of its own: a `follow` event per follower, an async generator that
waits on an asyncio.Condition and yields each new version (it holds no thread; concurrency_limit=None), and a
`step` event that bumps the version. The followers are one asyncio process speaking Gradio's queue protocol
(POST gradio_api/queue/join, then the session's stream gradio_api/queue/data): 100 gradio_client Clients in threads
would load this 2-core machine more than the server. The lecturer's step goes through the queue too (a join, then
its completion), as a page's button would. Reported as room_bench reports: the delay from the step's request to
each follower's copy (median, 95th percentile, max), and the server's resident memory per follower.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import uuid

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from tools.room_bench import delay_figures, rss_kib  # noqa: E402 - the same figures, measured the same way

MAX_FOLLOWERS = 300  # bounded: loopback only


def serve(port: int, max_threads: int) -> None:
    import gradio as gr

    version = {"v": 0}
    changed = asyncio.Condition()

    async def follow():
        seen = -1
        while True:
            async with changed:
                await changed.wait_for(lambda: version["v"] != seen)
                seen = version["v"]
            yield seen

    async def step():
        async with changed:
            version["v"] += 1
            changed.notify_all()
        return version["v"]

    with gr.Blocks() as demo:
        shown, stepped = gr.Number(), gr.Number()
        gr.Button("follow").click(follow, None, shown, api_name="follow", concurrency_limit=None)
        gr.Button("step").click(step, None, stepped, api_name="step", concurrency_limit=None)
    demo.queue(default_concurrency_limit=None)
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                max_threads=max_threads)
    print(json.dumps({"pid": os.getpid()}), flush=True)
    while True:
        time.sleep(3600)


async def join(client, base: str, fn_index: int, session: str) -> None:
    r = await client.post(f"{base}/gradio_api/queue/join", json={"data": [], "fn_index": fn_index,
                                                                   "session_hash": session, "event_data": None,
                                                                   "trigger_id": None})
    r.raise_for_status()


async def messages(client, base: str, session: str):
    import httpx

    async with client.stream("GET", f"{base}/gradio_api/queue/data", params={"session_hash": session},
                             timeout=httpx.Timeout(None)) as stream:
        async for line in stream.aiter_lines():
            if line.startswith("data:"):
                yield json.loads(line[5:])


async def follower(client, base: str, seen: dict, connected: list, all_in: asyncio.Event) -> None:
    session = uuid.uuid4().hex[:11]
    await join(client, base, 0, session)
    async for msg in messages(client, base, session):
        if msg.get("msg") in ("process_generating", "process_starts"):
            if msg.get("msg") == "process_starts":
                connected[0] += 1
                if connected[0] == connected[1]:
                    all_in.set()
                continue
            value = msg["output"]["data"][0]
            if isinstance(value, list):  # after the first yield Gradio sends diffs: [["replace", [], value]]
                value = value[-1][-1]
            seen.setdefault(value, []).append(time.perf_counter())


async def step(client, base: str) -> int:
    session = uuid.uuid4().hex[:11]
    await join(client, base, 1, session)  # joined first: the session's stream answers 404 before (as the client does)
    async for msg in messages(client, base, session):
        if msg.get("msg") == "process_completed":
            return int(msg["output"]["data"][0])
    raise RuntimeError("the step's stream ended without its result")


async def run(base: str, pid: int, followers: int, steps: int, pace: float) -> dict:
    import httpx

    seen, connected, all_in = {}, [0, followers], asyncio.Event()
    before = rss_kib(pid)
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=followers * 2 + 20), timeout=30) as client:
        tasks = [asyncio.create_task(follower(client, base, seen, connected, all_in)) for _ in range(followers)]
        try:
            await asyncio.wait_for(all_in.wait(), 60)
        except asyncio.TimeoutError:
            raise SystemExit(f"only {connected[0]} of {followers} followers' events started within 60 s") from None
        await asyncio.sleep(1.0)
        after = rss_kib(pid)
        delays = []
        for _ in range(steps):
            sent = time.perf_counter()
            v = await step(client, base)
            await asyncio.sleep(pace)
            got = seen.get(v, [])
            delays += [t - sent for t in got] + [float("inf")] * (followers - len(got))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {"transport": "gradio streaming event", "followers": followers, "steps": steps, **delay_figures(delays),
            "rss_per_follower_kib": round((after - before) / followers, 1)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--followers", type=int, default=100)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--pace", type=float, default=1.0)
    parser.add_argument("--max-threads", type=int, default=40,
                        help="Gradio's launch(max_threads=): its default 40 also caps the events running at once, "
                             "async generators included, so the 41st follower waits in the queue")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.max_threads)
        return
    if not 1 <= args.followers <= MAX_FOLLOWERS:
        parser.error(f"--followers must be 1 to {MAX_FOLLOWERS}")
    from harness.browser import free_port

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tools.room_transport", "--serve", str(port),
                               "--max-threads", str(args.max_threads)],
                              stdout=subprocess.PIPE, text=True)
    try:
        pid = json.loads(server.stdout.readline())["pid"]
        print(json.dumps(asyncio.run(asyncio.wait_for(run(f"http://127.0.0.1:{port}", pid, args.followers,
                                                              args.steps, args.pace), 600))), flush=True)
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()

"""Rooms across processes (issue 63): a real `redis-server` on a free loopback port, and room servers, each a process
of its own serving the rooms' routes alone (no Gradio page, no model) on a store SPECVIZ_ROOMS names. The tests of
stores that outlive or span processes (tests/lecture/test_room_stores.py, tests/app/test_room_processes.py) and
tools/room_bench.py's `--processes` drive them; every process is on 127.0.0.1 and ended by the one that started it.

    with redis_server() as url:                            # redis://127.0.0.1:PORT/0, nothing saved to disk
        with room_process(url) as (base, process):         # http://127.0.0.1:PORT, the rooms' routes on Redis
            ...

    python -m harness.room_processes PORT SETTING          # a room server (what room_process starts)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"  # Debian's package `redis-server`
START_S = 30.0  # the longest a server may take to answer (a busy machine's imports)


def wait_for(ready, what: str, seconds: float = START_S) -> None:
    """Poll `ready()` until true; RuntimeError naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start within {seconds:g} s")
        time.sleep(0.02)


@contextmanager
def redis_server(port: int | None = None):
    """A real Redis on `port` (a free one if None), saving nothing; -> its url. Ended (SIGTERM) on leaving."""
    import redis

    from harness.browser import free_port

    port = port or free_port()
    server = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url, socket_connect_timeout=0.2)

    def answers() -> bool:
        if server.poll() is not None:
            raise RuntimeError(f"redis-server exited with {server.returncode} (port {port} taken?)")
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
    try:
        wait_for(answers, "redis-server")
        yield url
    finally:
        client.close()
        server.terminate()
        server.wait(10)


@contextmanager
def room_process(setting: str, port: int | None = None):
    """A room server on `setting` (lecture/room_setting.py's forms) at `port` (a free one if None), in a process of
    its own; -> (its base url, its Popen). Ended (SIGTERM, or SIGKILL if it lingers) on leaving, unless gone."""
    import httpx

    from harness.browser import free_port

    port = port or free_port()
    process = subprocess.Popen([sys.executable, "-m", "harness.room_processes", str(port), setting],
                               cwd=Path(__file__).resolve().parent.parent)
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the room server exited with {process.returncode}")
        try:
            return httpx.get(f"{base}/room", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False
    try:
        wait_for(answers, f"the room server on {setting}")
        yield base, process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def serve(port: int, setting: str) -> None:
    """Serve the rooms' routes on `setting` at 127.0.0.1:`port` until ended (the disk store's default file in a
    temporary folder: a test never writes the cache folder)."""
    import uvicorn
    from starlette.applications import Starlette

    from specviz.app.room_hub import RoomHub
    from specviz.app.room_routes import room_routes
    from specviz.lecture.room_setting import store_named
    from specviz.lecture.rooms import Rooms

    hub = RoomHub(Rooms(store_named(setting, Path(tempfile.gettempdir()))))
    uvicorn.run(Starlette(routes=room_routes(hub)), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    serve(int(sys.argv[1]), sys.argv[2])

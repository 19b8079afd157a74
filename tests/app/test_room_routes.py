"""The rooms' routes over real HTTP (specviz/app/room_routes.py), on a small server of their own so that the bounds
can be small: every bad request gets a clear message and a status, and the room goes on; the stream sends each
change once, never a follower's id, and says when a room has closed."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette

from specviz.app.room_routes import MAX_BODY, RoomHub, room_routes
from specviz.lecture.examples import load_example
from specviz.lecture.rooms import MISSES_ALLOWED, RoomStore
from specviz.view.room import quiz_facts
from harness.browser import free_port


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture(scope="module")
def server():
    """(hub, base url): the routes alone on a loopback port, 3 followers a room, 2 rooms, an hour's idle."""
    hub = RoomHub(RoomStore(max_rooms=2, max_followers=3, idle_s=3600, clock=Clock()))
    port = free_port()
    config = uvicorn.Config(Starlette(routes=room_routes(hub)), host="127.0.0.1", port=port, log_level="warning")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield hub, f"http://127.0.0.1:{port}"
    uv.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def paris():
    return load_example("paris")


@pytest.fixture
def room(server, paris):
    hub, _ = server
    for closed in list(hub.store._rooms):  # each test its own room, within the server's two
        hub.store._rooms.pop(closed)
    hub.store._codes.clear()
    return hub.store.open(paris.to_json(), quiz_facts(paris))


@pytest.fixture
def http(server):
    with httpx.Client(base_url=server[1], timeout=20) as client:
        yield client


def test_a_follower_joins_answers_once_and_the_lecturer_alone_drives(http, room):
    page = http.get(f"/room/{room.room}")
    assert page.status_code == 200 and "sv-follower" in page.text and 'data-round="1"' in page.text
    assert room.key not in page.text  # the follower's page never carries the lecturer's key
    follower = http.post(f"/room/{room.room}/join", json={}).json()["follower"]
    assert http.post(f"/room/{room.room}/drive", json={"round": 3}).json()["error"].startswith("only the lecturer")
    assert http.post(f"/room/{room.room}/drive", json={"key": room.key, "round": 3, "quiz": True}).status_code == 200
    most = quiz_facts(load_example("paris")).rounds[2].most
    ok = http.post(f"/room/{room.room}/answer", json={"follower": follower, "round": 3, "guess": most})
    assert ok.json() == {"answers": {"3": most}}
    again = http.post(f"/room/{room.room}/answer", json={"follower": follower, "round": 3, "guess": 0})
    assert again.status_code == 409 and "answered round 3 already" in again.json()["error"]
    past = http.post(f"/room/{room.room}/answer", json={"follower": follower, "round": 3, "guess": most + 1})
    assert past.status_code == 400 and f"from 0 to {most}" in past.json()["error"]
    rejoined = http.post(f"/room/{room.room}/join", json={"follower": follower}).json()
    assert rejoined == {"follower": follower, "answers": {"3": most}}  # a reconnect keeps the answer


@pytest.mark.parametrize("body, status, message", [
    (b"not json", 400, "not JSON"), (b"[1, 2]", 400, "JSON object"), (b"x" * (MAX_BODY + 1), 413, "at most"),
    (json.dumps({"key": "forged", "round": 1}).encode(), 403, "only the lecturer"),
    (json.dumps({"round": 2, "step": 99}).encode(), 403, "only the lecturer"),  # the key is checked first
])
def test_bad_requests_get_a_message_and_the_room_goes_on(http, room, body, status, message):
    answer = http.post(f"/room/{room.room}/drive", content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == status and message in answer.json()["error"]
    assert http.post(f"/room/{room.room}/drive", json={"key": room.key, "round": 2}).status_code == 200


def test_unknown_full_and_guessed_rooms_say_so(server, http, room):
    hub, _ = server
    missing = http.get("/room/no-such-room")
    assert missing.status_code == 404 and "does not exist or has closed" in missing.text
    assert http.post("/room/no-such-room/join", json={}).status_code == 404  # a miss, counted below
    for _ in range(3):
        http.post(f"/room/{room.room}/join", json={})
    full = http.post(f"/room/{room.room}/join", json={})
    assert full.status_code == 503 and "this room is full" in full.json()["error"]
    found = http.get(f"/room?code={room.code.lower()}", follow_redirects=False)
    assert found.status_code == 303 and found.headers["location"] == f"room/{room.room}"
    for _ in range(MISSES_ALLOWED - 1):
        assert http.get("/room?code=ZZZZZZ").status_code == 404
    limited = http.get("/room?code=ZZZZZY")
    assert limited.status_code == 429 and "too many unknown codes" in limited.text
    assert "<script" not in http.get("/room?code=<script>x").text  # what was typed comes back escaped
    assert http.post(f"/room/{room.room}/drive", json={"key": room.key, "round": 2}).status_code == 200
    hub.store._misses.clear(), hub.store._misses_all.clear()


def read_events(url: str, n: int, seen: list, ready: threading.Event) -> None:
    """Read `n` data messages (or a closed event) from a room's stream into `seen`."""
    with httpx.stream("GET", url, timeout=30) as stream:
        ready.set()
        event = ""
        for line in stream.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                seen.append((event or "message", json.loads(line[5:])))
                if event == "closed" or len(seen) >= n:
                    return


def test_the_stream_sends_each_change_counts_only_and_says_when_the_room_closes(server, http, room):
    hub, base = server
    alice = http.post(f"/room/{room.room}/join", json={}).json()["follower"]
    bob = http.post(f"/room/{room.room}/join", json={}).json()["follower"]
    seen, ready = [], threading.Event()
    reader = threading.Thread(target=read_events, args=(f"{base}/room/{room.room}/events", 4, seen, ready))
    reader.start()
    ready.wait(20)
    deadline = time.monotonic() + 20
    while not seen and time.monotonic() < deadline:  # the state on connecting
        time.sleep(0.02)
    http.post(f"/room/{room.room}/drive", json={"key": room.key, "round": 2, "quiz": True})
    http.post(f"/room/{room.room}/answer", json={"follower": alice, "round": 2, "guess": 0})
    deadline = time.monotonic() + 20
    while not any(kind == "message" and data["answered"] == 1 for kind, data in list(seen)) \
            and time.monotonic() < deadline:  # the answer's state has reached the stream
        time.sleep(0.02)
    hub.store.clock.now += 3601  # the room idles past its hour
    hub.ring(room.room)
    reader.join(30)
    kinds = [kind for kind, _ in seen]
    assert kinds[-1] == "closed" and "does not exist or has closed" in seen[-1][1]["error"]
    states = [data for kind, data in seen if kind == "message"]
    assert states[-1]["round"] == 2 and states[-1]["quiz"] and states[-1]["answered"] == 1
    assert all(alice not in json.dumps(s) and bob not in json.dumps(s) for s in states)  # ids never broadcast
    assert http.get(f"/room/{room.room}/events").status_code == 404

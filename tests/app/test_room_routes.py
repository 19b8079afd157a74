"""The rooms' routes over real HTTP (specviz/app/room_routes.py), on a small server of their own so that the bounds
can be small: every bad request gets a clear message and a status, and the room goes on; the stream sends each
change once, never a follower's id, and says when a room has closed."""

from __future__ import annotations

import csv
import json
import threading
import time

import httpx
import pytest

from specviz.app.room_hub import RoomHub
from specviz.app.room_routes import MAX_BODY
from specviz.lecture.examples import load_example
from specviz.lecture.room_codes import CODE_ALPHABET, with_check
from specviz.lecture.code_guesses import MISSES_ALLOWED, Guesses
from specviz.lecture.rooms import Rooms
from specviz.lecture.seats import GRACE_S
from specviz.lecture.room_trace import quiz_facts, trace_title
from harness.room_pages import room_server
from tests.helpers import Clock, room_store


@pytest.fixture(scope="module", params=["memory", "redis"])
def server(request):
    """(hub, base url): the routes alone on a loopback port, 3 followers a room, 2 rooms, an hour's idle; the rooms
    in memory, then in the run's Redis (every refusal the same, whatever the store)."""
    hub = RoomHub(Rooms(room_store(request.param, request, None), max_rooms=2, max_followers=3, idle_s=3600,
                        clock=Clock()))
    with room_server(hub) as url:
        yield hub, url


@pytest.fixture(scope="module")
def paris():
    return load_example("paris")


@pytest.fixture
def room(server, paris):
    hub, _ = server
    for closed in open_rooms(hub.rooms.store):  # each test its own room, within the server's two
        hub.rooms.close(closed)
    return hub.rooms.open(paris.to_json(), quiz_facts(paris))


def open_rooms(store) -> list[str]:
    """The ids of every room a store holds (a MemoryStore's dict, or a RedisStore's sorted set of rooms)."""
    return list(store._rooms) if hasattr(store, "_rooms") else store.redis.zrange(store._key("rooms"), 0, -1)


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
    assert http.post(f"/room/{room.room}/drive", json={"key": room.key, "trace": room.trace, "round": 3, "quiz": True}).status_code == 200
    most = quiz_facts(load_example("paris")).rounds[2].most
    ok = http.post(f"/room/{room.room}/answer", json={"follower": follower, "round": 3, "guess": most})
    assert ok.json() == {"answers": {"3": most}}
    again = http.post(f"/room/{room.room}/answer", json={"follower": follower, "round": 3, "guess": 0})
    assert again.json() == {"answers": {"3": 0}}  # changed before the first reveal: the latest counts
    past = http.post(f"/room/{room.room}/answer", json={"follower": follower, "round": 3, "guess": most + 1})
    assert past.status_code == 400 and f"from 0 to {most}" in past.json()["error"]
    rejoined = http.post(f"/room/{room.room}/join", json={"follower": follower}).json()
    assert rejoined == {"follower": follower, "answers": {"3": 0}}  # a reconnect keeps the answer
    http.post(f"/room/{room.room}/drive", json={"key": room.key, "trace": room.trace, "round": 3, "step": 1})
    late = http.post(f"/room/{room.room}/answer", json={"follower": follower, "round": 3, "guess": 1})
    assert late.status_code == 409 and "closed when the lecturer began revealing" in late.json()["error"]


@pytest.mark.parametrize("body, status, message", [
    (b"not json", 400, "not JSON"), (b"[1, 2]", 400, "JSON object"), (b"x" * (MAX_BODY + 1), 413, "at most"),
    (json.dumps({"key": "forged", "round": 1}).encode(), 403, "only the lecturer"),
    (json.dumps({"round": 2, "step": 99}).encode(), 403, "only the lecturer"),  # the key is checked first
    (b'{"key": "%s", "trace": "%t", "round": 2, "quiz": "false"}', 400, "quiz must be true or false"),
    (b'{"key": "%s", "trace": "%t", "round": 2, "leading": 0}', 400, "leading must be true or false"),
    (b'{"key": "%s", "trace": "%t", "round": "2"}', 400, "whole number"),
    (b'{"key": "%s", "trace": "%t", "round": 2.5}', 400, "whole number"),
    (b'{"key": "%s", "round": 2}', 400, "must name the trace its page shows"),
    (b'{"key": "%s", "trace": 7, "round": 2}', 400, "must name the trace its page shows"),
    (b'{"key": "%s", "trace": ["%t"], "round": 2}', 400, "must name the trace its page shows"),
    (b'{"key": "%s", "trace": "0123456789abcdef", "round": 2}', 409, "not on the trace this page shows"),
])
def test_bad_requests_get_a_message_and_the_room_goes_on(http, room, body, status, message):
    body = body.replace(b"%s", room.key.encode()).replace(b"%t", room.trace.encode())
    answer = http.post(f"/room/{room.room}/drive", content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == status and message in answer.json()["error"]
    assert http.post(f"/room/{room.room}/drive", json={"key": room.key, "trace": room.trace, "round": 2}).status_code == 200


def test_the_lecturer_downloads_the_results_and_nobody_else_can(server, http, room):
    hub, _ = server
    people = [http.post(f"/room/{room.room}/join", json={}).json()["follower"] for _ in range(3)]
    http.post(f"/room/{room.room}/drive", json={"key": room.key, "trace": room.trace, "round": 3, "quiz": True})
    for person, guess in zip(people, (1, 2, 2)):
        http.post(f"/room/{room.room}/answer", json={"follower": person, "round": 3, "guess": guess})
    facts = quiz_facts(load_example("paris"))
    http.post(f"/room/{room.room}/drive", json={"key": room.key, "trace": room.trace, "round": 3, "step": facts.rounds[2].steps})
    got = http.post(f"/room/{room.room}/results", json={"key": room.key, "trace": room.trace, "format": "json"})
    assert got.status_code == 200 and "attachment" in got.headers["content-disposition"]
    (shown,) = got.json()["traces"]
    row = shown["rounds"][0]
    assert row["histogram"]["1"] == 1 and row["histogram"]["2"] == 2 and row["class_mean"] == round(5 / 3, 4)
    assert row["accepted"] == facts.rounds[2].accepted and row["revealed"] is True
    as_csv = http.post(f"/room/{room.room}/results", json={"key": room.key, "trace": room.trace, "format": "csv"})
    assert as_csv.headers["content-type"].startswith("text/csv")
    assert as_csv.text.splitlines()[1].startswith("the room's trace,3,")  # under the room's title
    assert not any(p in got.text + as_csv.text for p in people)  # counts only, no follower id
    other = hub.rooms.open("{}", facts)
    for body, status, message in (({"key": "forged", "format": "csv"}, 403, "only the lecturer"),
                                  ({"key": other.key, "format": "csv"}, 403, "only the lecturer"),
                                  ({"key": people[0], "format": "json"}, 403, "only the lecturer"),
                                  ({"key": room.key, "format": "xlsx"}, 400, '"csv" or "json"'),
                                  ({"key": room.key, "format": ["csv"]}, 400, '"csv" or "json"'),
                                  ({"key": room.key}, 400, '"csv" or "json"')):
        refused = http.post(f"/room/{room.room}/results", json=body)
        assert refused.status_code == status and message in refused.json()["error"], body
    huge = http.post(f"/room/{room.room}/results", content=b'{"key": "' + b"k" * 5000 + b'"}')
    assert huge.status_code == 413
    hub.rooms.close(other.room)


def test_a_moved_room_answers_afresh_and_its_results_list_every_trace(server, http, room, paris):
    """Issue 55, item 7, over HTTP: an empty room's download says why there is none; round 3 of the second trace
    starts with no answers, a page left on the first trace cannot answer for it, and the download lists both traces
    under their titles."""
    hub, _ = server
    empty = http.post(f"/room/{room.room}/results", json={"key": room.key, "format": "csv"})
    assert empty.status_code == 409 and "nothing to download yet" in empty.json()["error"]
    person = http.post(f"/room/{room.room}/join", json={}).json()["follower"]
    http.post(f"/room/{room.room}/drive", json={"key": room.key, "trace": room.trace, "round": 3, "quiz": True})
    assert http.post(f"/room/{room.room}/answer", json={"follower": person, "round": 3, "guess": 1,
                                                         "part": 1}).json() == {"answers": {"3": 1}}
    story = load_example("story")
    hub.retrace(room.room, room.key, story.to_json(), quiz_facts(story), trace_title(story))
    moved = hub.rooms.view(room.room).trace
    drive = http.post(f"/room/{room.room}/drive", json={"key": room.key, "trace": moved, "round": 3, "quiz": True})
    assert drive.status_code == 200 and hub.rooms.view(room.room).answered == 0
    joined = http.post(f"/room/{room.room}/join", json={"follower": person}).json()
    assert joined == {"follower": person, "answers": {}}  # the new trace's answers: none yet
    stale = http.post(f"/room/{room.room}/answer", json={"follower": person, "round": 3, "guess": 0, "part": 1})
    assert stale.status_code == 409 and "moved the room to another trace" in stale.json()["error"]
    for bad in ("2", [2], 2.5):
        refused = http.post(f"/room/{room.room}/answer", json={"follower": person, "round": 3, "guess": 0,
                                                               "part": bad})
        assert refused.status_code == 400 and "part" in refused.json()["error"], bad
    assert http.post(f"/room/{room.room}/answer", json={"follower": person, "round": 3, "guess": 0,
                                                        "part": 2}).json() == {"answers": {"3": 0}}
    got = http.post(f"/room/{room.room}/results", json={"key": room.key, "format": "json"}).json()
    assert [(t["title"], [(r["round"], r["histogram"]["0"], r["histogram"]["1"]) for r in t["rounds"]])
            for t in got["traces"]] == [("the room's trace", [(3, 0, 1)]), (trace_title(story), [(3, 1, 0)])]
    table = csv.reader(http.post(f"/room/{room.room}/results", json={"key": room.key, "format": "csv"}).text
                       .splitlines())
    assert [row[:2] for row in list(table)[1:]] == [["the room's trace", "3"], [trace_title(story), "3"]]
    assert person not in json.dumps(got) and room.key not in json.dumps(got)


def test_unknown_full_and_guessed_rooms_say_so(server, http, room):
    hub, _ = server
    missing = http.get("/room/no-such-room")
    assert missing.status_code == 404 and "does not exist or has closed" in missing.text
    assert 'class="sv-room-page' in missing.text and "style=" not in missing.text  # room.css styles it
    assert http.post("/room/no-such-room/join", json={}).status_code == 404  # not a code: no guess counted
    for _ in range(3):
        http.post(f"/room/{room.room}/join", json={})
    full = http.post(f"/room/{room.room}/join", json={})
    assert full.status_code == 503 and "this room is full" in full.json()["error"]
    found = http.get(f"/room?code={room.code.lower()}", follow_redirects=False)
    assert found.status_code == 303 and found.headers["location"] == f"room/{room.room}"
    typo = http.get(f"/room?code={room.code[:-1]}{'2' if room.code[-1] != '2' else '3'}")
    assert typo.status_code == 404 and "is not a room code" in typo.text  # told at once, never a guess
    for code in (with_check(f"ZZZZZ{c}") for c in CODE_ALPHABET[:MISSES_ALLOWED]):
        assert http.get(f"/room?code={code}").status_code == 404
    limited = http.get(f"/room?code={with_check('YYYYYY')}")
    assert limited.status_code == 429 and "too many unknown codes" in limited.text
    assert 'class="sv-room-page sv-room-form"' in limited.text and "style=" not in limited.text
    assert "<script" not in http.get("/room?code=<script>x").text  # what was typed comes back escaped
    assert http.post(f"/room/{room.room}/drive", json={"key": room.key, "trace": room.trace, "round": 2}).status_code == 200
    hub.rooms.guesses = Guesses()  # the next test's guesses start afresh


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
    reader = threading.Thread(target=read_events, args=(f"{base}/room/{room.room}/events?follower={alice}", 4, seen,
                                                        ready))
    reader.start()
    ready.wait(20)
    deadline = time.monotonic() + 20
    while not seen and time.monotonic() < deadline:  # the state on connecting
        time.sleep(0.02)
    http.post(f"/room/{room.room}/drive", json={"key": room.key, "trace": room.trace, "round": 2, "quiz": True})
    http.post(f"/room/{room.room}/answer", json={"follower": alice, "round": 2, "guess": 0})
    deadline = time.monotonic() + 20
    while not any(kind == "message" and data["answered"] == 1 for kind, data in list(seen)) \
            and time.monotonic() < deadline:  # the answer's state has reached the stream
        time.sleep(0.02)
    hub.rooms.clock.now += 3601  # the room idles past its hour
    hub.ring(room.room)
    reader.join(30)
    kinds = [kind for kind, _ in seen]
    assert kinds[-1] == "closed" and "does not exist or has closed" in seen[-1][1]["error"]
    states = [data for kind, data in seen if kind == "message"]
    assert states[-1]["round"] == 2 and states[-1]["quiz"] and states[-1]["answered"] == 1
    assert all(alice not in json.dumps(s) and bob not in json.dumps(s) for s in states)  # ids never broadcast
    assert http.get(f"/room/{room.room}/events?follower={alice}").status_code == 404


def test_a_stream_holds_its_followers_seat_and_strangers_get_none(server, http, room):
    hub, base = server
    other = hub.rooms.open("{}", quiz_facts(load_example("code")))
    stranger = http.post(f"/room/{other.room}/join", json={}).json()["follower"]
    for query, status, message in (("", 403, "only the lecturer"), ("?key=forged", 403, "only the lecturer"),
                                   (f"?key={other.key}", 403, "only the lecturer"),  # another room's key
                                   ("?follower=forged", 403, "join the room"),
                                   (f"?follower={stranger}", 403, "join the room")):  # another room's follower
        refused = http.get(f"/room/{room.room}/events{query}")
        assert refused.status_code == status and message in refused.json()["error"], query
    alice = http.post(f"/room/{room.room}/join", json={}).json()["follower"]
    seen, ready = [], threading.Event()
    reader = threading.Thread(target=read_events, args=(f"{base}/room/{room.room}/events?follower={alice}", 99,
                                                        seen, ready), daemon=True)
    reader.start()
    ready.wait(20)
    hub.rooms.clock.now += 10 * GRACE_S  # long past the grace: the open stream holds the seat
    for _ in range(2):
        http.post(f"/room/{room.room}/join", json={})
    full = http.post(f"/room/{room.room}/join", json={})
    assert full.status_code == 503 and "this room is full" in full.json()["error"]
    with httpx.stream("GET", f"{base}/room/{room.room}/events?key={room.key}", timeout=20) as lecturer:
        first = next(line for line in lecturer.iter_lines() if line.startswith("data:"))
    assert json.loads(first[5:])["here"] == 3  # the lecturer's page follows without a seat
    hub.rooms.clock.now += 10 * GRACE_S  # the two who joined without a stream: gone after the grace
    assert http.post(f"/room/{room.room}/join", json={}).status_code == 200
    hub.rooms.close(other.room)
    hub.rooms.close(room.room)  # closed: alice's stream says so and ends, so the server shuts down at once
    hub.ring(room.room)
    reader.join(30)
    assert seen[-1][0] == "closed"

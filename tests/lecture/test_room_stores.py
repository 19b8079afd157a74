"""Rooms that outlive their process (issue 63), on the real stores: a room read back from JSON equals the room
written; SPECVIZ_ROOMS's forms, and a clear refusal naming them; the disk store after its process was killed
(SIGKILL) holds every room as it was; Redis out of reach is said in plain words, and rooms resume once it answers;
nothing a request names becomes a Redis key unless it is a room's id; a join or an answer writes its own piece of
the room, and a process sharing Redis catches up from the log of changes (or reads the room whole).
(tests/lecture/test_rooms.py runs every room rule on each store; tests/app/test_room_processes.py, two servers on
one Redis.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import redis

from harness.browser import free_port
from harness.room_processes import REDIS_SERVER, redis_server
from specviz.lecture.room_disk import DiskStore
from specviz.lecture.room_json import answer_field, room_from, room_text
from specviz.lecture.room_parts import changes, written
from specviz.lecture.room_redis import RedisStore
from specviz.lecture.room_setting import FORMS, parse_setting
from specviz.lecture.room_state import RoomError
from specviz.lecture.rooms import Rooms
from specviz.lecture.seats import GRACE_S
from specviz.record.quiz_data import QuizFacts, RoundFacts
from tests.helpers import ROOT, Clock

FACTS = QuizFacts(0.5, (RoundFacts(4, 1, 2), RoundFacts(4, 3, 2), RoundFacts(3, 0, 2, True)))
NEEDS_REDIS = pytest.mark.skipif(not os.path.exists(REDIS_SERVER), reason=f"{REDIS_SERVER} is not installed")

# A lecture in a process of its own, on the disk store at argv[1]: a room opened, two followers, answers, a reveal, a
# move to another trace and back; then what the parent must find again is printed, and the process waits to be killed.
LECTURE = """
import json, sys, time
from pathlib import Path
from specviz.lecture.room_disk import DiskStore
from specviz.lecture.rooms import Rooms
from specviz.record.quiz_data import QuizFacts, RoundFacts
facts = QuizFacts(0.5, (RoundFacts(4, 1, 2), RoundFacts(4, 3, 2), RoundFacts(3, 0, 2, True)))
rooms = Rooms(DiskStore(Path(sys.argv[1])))
opened = rooms.open('{"trace": "a"}', facts, "trace a")
alice, bob = rooms.join(opened.code)[1], rooms.join(opened.room)[1]
rooms.attend(opened.room, alice)
rooms.drive(opened.room, opened.key, 2, quiz=True, trace=opened.trace)
rooms.answer(opened.room, alice, 2, 3)
rooms.answer(opened.room, bob, 2, 1)
rooms.drive(opened.room, opened.key, 2, step=2, quiz=True, trace=opened.trace)
other = rooms.retrace(opened.room, opened.key, '{"trace": "b"}', facts, "trace b")
back = rooms.retrace(opened.room, opened.key, '{"trace": "a"}', facts, "trace a")
print(json.dumps({"room": opened.room, "code": opened.code, "key": opened.key, "alice": alice, "bob": bob,
                  "view": repr(rooms.view(opened.room)), "results": repr(rooms.results(opened.room, opened.key))}),
      flush=True)
time.sleep(600)
"""


def test_a_room_read_back_from_json_is_the_room_written():
    rooms = Rooms(clock=Clock())
    opened = rooms.open('{"trace": "a"}', FACTS, "trace a")
    alice = rooms.join(opened.room)[1]
    rooms.attend(opened.room, alice)
    rooms.drive(opened.room, opened.key, 3, step=2, quiz=False, trace=opened.trace)
    rooms.retrace(opened.room, opened.key, '{"trace": "b"}', FACTS, "trace b")
    rooms.drive(opened.room, opened.key, 1, quiz=True, trace=rooms.view(opened.room).trace)
    rooms.answer(opened.room, alice, 1, 4)
    r = rooms.store.load(opened.room, rooms.clock())
    back = room_from(room_text(r), r.trace_json)
    assert back == r and list(back.traces) == list(r.traces)  # the order too: the least recently shown first
    assert back.now.answers == {1: {alice: 4}} and back.traces[opened.trace].released == {3}


@pytest.mark.parametrize("setting, kind", [(None, ("disk", "")), ("", ("disk", "")), ("memory", ("memory", "")),
                                           ("sqlite:/srv/rooms.sqlite", ("disk", "/srv/rooms.sqlite")),
                                           ("redis://127.0.0.1:6379/0", ("redis", "redis://127.0.0.1:6379/0"))])
def test_the_setting_names_a_store(setting, kind):
    assert parse_setting(setting) == kind


@pytest.mark.parametrize("setting", ["mem", "sqlite:", "redis://localhost/0", "redis://h:99999/0", "redis://h:1/x",
                                     "redis://h:1/0?pw=1", "http://h:1/0", "redis://:6379/0"])
def test_a_malformed_setting_is_refused_naming_the_forms(setting):
    with pytest.raises(ValueError) as refused:
        parse_setting(setting)
    assert FORMS in str(refused.value) and "redis://HOST:PORT/DB" in str(refused.value)


def test_the_disk_store_keeps_every_room_through_a_kill(tmp_path):
    path = tmp_path / "rooms.sqlite"
    lecture = subprocess.Popen([sys.executable, "-c", LECTURE, str(path)], stdout=subprocess.PIPE, text=True,
                               cwd=ROOT)
    try:
        was = json.loads(lecture.stdout.readline())
    finally:
        lecture.send_signal(signal.SIGKILL)  # mid-lecture, no chance to close anything
        lecture.wait(10)
    rooms = Rooms(DiskStore(path))
    room = was["room"]
    assert repr(rooms.view(room)) == was["view"] and repr(rooms.results(room, was["key"])) == was["results"]
    assert rooms.resolve(was["code"]) == room and rooms.lead(room, was["key"])[1] == was["code"]
    assert rooms.join(room, follower=was["alice"]) == (room, was["alice"])  # back with its id: its answers
    assert rooms.mine(room, was["alice"]) == {2: 3} and rooms.mine(room, was["bob"]) == {2: 1}
    with pytest.raises(RoomError, match="only the lecturer"):
        rooms.drive(room, was["alice"], 1, trace=rooms.view(room).trace)
    seat = rooms.store.load(room, rooms.clock()).seats[was["alice"]]
    assert not seat.streams  # the killed process's stream no longer holds it: held GRACE_S for a return
    assert seat.held(rooms.clock()) and not seat.held(rooms.clock() + GRACE_S + 1)


def test_one_process_a_disk_file(tmp_path):
    first = DiskStore(tmp_path / "rooms.sqlite")
    with pytest.raises(RoomError, match="one process a file.*redis://HOST:PORT/DB"):
        DiskStore(tmp_path / "rooms.sqlite")
    assert first.count(0.0) == 0


@NEEDS_REDIS
def test_redis_out_of_reach_is_said_and_rooms_resume_when_it_answers():
    port = free_port()
    rooms = Rooms(RedisStore(f"redis://127.0.0.1:{port}/0"))
    with pytest.raises(RoomError) as refused:
        rooms.open('{"trace": "a"}', FACTS)
    said = str(refused.value)
    assert refused.value.status == 503 and "does not answer" in said and f"redis-server --port {port}" in said
    with redis_server(port) as url:
        opened = rooms.open('{"trace": "a"}', FACTS)  # the same Rooms, nothing restarted
        follower = rooms.join(opened.code)[1]
        server = redis.Redis.from_url(url)
        pid = server.info("server")["process_id"]
        os.kill(pid, signal.SIGSTOP)  # Redis hangs: every change waits at most TIMEOUT_S, then is refused
        try:
            with pytest.raises(RoomError, match="does not answer"):
                rooms.drive(opened.room, opened.key, 2, trace=opened.trace)
            assert rooms.view(opened.room).round_ == 1  # read from this process's copy meanwhile
        finally:
            os.kill(pid, signal.SIGCONT)
        # resumed (once the lock the refused drive asked for, granted when Redis woke up, has freed itself)
        assert rooms.drive(opened.room, opened.key, 2, trace=opened.trace).round_ == 2
        assert rooms.join(opened.room, follower=follower) == (opened.room, follower)


@NEEDS_REDIS
@pytest.mark.parametrize("named", ["*", "specviz:rooms", "a" * 21 + ":", "../" * 8, "room:" + "a" * 17, "A" * 23,
                                   "\x00" * 22, "ABC2345*"])
def test_nothing_a_request_names_becomes_a_key_unless_a_rooms_id(redis_url, named):
    store = RedisStore(redis_url, prefix=f"hostile-{os.urandom(4).hex()}")
    rooms = Rooms(store)
    opened = rooms.open('{"trace": "a"}', FACTS)
    keys = lambda: sorted(set(store.redis.keys(f"{store.prefix}:*")) - {f"{store.prefix}:processes"})  # noqa: E731
    before = keys()
    for request in (lambda: rooms.join(named), lambda: rooms.attend(named, "f"), lambda: rooms.view(named),
                    lambda: rooms.answer(named, "f", 1, 0), lambda: rooms.drive(named, opened.key, 1, trace="t")):
        with pytest.raises(RoomError) as refused:
            request()
        assert refused.value.status in (404, 403)
    assert keys() == before


def test_a_join_or_an_answer_writes_its_own_piece_not_the_room():
    rooms = Rooms(clock=Clock())
    opened = rooms.open('{"trace": "a"}', FACTS, "trace a")
    rooms.drive(opened.room, opened.key, 2, quiz=True, trace=opened.trace)
    for _ in range(40):
        rooms.answer(opened.room, rooms.join(opened.room)[1], 2, 1)
    r = rooms.store.load(opened.room, rooms.clock())
    was = written(r)
    late = rooms.join(opened.room)[1]
    change, was = changes(was, r)
    assert list(change.seats) == [late] and change.answers == {}
    rooms.answer(opened.room, late, 2, 3)
    change, was = changes(was, r)
    assert change.seats == {} and change.answers == {answer_field(opened.trace, 2, late): "3"}
    assert changes(was, r)[0].core is None and not changes(was, r)[0]  # nothing changed since: nothing to write


def settled(check, within_s: float = 10.0) -> bool:
    """Whether check() holds within `within_s` seconds (asked every 20 ms): a condition waited for, not read once."""
    ends = time.monotonic() + within_s
    while not check():
        if time.monotonic() > ends:
            return False
        time.sleep(0.02)
    return True


@NEEDS_REDIS
def test_every_process_catches_up_from_the_log_or_reads_the_room_whole(redis_url):
    prefix = f"log-{os.urandom(4).hex()}"
    a, b = (Rooms(RedisStore(redis_url, prefix=prefix)) for _ in range(2))
    opened = a.open('{"trace": "a"}', FACTS, "trace a")
    a.drive(opened.room, opened.key, 2, quiz=True, trace=opened.trace)
    followers = [(a if i % 2 else b).join(opened.room)[1] for i in range(6)]  # the two by turns: each catches up
    for i, follower in enumerate(followers):
        (b if i % 2 else a).answer(opened.room, follower, 2, i % 4)
    b.retrace(opened.room, opened.key, '{"trace": "b"}', FACTS, "trace b")  # a's copy learns the trace from the log
    fresh = lambda: Rooms(RedisStore(redis_url, prefix=prefix)).store.load(opened.room, 0.0)  # noqa: E731 read whole
    # A process hears another's change on the room's channel, in its listener's thread: a read right after it may
    # still be its own copy, so each read below waits (bounded) until the copy has caught up
    assert settled(lambda: a.store.load(opened.room, 0.0) == fresh() == b.store.load(opened.room, 0.0))
    a.store.redis.delete(f"{prefix}:log:{opened.room}")  # the log no longer reaches back to b's copy
    a.retrace(opened.room, opened.key, '{"trace": "a"}', FACTS, "trace a")
    assert settled(lambda: b.store.load(opened.room, 0.0) == fresh())
    assert b.mine(opened.room, followers[2]) == {2: 2}  # back: kept
    assert b.results(opened.room, opened.key)[0][0].counts == {2: {0: 2, 1: 2, 2: 1, 3: 1}}

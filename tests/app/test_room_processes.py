"""One room served by two processes on one Redis (issue 63), over real HTTP: each a room server of its own
(harness/room_processes.py), the lecturer's room opened from this process. A drive through A reaches a follower
streaming through B; only the key's holder drives, through either; B killed (SIGKILL) mid-lecture, the follower
comes back through A with its id, sees the round on screen, and its answer is kept; no stream carries a round's fate
before its reveal."""

from __future__ import annotations

import re
import signal

import httpx
import pytest

from harness.room_processes import room_process
from specviz.lecture.examples import load_example
from specviz.lecture.room_redis import RedisStore
from specviz.lecture.room_trace import quiz_facts, trace_title
from specviz.lecture.rooms import Rooms
from tests.helpers import EventReader

FATES = re.compile(r"accepted|rejected|discarded|replacement|bonus|sv-answer|sv-next")  # a round's verdict


@pytest.fixture(scope="module")
def servers(redis_url):
    """(A's base url, B's base url, B's process): two room servers on the run's Redis."""
    with room_process(redis_url) as (a, _), room_process(redis_url) as (b, b_process):
        yield a, b, b_process


def fates_before_reveal(reader: EventReader, round_: int) -> list[str]:
    """What of round `round_`'s verdict the stream's messages carried (its sections, before its reveal)."""
    return [m.group() for _, _, state, _ in reader.messages for m in FATES.finditer(
        state.get("sections", {}).get(str(round_), ""))]


# B's stream is cut by the kill (as a phone's would be), and A's at the end: their reader threads say so
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_room_spans_two_processes_and_outlives_one(redis_url, servers):
    a, b, b_process = servers
    trace = load_example("paris")
    lecturer = Rooms(RedisStore(redis_url))  # the room opened here: a third process's page, as far as A and B know
    opened = lecturer.open(trace.to_json(), quiz_facts(trace), trace_title(trace))
    room, drive = opened.room, {"key": opened.key, "trace": opened.trace}
    with httpx.Client(timeout=30) as http:
        follower = http.post(f"{b}/room/{room}/join", json={}).json()["follower"]
        through_b = EventReader(f"{b}/room/{room}/events?follower={follower}&since=0")
        through_b.wait_version(1)
        version = http.post(f"{a}/room/{room}/drive", json={**drive, "round": 3, "quiz": True}).json()["version"]
        assert through_b.wait_version(version)["round"] == 3  # driven through A, seen through B
        for server in (a, b):
            forged = http.post(f"{server}/room/{room}/drive", json={"key": follower, "trace": opened.trace,
                                                                     "round": 1})
            assert forged.status_code == 403 and "only the lecturer" in forged.json()["error"]
        answered = http.post(f"{b}/room/{room}/answer", json={"follower": follower, "round": 3, "guess": 2, "part": 1})
        assert answered.json() == {"answers": {"3": 2}}
        version = http.post(f"{b}/room/{room}/drive", json={**drive, "round": 3, "quiz": True,
                                                            "leading": True}).json()["version"]
        through_b.wait_version(version)
        assert fates_before_reveal(through_b, 3) == []
        b_process.send_signal(signal.SIGKILL)  # mid-lecture
        b_process.wait(10)
        back = http.post(f"{a}/room/{room}/join", json={"follower": follower}).json()
        assert back == {"follower": follower, "answers": {"3": 2}}  # the same id, its answer kept
        through_a = EventReader(f"{a}/room/{room}/events?follower={follower}&since={version}")
        assert through_a.wait_version(version)["round"] == 3  # the round on screen
        step = http.post(f"{a}/room/{room}/drive", json={**drive, "round": 3, "step": 1, "quiz": True}).json()
        assert through_a.wait_version(step["version"])["reached"] == {"3": 1}
        assert lecturer.view(room).answered == 1 and lecturer.mine(room, follower) == {3: 2}
        through_a.stop()

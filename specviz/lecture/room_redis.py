"""The rooms kept in Redis (`SPECVIZ_ROOMS=redis://HOST:PORT/DB`, issue 63): several app processes behind one address
serve one room. Each room is one hash with a TTL (its state as lecture/room_json.py writes it, when it closes, its
trace), its short code one key with the same TTL; a room's change is made under a lock of its own and published on
the room's channel, and each process hears every room's channel (one PSUBSCRIBE) and wakes its own streams. So a
drive on one process reaches followers streaming from another, and a follower may reconnect to any process with its
id. Nothing of a room outlives its TTL (the room's lifetime, renewed by each change); the rooms' count is a sorted
set trimmed on each count.

    store = RedisStore("redis://127.0.0.1:6379/0")
    store.listen(lambda room: ...)     # called from a thread of its own when another process changed `room`

Redis unreachable: every request that needs it is refused with UNREACHABLE (a RoomError, 503), which says in plain
words what to do; rooms read before stay readable from this process's copy, and resume once Redis answers.
"""

from __future__ import annotations

import math
import threading
import time
from contextlib import contextmanager, suppress
from typing import Callable, Iterator
from urllib.parse import urlsplit

import redis

from specviz.lecture.room_json import room_from, room_text
from specviz.lecture.room_state import Room, RoomError
from specviz.lecture.room_store import new_process, open_now

TIMEOUT_S = 1.0  # a Redis that does not answer in this long is unreachable: a request waits no longer
# a room's lock: held at most this long (a change takes milliseconds; a lock left by a process killed holding it, or by
# a request that timed out and ran once Redis woke up, frees itself after this), and waited for a little longer
LOCK_S = 2.0
BEAT_S = 5.0  # each process says it is alive this often; ALIVE_S without it, its streams no longer hold seats
ALIVE_S = 3 * BEAT_S
RETRY_S = 1.0  # after losing Redis, the listener tries again this often


class RedisStore:
    """Every room in the Redis at `url`, under `prefix:` (tests give each their own); this process's copy of each
    room it read, until another process changes it."""

    def __init__(self, url: str, prefix: str = "specviz"):
        self.url, self.prefix, self.process = url, prefix, new_process()
        self.redis = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S,
                                          retry=None, decode_responses=True)
        where = urlsplit(url)
        self.where = f"{where.hostname}:{where.port or 6379}"
        self._copies: dict[str, tuple[Room, float]] = {}  # room -> (room, when it closes) as last read or written
        self._stale: set[str] = set()  # rooms another process changed since this one read them
        self._heard = 0  # changes heard from other processes: a read that one overtook is read again next time
        self._hearers: list[Callable[[str], None]] = []  # told of each room another process changed
        threading.Thread(target=self._listen, daemon=True, name="specviz-rooms-redis").start()

    # --- what a room store does ---------------------------------------------------------------------------------

    def load(self, room: str, now: float) -> Room | None:
        if room in self._stale or room not in self._copies:
            self._read(room)
        return open_now(self, room, self._copies.get(room), now)

    def save(self, room: str, r: Room, now: float, until: float, trace: bool = False) -> None:
        ttl = max(1, math.ceil(until - now))
        fields = {"state": room_text(r), "until": repr(until), "code": r.code,
                  **({"trace": r.trace_json} if trace else {})}
        try:
            with self._reached():
                p = self.redis.pipeline()
                p.hset(self._key("room", room), mapping=fields).expire(self._key("room", room), ttl)
                p.set(self._key("code", r.code), room, ex=ttl)
                p.zadd(self._key("rooms"), {room: until})
                p.expire(self._key("rooms"), ttl, nx=True).expire(self._key("rooms"), ttl, gt=True)
                p.publish(self._key("room", room), self.process).execute()
        except RoomError:
            self._copies.pop(room, None)  # changed here but not there: read it again
            raise
        self._copies[room] = (r, until)
        self._stale.discard(room)

    def close(self, room: str) -> None:
        self._copies.pop(room, None)
        with self._reached():
            code = self.redis.hget(self._key("room", room), "code")
            p = self.redis.pipeline().delete(self._key("room", room)).zrem(self._key("rooms"), room)
            if code:
                p.delete(self._key("code", code))
            p.publish(self._key("room", room), self.process).execute()

    def room_of(self, code: str) -> str | None:
        with self._reached():
            return self.redis.get(self._key("code", code))

    def count(self, now: float) -> int:
        with self._reached():
            p = self.redis.pipeline().zremrangebyscore(self._key("rooms"), "-inf", f"({now}")
            return p.zcard(self._key("rooms")).execute()[1]

    @contextmanager
    def changing(self, room: str) -> Iterator[set[str]]:
        lock = self.redis.lock(self._key("lock", room), timeout=LOCK_S, blocking_timeout=LOCK_S + 0.5,
                                sleep=0.002)
        with self._reached():
            if not lock.acquire():
                raise RoomError("the room is busy (another server holds it); try again in a moment", 503)
        try:
            self._stale.add(room)  # read afresh under the lock: another process may have changed it
            with self._reached():
                alive = set(self.redis.zrangebyscore(self._key("processes"), time.time() - ALIVE_S, "+inf"))
            yield alive | {self.process}
        finally:
            with suppress(redis.RedisError):
                lock.release()

    def listen(self, heard: Callable[[str], None]) -> None:
        self._hearers.append(heard)

    # --- inside ---------------------------------------------------------------------------------------------

    def _key(self, kind: str, name: str = "") -> str:
        """A key or channel of this store: `prefix:room:<id>` a room's hash and channel, `prefix:code:<code>`,
        `prefix:lock:<id>`, `prefix:rooms`, `prefix:processes` (ids and codes are checked before they get here)."""
        return f"{self.prefix}:{kind}:{name}" if name else f"{self.prefix}:{kind}"

    def _read(self, room: str) -> None:
        """This process's copy of `room` from Redis; its trace read again only when the room is on another one."""
        heard = self._heard
        with self._reached():
            state, until = self.redis.hmget(self._key("room", room), "state", "until")
        if state is None:
            self._copies.pop(room, None)
            return
        old = self._copies.get(room)
        r = room_from(state, "")
        if old is not None and old[0].trace_id == r.trace_id:
            r.trace_json = old[0].trace_json
        else:
            with self._reached():
                r.trace_json = self.redis.hget(self._key("room", room), "trace") or ""
        self._copies[room] = (r, float(until))
        if self._heard == heard:  # no change heard meanwhile: this copy is the latest
            self._stale.discard(room)

    def _listen(self) -> None:
        """Hear every room's channel; say this process is alive every BEAT_S. Redis lost: try again every RETRY_S,
        and once back take every room as changed (what happened meanwhile was not heard)."""
        while True:
            try:
                channels = self.redis.pubsub(ignore_subscribe_messages=True)
                channels.psubscribe(self._key("room", "*"))
                beat = self._beat()
                for room in list(self._copies):
                    self._changed(room)
                while True:
                    message = channels.get_message(timeout=BEAT_S)
                    if message and message["type"] == "pmessage" and message["data"] != self.process:
                        self._changed(message["channel"].rsplit(":", 1)[1])
                    if time.monotonic() - beat > BEAT_S:
                        beat = self._beat()
            except (redis.RedisError, OSError):
                time.sleep(RETRY_S)

    def _changed(self, room: str) -> None:
        self._heard += 1
        self._stale.add(room)
        for heard in self._hearers:
            heard(room)

    def _beat(self) -> float:
        now = time.time()
        self.redis.pipeline().zadd(self._key("processes"), {self.process: now}).zremrangebyscore(
            self._key("processes"), "-inf", now - ALIVE_S).expire(self._key("processes"), int(3 * ALIVE_S)).execute()
        return time.monotonic()

    @contextmanager
    def _reached(self):
        """Redis errors as a RoomError a person can act on."""
        try:
            yield
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            raise RoomError(unreachable(self.where), 503) from None


def unreachable(where: str) -> str:
    """What a lecturer (or a follower) is told while Redis at `where` does not answer."""
    return (f"the rooms' store, Redis at {where}, does not answer: rooms wait for it (recorded examples and your own "
            f"runs work as before). Start Redis (redis-server --port {where.rsplit(':', 1)[1]}) or check "
            f"SPECVIZ_ROOMS; rooms resume as soon as it answers.")

"""The rooms kept in Redis (`SPECVIZ_ROOMS=redis://HOST:PORT/DB`, issue 63): several app processes behind one address
serve one room. A room is a few keys with the room's TTL, in lecture/room_json.py's pieces, so a request writes what
it changed (lecture/room_parts.py), a few bytes, not the room:

    prefix:room:<id>      hash: core (JSON), trace, until, code, w (how many changes written)
    prefix:seats:<id>     hash: follower id -> its seat        prefix:answers:<id>  hash: trace round follower -> guess
    prefix:log:<id>       stream: change w as entry "w-1" (the last LOG_KEPT), what another process catches up on
    prefix:code:<code>    the room's id                        prefix:lock:<id>     who holds the room (LOCK_S at most)

A change is made under the room's lock, written with its log entry in one script (refused if another process wrote
since), and published on the room's channel; each process hears every room's channel (one PSUBSCRIBE), wakes its own
streams, and brings its copy of the room up to date from the log (a full read only when it missed more than the log
keeps). Taking the lock and catching up is one round trip, writing and letting go another. Nothing of a room outlives
its TTL (the room's lifetime, renewed by each change); the rooms' count is a sorted set trimmed on each count.

    store = RedisStore("redis://127.0.0.1:6379/0")
    store.listen(lambda room: ...)     # called from a thread of its own when another process changed `room`

Redis unreachable: every request that needs it is refused with UNREACHABLE (a RoomError, 503), which says in plain
words what to do; rooms read before stay readable from this process's copy, and resume once Redis answers.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Callable, Iterator
from urllib.parse import urlsplit

import redis

from specviz.lecture.room_json import room_of
from specviz.lecture.room_parts import Change, Written, applied, changes, written
from specviz.lecture.room_state import Room, RoomError
from specviz.lecture.room_store import new_process, open_now
from specviz.lecture.showings import trace_id

TIMEOUT_S = 1.0  # a Redis that does not answer in this long is unreachable: a request waits no longer
# a room's lock: held at most this long (a change takes milliseconds; a lock left by a process killed holding it, or by
# a request that timed out and ran once Redis woke up, frees itself after this), and waited for a little longer
LOCK_S = 2.0
LOCK_POLL_S = 0.002  # a room held by another process is asked for again this often
BEAT_S = 5.0  # each process says it is alive this often; ALIVE_S without it, its streams no longer hold seats
ALIVE_S = 3 * BEAT_S
RETRY_S = 1.0  # after losing Redis, the listener tries again this often
LOG_KEPT = 2000  # a room's last changes kept for the processes to catch up on (a copy further behind reads it all)
BUSY = "the room is busy (another server holds it); try again in a moment"

# KEYS: lock, room, log, processes; ARGV: token ("": read only), lock ms, the copy's w ("": none), alive since.
# -> nil if another holds the lock, else {w ("": no room), the log's entries after the copy's w, processes alive}
HOLD = """
if ARGV[1] ~= '' and not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
local w = redis.call('HGET', KEYS[2], 'w') or ''
local log = {}
if w ~= '' and ARGV[3] ~= '' and tonumber(w) > tonumber(ARGV[3]) then
  log = redis.call('XRANGE', KEYS[3], (tonumber(ARGV[3]) + 1) .. '-1', '+')
end
local alive = {}
if ARGV[1] ~= '' then alive = redis.call('ZRANGEBYSCORE', KEYS[4], ARGV[4], '+inf') end
return {w, log, alive}
"""
# KEYS: room, seats, answers, log, code, rooms, lock; ARGV: token, the w written on, ttl, until, room id, code,
# trace ("": unchanged), the change (JSON), channel, process. -> the new w, or nil if another process wrote meanwhile
WRITE = """
local w = tonumber(redis.call('HGET', KEYS[1], 'w') or '0')
if w ~= tonumber(ARGV[2]) then return false end
w = w + 1
local c = cjson.decode(ARGV[8])
for i, part in ipairs({'seats', 'answers'}) do
  for f, v in pairs(c[part]) do
    if v == cjson.null then redis.call('HDEL', KEYS[i + 1], f) else redis.call('HSET', KEYS[i + 1], f, v) end
  end
end
if c.core ~= cjson.null then redis.call('HSET', KEYS[1], 'core', c.core) end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'trace', ARGV[7]) end
redis.call('HSET', KEYS[1], 'w', w, 'until', ARGV[4], 'code', ARGV[6])
redis.call('XADD', KEYS[4], 'MAXLEN', '~', LOG_KEPT, w .. '-1', 'c', ARGV[8])
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
redis.call('SET', KEYS[5], ARGV[5], 'EX', ARGV[3])
redis.call('ZADD', KEYS[6], ARGV[4], ARGV[5])
redis.call('EXPIRE', KEYS[6], ARGV[3], 'NX')
redis.call('EXPIRE', KEYS[6], ARGV[3], 'GT')
redis.call('PUBLISH', ARGV[9], ARGV[10])
if redis.call('GET', KEYS[7]) == ARGV[1] then redis.call('DEL', KEYS[7]) end
return w
""".replace("LOG_KEPT", str(LOG_KEPT))
LET_GO = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


@dataclass
class Copy:
    """This process's copy of a room: the room, when it closes, what Redis holds of it, and after how many changes."""

    room: Room
    until: float
    was: Written
    w: int


class RedisStore:
    """Every room in the Redis at `url`, under `prefix:` (tests give each their own); this process's copy of each
    room it read, brought up to date when another process changes it."""

    def __init__(self, url: str, prefix: str = "specviz"):
        self.url, self.prefix, self.process = url, prefix, new_process()
        self.redis = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S,
                                          retry=None, decode_responses=True)
        self._hold, self._write, self._let_go = (self.redis.register_script(lua) for lua in (HOLD, WRITE, LET_GO))
        where = urlsplit(url)
        self.where = f"{where.hostname}:{where.port or 6379}"
        self._copies: dict[str, Copy] = {}
        self._stale: set[str] = set()  # rooms another process changed since this one read them
        self._held: dict[str, str] = {}  # room -> the token of its lock, held by this process's request
        self._hearers: list[Callable[[str], None]] = []  # told of each room another process changed
        threading.Thread(target=self._listen, daemon=True, name="specviz-rooms-redis").start()

    # --- what a room store does ---------------------------------------------------------------------------------

    def load(self, room: str, now: float) -> Room | None:
        if room in self._stale or room not in self._copies:
            self._catch_up(room)
        copy = self._copies.get(room)
        return open_now(self, room, None if copy is None else (copy.room, copy.until), now)

    def save(self, room: str, r: Room, now: float, until: float, trace: bool = False) -> None:
        copy = self._copies.get(room)
        change, was = changes(None if copy is None else copy.was, r)
        entry = json.dumps({"core": change.core, "seats": change.seats, "answers": change.answers, "until": until})
        keys = [self._key(kind, room) for kind in ("room", "seats", "answers", "log")]
        try:
            with self._reached():
                w = self._write(keys + [self._key("code", r.code), self._key("rooms"), self._key("lock", room)],
                                [self._held.pop(room, ""), 0 if copy is None else copy.w, max(1, math.ceil(until - now)),
                                 repr(until), room, r.code, r.trace_json if trace else "", entry,
                                 self._key("room", room), self.process])
        except RoomError:
            self._copies.pop(room, None)  # changed here but maybe not there: read it again
            raise
        if w is None:  # this process's lock ran out and another process wrote: the request is refused
            self._copies.pop(room, None)
            raise RoomError(BUSY, 503)
        self._copies[room] = Copy(r, until, was, w)

    def close(self, room: str) -> None:
        self._copies.pop(room, None)
        with self._reached():
            code = self.redis.hget(self._key("room", room), "code")
            p = self.redis.pipeline().delete(*(self._key(kind, room) for kind in ("room", "seats", "answers", "log")))
            p.zrem(self._key("rooms"), room)
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
        token, deadline = secrets.token_hex(8), time.monotonic() + LOCK_S + 0.5
        while (alive := self._catch_up(room, token)) is None:  # held by another process's request
            if time.monotonic() > deadline:
                raise RoomError(BUSY, 503)
            time.sleep(LOCK_POLL_S)
        self._held[room] = token
        try:
            yield set(alive) | {self.process}
        finally:
            if self._held.pop(room, None) is not None:  # not saved (a refused request): let go, forget what it changed
                copy = self._copies.get(room)
                if copy is not None and changes(copy.was, copy.room)[0]:
                    self._copies.pop(room, None)
                with suppress(redis.RedisError):
                    self._let_go([self._key("lock", room)], [token])

    def listen(self, heard: Callable[[str], None]) -> None:
        self._hearers.append(heard)

    # --- inside ---------------------------------------------------------------------------------------------

    def _key(self, kind: str, name: str = "") -> str:
        """A key or channel of this store: `prefix:room:<id>` a room's hash and channel, `prefix:seats:<id>`,
        `prefix:answers:<id>`, `prefix:log:<id>`, `prefix:code:<code>`, `prefix:lock:<id>`, `prefix:rooms`,
        `prefix:processes` (ids and codes are checked before they get here)."""
        return f"{self.prefix}:{kind}:{name}" if name else f"{self.prefix}:{kind}"

    def _catch_up(self, room: str, token: str = "") -> list[str] | None:
        """This process's copy of `room` brought up to date: from the log of changes since it, or read whole when
        there is none or the log no longer reaches back to it. With `token`, the room's lock taken first: None if
        another holds it, else the processes alive."""
        self._stale.discard(room)  # a change heard from now on is read next time
        copy = self._copies.get(room)
        with self._reached():
            held = self._hold([self._key(kind, room) for kind in ("lock", "room", "log")] + [self._key("processes")],
                              [token, int(LOCK_S * 1000), "" if copy is None else copy.w, time.time() - ALIVE_S])
        if held is None:
            return None
        w, log, alive = held
        if w == "":
            self._copies.pop(room, None)
        elif copy is None or int(w) != copy.w and not self._replay(room, copy, log, int(w)):
            self._read(room)
        return alive

    def _replay(self, room: str, copy: Copy, log: list, w: int) -> bool:
        """`copy` brought to change `w` with the log's entries after it; False if they do not reach back to it."""
        if len(log) != w - copy.w or not log or log[0][0] != f"{copy.w + 1}-1":
            return False
        trace = copy.room.trace_id
        for _, (_, text) in log:
            entry = json.loads(text)
            copy.room = applied(copy.room, Change(entry["core"], entry["seats"], entry["answers"]), copy.was)
            copy.until = entry["until"]
        copy.w = w
        if copy.room.trace_id != trace:  # moved to another trace: read it (read whole if it moved again meanwhile)
            with self._reached():
                copy.room.trace_json = self.redis.hget(self._key("room", room), "trace") or ""
            if trace_id(copy.room.trace_json) != copy.room.trace_id:
                self._copies.pop(room, None)
        return True

    def _read(self, room: str) -> None:
        """This process's copy of `room` read whole from Redis; its trace read again only when it is another."""
        with self._reached():
            p = self.redis.pipeline()  # a transaction: the pieces as of one change
            (core, until, w), seats, answers = p.hmget(self._key("room", room), "core", "until", "w").hgetall(
                self._key("seats", room)).hgetall(self._key("answers", room)).execute()
        if core is None:
            self._copies.pop(room, None)
            return
        old = self._copies.get(room)
        r = room_of(core, "" if old is None else old.room.trace_json, seats, answers)
        if old is None or old.room.trace_id != r.trace_id:
            with self._reached():
                r.trace_json = self.redis.hget(self._key("room", room), "trace") or ""
        self._copies[room] = Copy(r, float(until), written(r), int(w))

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

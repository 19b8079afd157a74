"""What a room store must do (issue 63): keep each room (lecture/room_state.py's Room) under its id, find a room by
its short code, count the rooms open, hold one room while a request changes it, and say when another process changed
one. The rooms' bounds and rules are not a store's: lecture/rooms.py's Rooms reads a room from a store, applies
lecture/room_rules.py's rule and writes the room back, whatever the store. Three stores:

- MemoryStore (here): in this process's memory; gone with it (tests, and `SPECVIZ_ROOMS=memory`);
- DiskStore (lecture/room_disk.py): SQLite under the cache folder, written through on every change: the default;
- RedisStore (lecture/room_redis.py): Redis, shared by several processes, each told of the others' changes.

    store = MemoryStore()
    with store.changing(room) as alive:        # -> the processes whose streams still hold seats
        r = store.load(room, now)              # None: no such room, or closed (idle past `until`)
        ...                                    # a rule of room_rules changes r
        store.save(room, r, now, until=now + IDLE_S)
    store.room_of("ABC2345")                   # -> the room id the code names, or None

A room id is 22 url-safe characters (128 random bits, `secrets.token_urlsafe(16)`) and is checked before it is
used as a key (`is_room_id`): nothing a follower sends names anything but a room.
"""

from __future__ import annotations

import re
import secrets
from contextlib import contextmanager
from typing import Callable, Iterator, Protocol

from specviz.lecture.room_state import Room

ROOM_ID = re.compile(r"[A-Za-z0-9_-]{22}")  # secrets.token_urlsafe(16): what a room's id is, and all it may be


def is_room_id(text) -> bool:
    return isinstance(text, str) and ROOM_ID.fullmatch(text) is not None


def new_process() -> str:
    """An id for this process among a store's writers: whose streams hold a seat (seats.streams_lost)."""
    return secrets.token_hex(6)


def open_now(store: RoomStore, room: str, kept: tuple[Room, float] | None, now: float) -> Room | None:
    """The room of `kept` (the room, when it closes) if it is open at `now`; one past its time is closed in `store`."""
    if kept is not None and now > kept[1]:
        store.close(room)
        return None
    return None if kept is None else kept[0]


class RoomStore(Protocol):
    """What a room store must do. `now` and `until` are on the caller's clock (Rooms.clock)."""

    process: str  # this process's id among the store's writers

    def load(self, room: str, now: float) -> Room | None:
        """The room as last saved; None if there is none or it closed (idle past its `until`)."""

    def save(self, room: str, r: Room, now: float, until: float, trace: bool = False) -> None:
        """Write `r` through; it closes at `until` unless saved again. `trace`: its trace changed too (open, move)."""

    def close(self, room: str) -> None:
        """Forget the room and its code."""

    def room_of(self, code: str) -> str | None:
        """The id of the open room a (well-formed) short code names."""

    def count(self, now: float) -> int:
        """Rooms open now."""

    def changing(self, room: str):
        """A context that holds `room` against other writers while a request changes it; -> the processes alive."""

    def listen(self, heard: Callable[[str], None]) -> None:
        """Call heard(room) whenever another process changed a room (a store no other process writes: never)."""


class MemoryStore:
    """Every room of this process in its memory: the rooms themselves, changed in place."""

    def __init__(self):
        self.process = new_process()
        self._rooms: dict[str, tuple[Room, float]] = {}  # room -> (the room, when it closes)
        self._codes: dict[str, str] = {}  # short code -> room id

    def load(self, room: str, now: float) -> Room | None:
        return open_now(self, room, self._rooms.get(room), now)

    def save(self, room: str, r: Room, now: float, until: float, trace: bool = False) -> None:
        self._rooms[room] = (r, until)
        self._codes[r.code] = room

    def close(self, room: str) -> None:
        kept = self._rooms.pop(room, None)
        if kept is not None:
            self._codes.pop(kept[0].code, None)

    def room_of(self, code: str) -> str | None:
        return self._codes.get(code)

    def count(self, now: float) -> int:
        for room in [room for room, (_, until) in self._rooms.items() if now > until]:
            self.close(room)
        return len(self._rooms)

    @contextmanager
    def changing(self, room: str) -> Iterator[set[str]]:
        yield {self.process}  # one process: Rooms' own lock is the only one needed

    def listen(self, heard: Callable[[str], None]) -> None:
        pass  # nobody else writes

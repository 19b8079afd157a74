"""The rooms kept on this machine's disk (issue 63's default): a SQLite file (the standard library's sqlite3, WAL
journal), one row a room, written through on every change, read back when the app starts again. So a killed and
restarted app serves the same rooms: their pages, codes, lecturer keys, followers and seats, answers and results.
Served from memory meanwhile (a DiskStore is a MemoryStore that also writes), so one process alone may use a file:
a second one is refused at start (use Redis, lecture/room_redis.py, for several processes).

    store = DiskStore(Path("~/.cache/specviz/rooms.sqlite").expanduser())

A commit in WAL mode with `synchronous=NORMAL` is in the operating system's hands when it returns: it survives the
app's process being killed (SIGKILL), not a power cut of the machine.
"""

from __future__ import annotations

import fcntl
import sqlite3
from pathlib import Path

from specviz.lecture.room_json import room_from, room_text
from specviz.lecture.room_state import Room, RoomError
from specviz.lecture.room_store import MemoryStore

SCHEMA = "CREATE TABLE IF NOT EXISTS rooms (id TEXT PRIMARY KEY, until REAL NOT NULL, state TEXT NOT NULL, trace TEXT)"


class DiskStore(MemoryStore):
    """Every room of this process in memory and in the SQLite file at `path` (created with its folder)."""

    def __init__(self, path: Path):
        super().__init__()
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._only = _only_writer(self.path)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)  # Rooms' lock guards it
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(SCHEMA)
        for room, until, state, trace in self._db.execute("SELECT id, until, state, trace FROM rooms"):
            super().save(room, room_from(state, trace), 0.0, until)

    def save(self, room: str, r: Room, now: float, until: float, trace: bool = False) -> None:
        super().save(room, r, now, until, trace)
        if trace:
            self._db.execute("INSERT OR REPLACE INTO rooms VALUES (?, ?, ?, ?)", (room, until, room_text(r),
                                                                                 r.trace_json))
        else:
            self._db.execute("UPDATE rooms SET until = ?, state = ? WHERE id = ?", (until, room_text(r), room))

    def close(self, room: str) -> None:
        super().close(room)
        self._db.execute("DELETE FROM rooms WHERE id = ?", (room,))


def _only_writer(path: Path):
    """An exclusive lock on `path`.lock for this process's life (the system drops it when the process dies, killed
    or not); RoomError if another process holds it."""
    held = open(path.with_name(path.name + ".lock"), "a")
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held.close()
        raise RoomError(f"another specviz process keeps its rooms in {path}: one process a file. Stop it, name "
                        f"another file (SPECVIZ_ROOMS=sqlite:PATH), or share rooms through Redis "
                        f"(SPECVIZ_ROOMS=redis://HOST:PORT/DB)", 503) from None
    return held

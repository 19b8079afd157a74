"""The rooms kept on this machine's disk (issue 63's default): a SQLite file (the standard library's sqlite3, WAL
journal), a row a room's core, a row a seat, a row an answer (lecture/room_json.py's pieces), each change written
through as the rows it changed (lecture/room_parts.py: a join writes its seat, not the room), read back when the app
starts again. So a killed and restarted app serves the same rooms: their pages, codes, lecturer keys, followers and
seats, answers and results. Served from memory meanwhile (a DiskStore is a MemoryStore that also writes), so one
process alone may use a file: a second one is refused at start (use Redis, lecture/room_redis.py, for several
processes). (The first version's one-row-a-room table, `rooms`, is not read: rooms kept by it are not carried over.)

    store = DiskStore(Path("~/.cache/specviz/rooms.sqlite").expanduser())

A commit in WAL mode with `synchronous=NORMAL` is in the operating system's hands when it returns: it survives the
app's process being killed (SIGKILL), not a power cut of the machine.
"""

from __future__ import annotations

import fcntl
import sqlite3
from pathlib import Path

from specviz.lecture.room_json import core_text, room_of
from specviz.lecture.room_parts import Written, changes, written
from specviz.lecture.room_state import Room, RoomError
from specviz.lecture.room_store import MemoryStore

SCHEMA = """
CREATE TABLE IF NOT EXISTS room_core (id TEXT PRIMARY KEY, until REAL NOT NULL, core TEXT NOT NULL, trace TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS room_seats (room TEXT, follower TEXT, seat TEXT NOT NULL, PRIMARY KEY (room, follower));
CREATE TABLE IF NOT EXISTS room_answers (room TEXT, field TEXT, guess TEXT NOT NULL, PRIMARY KEY (room, field));
"""


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
        self._db.executescript(SCHEMA)
        self._written: dict[str, Written] = {}  # room -> what the file holds of it
        for room, r, until in self._read_back():
            super().save(room, r, 0.0, until)
            self._written[room] = written(r)

    def save(self, room: str, r: Room, now: float, until: float, trace: bool = False) -> None:
        super().save(room, r, now, until, trace)
        change, self._written[room] = changes(self._written.get(room), r)
        with self._db:  # one transaction: the room's rows as one change
            self._db.execute("BEGIN")
            if trace:
                self._db.execute("INSERT OR REPLACE INTO room_core VALUES (?, ?, ?, ?)",
                                 (room, until, core_text(r), r.trace_json))
            else:
                self._db.execute("UPDATE room_core SET until = ?, core = coalesce(?, core) WHERE id = ?",
                                 (until, change.core, room))
            self._db.executemany("INSERT OR REPLACE INTO room_seats VALUES (?, ?, ?)",
                                 [(room, f, text) for f, text in change.seats.items() if text is not None])
            self._db.executemany("INSERT OR REPLACE INTO room_answers VALUES (?, ?, ?)",
                                 [(room, a, text) for a, text in change.answers.items() if text is not None])
            self._db.executemany("DELETE FROM room_seats WHERE room = ? AND follower = ?",
                                 [(room, f) for f, text in change.seats.items() if text is None])
            self._db.executemany("DELETE FROM room_answers WHERE room = ? AND field = ?",
                                 [(room, a) for a, text in change.answers.items() if text is None])

    def close(self, room: str) -> None:
        super().close(room)
        self._written.pop(room, None)
        with self._db:
            self._db.execute("BEGIN")
            for table, column in (("room_core", "id"), ("room_seats", "room"), ("room_answers", "room")):
                self._db.execute(f"DELETE FROM {table} WHERE {column} = ?", (room,))

    def _read_back(self):
        """(room, Room, until) of every room in the file."""
        seats: dict[str, dict[str, str]] = {}
        answers: dict[str, dict[str, str]] = {}
        for room, follower, text in self._db.execute("SELECT room, follower, seat FROM room_seats"):
            seats.setdefault(room, {})[follower] = text
        for room, name, guess in self._db.execute("SELECT room, field, guess FROM room_answers"):
            answers.setdefault(room, {})[name] = guess
        for room, until, core, trace in self._db.execute("SELECT id, until, core, trace FROM room_core"):
            yield room, room_of(core, trace, seats.get(room, {}), answers.get(room, {})), until


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

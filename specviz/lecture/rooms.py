"""Rooms: one lecturer drives a trace, many students follow it and answer the quiz (issue 23). This module is the
front of a server's rooms: the bounds, and each request as one step: hold the room, read it from its store, apply
the rule, write it back. What one room holds is lecture/room_state.py's, what each request does to it
lecture/room_rules.py's, and where rooms are kept a RoomStore's (lecture/room_store.py: this process's memory, a
SQLite file on disk, or Redis shared by several processes): the same rules whatever the store.

    rooms = Rooms()                                      # in memory; Rooms(DiskStore(path)) or Rooms(RedisStore(url))
    opened = rooms.open(trace_json, quiz_facts(trace), trace_title(trace))  # room id, short code, lecturer's key
    room, follower = rooms.join(opened.code)              # a student: a follower id (their answers are theirs alone)
    rooms.drive(opened.room, opened.key, round_=3, step=0, quiz=True, trace=opened.trace)
    rooms.answer(opened.room, follower, round_=3, guess=2)
    rooms.view(opened.room)                              # what every follower sees: the round, the step, counts

Bounded and safe by construction: room ids and lecturer keys are 128 random bits (`secrets`), the short code only an
alias whose last character checks the others (a typo is told at once and is not a guess: lecture/room_codes.py) and
that a client may miss a few times before it must wait (lecture/code_guesses.py); at most MAX_ROOMS rooms; at most
MAX_FOLLOWERS seats a room, a seat held while its follower's stream is open and GRACE_S after (a reload keeps it; the
seats' rules are lecture/seats.py's); a room idle for IDLE_S is gone; the results of the last MAX_TRACES traces a room
showed (lecture/showings.py). Every refusal is a RoomError with a sentence for a person.
"""

from __future__ import annotations

import secrets
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from specviz.lecture import room_rules
from specviz.lecture.code_guesses import Guesses
from specviz.lecture.results import TraceResults
from specviz.lecture.room_codes import CODE_ALPHABET, CODE_LENGTH, CODE_RANDOM, is_code, with_check
from specviz.lecture.room_state import OpenedRoom, Room, RoomError, RoomView
from specviz.lecture.room_store import MemoryStore, RoomStore, is_room_id
from specviz.lecture.seats import MAX_FOLLOWERS, streams_lost
from specviz.lecture.showings import MAX_TRACES, results_of
from specviz.record.quiz_data import QuizFacts

MAX_ROOMS = 50  # rooms at once on one server: each holds its trace (at most record.trace.MAX_TRACE_BYTES)
IDLE_S = 4 * 3600  # a room nobody drove or joined for this long is closed
GONE = ("this room does not exist or has closed (rooms close after a few idle hours); ask the lecturer for the "
        "current link or code")


class Rooms:
    """Every room of one server, kept in `store`, one request at a time in this process. `clock` (wall time: a
    room outlives its process) is injectable so tests need not wait hours."""

    def __init__(self, store: RoomStore | None = None, max_rooms: int = MAX_ROOMS, max_followers: int = MAX_FOLLOWERS,
                 idle_s: float = IDLE_S, clock: Callable[[], float] = time.time, max_traces: int = MAX_TRACES):
        self.store = store if store is not None else MemoryStore()
        self.max_rooms, self.max_followers, self.idle_s, self.clock = max_rooms, max_followers, idle_s, clock
        self.max_traces = max_traces
        self.guesses = Guesses()  # well-formed codes that named no room, per client (this process's)
        self._lock = threading.Lock()

    # --- the lecturer -------------------------------------------------------------------------------------------

    @property
    def rooms(self) -> int:
        with self._lock:
            return self.store.count(self.clock())

    def open(self, trace_json: str, facts: QuizFacts, title: str = "the room's trace") -> OpenedRoom:
        """A new room on a trace (already checked by record.load), with its rounds' facts (quiz_facts) and its title
        (trace_title)."""
        room_rules.check_facts(facts)
        with self._lock:
            now = self.clock()
            self.guesses.trim()
            if self.store.count(now) >= self.max_rooms:
                raise RoomError(f"this server holds {self.max_rooms} rooms already; try again when one closes "
                                f"(a room closes after {self._idle_hours})", 503)
            room, code = secrets.token_urlsafe(16), self._new_code()  # the room's id: 128 bits
            r = room_rules.new_room(trace_json, facts, title, code, now)
            self.store.save(room, r, now, now + self.idle_s, trace=True)
            return OpenedRoom(room, code, r.key, r.trace_id)

    def drive(self, room: str, key: str, round_: int, step: int = 0, quiz: bool | None = None,
              leading: bool | None = None, *, trace) -> RoomView:
        """Move the room to `round_` (1-based) and reveal `step`; only the lecturer's key may, and only from a page
        that shows the room's trace (`trace`: the trace_id it shows). `leading`: False while the lecturer's page
        shows another trace (the room stays where it is, and says so)."""
        with self._lecturers(room, key, "only the lecturer who opened this room can move it; followers step on "
                                        "their own and press Follow to come back") as r:
            room_rules.drive(r, round_, step, quiz, leading, trace)
            return room_rules.changed(r, self.clock())

    def retrace(self, room: str, key: str, trace_json: str, facts: QuizFacts,
                title: str = "the room's trace") -> RoomView:
        """Move the room to another trace (the one on the lecturer's screen): round 1, quiz off. A trace new to the
        room starts with no answers; one it showed before (the same trace_id) and still keeps resumes its answers and
        reveals. The earlier trace's stay for the results; past `max_traces` the least recently shown is dropped."""
        room_rules.check_facts(facts)
        with self._lecturers(room, key, "only the lecturer who opened this room can move it to another trace",
                             trace=True) as r:
            room_rules.retrace(r, trace_json, facts, title, self.max_traces)
            return room_rules.changed(r, self.clock())

    def results(self, room: str, key: str) -> tuple[list[TraceResults], int]:
        """(every trace the room keeps, in the order it first showed them, with its rounds' answers counted and
        reveal steps reached; how many traces it dropped) for the lecturer's download; RoomError when no round was
        answered or revealed yet."""
        with self._lock:
            r = self._room(room)
            room_rules.check_key(r, key, "only the lecturer who opened this room can download its results")
            shown = results_of(r.traces)
            if not any(t.counts or t.reached for t in shown):
                raise RoomError("nothing to download yet: no round of this room has been answered or revealed "
                                "(turn quiz mode on for answers, or reveal a round)", 409)
            return shown, r.dropped

    def lead(self, room: str, key: str) -> tuple[RoomView, str]:
        """(the room's state, its short code) for its lecturer reopening it (a lecturer's link), if `key` is theirs."""
        with self._lecturers(room, key, "this lecturer link's key does not open this room; use the link you "
                                        "copied when the room was opened") as r:
            r.touched = self.clock()
            return room_rules.view_of(r, self.clock()), r.code

    def check_key(self, room: str, key) -> None:
        """RoomError unless `key` is the room's lecturer key (a lecturer's page following its own room)."""
        with self._lock:
            room_rules.check_key(self._room(room), key, "only the lecturer's page follows a room without joining it")

    def close(self, room: str) -> None:
        """Close a room now (its store forgets it, its code and its results): what IDLE_S does to an idle one."""
        with self._lock:
            if is_room_id(room):
                self.store.close(room)

    # --- the followers ------------------------------------------------------------------------------------------

    def join(self, code_or_room: str, client: str = "", follower: str | None = None) -> tuple[str, str]:
        """(the room's id, a follower id) for a short code or a room id, and a seat for GRACE_S (its stream then
        holds it); `client` (an address) is what the guessing limit counts. `follower`: the id this browser had
        (a reload keeps its seat and its answers)."""
        room = self.resolve(code_or_room, client)
        with self._changing(room) as r:
            return room, room_rules.join(r, follower, self.clock(), self.max_followers)

    def attend(self, room: str, follower, hold: bool = True) -> None:
        """A follower's stream opened: its seat is held while the stream is open (`hold` False: only the check
        that it may, made before the stream starts: it changes nothing, so it is only read)."""
        if not hold:
            with self._lock:
                room_rules.attend(self._room(room), follower, self.clock(), self.max_followers, False)
            return
        with self._changing(room) as r:
            room_rules.attend(r, follower, self.clock(), self.max_followers, True, self.store.process)

    def leave(self, room: str, follower: str) -> None:
        """A follower's stream closed: its seat is kept GRACE_S more (a reload comes back to it)."""
        try:
            with self._changing(room) as r:
                room_rules.leave(r, follower, self.clock(), self.store.process)
        except RoomError:  # closed meanwhile, or its store out of reach: the seat frees itself once the grace is over
            pass

    def resolve(self, code_or_room: str, client: str = "") -> str:
        """The room id a short code (or a room id) names; unknown codes count against `client`'s guesses."""
        with self._lock:
            return self._resolve(code_or_room, client)

    def answer(self, room: str, follower: str, round_: int, guess: int, part=None) -> RoomView:
        """A follower's answer for a round of the trace on screen, from 0 to the most that round's quiz offers: the
        latest counts, and it may change until the round's first reveal. `part`: the room's part the follower's page
        holds (None: not said); one from before a move is refused, so it never counts for the new trace."""
        with self._changing(room) as r:
            room_rules.answer(r, follower, round_, guess, part)
            return room_rules.view_of(r, self.clock())

    def mine(self, room: str, follower: str) -> dict[int, int]:
        """One follower's own answers to the trace on screen, round -> guess (to restore their page after a
        reconnect)."""
        with self._lock:
            return room_rules.mine(self._room(room), follower)

    def view(self, room: str) -> RoomView:
        with self._lock:
            return room_rules.view_of(self._room(room), self.clock())

    def trace_json(self, room: str) -> tuple[str, int]:
        """(the room's trace, its part: which trace of the room it is)."""
        with self._lock:
            r = self._room(room)
            return r.trace_json, r.part

    def facts(self, room: str) -> QuizFacts:
        with self._lock:
            return self._room(room).facts

    def listen(self, heard: Callable[[str], None]) -> None:
        """Call heard(room) (from a thread of the store's) whenever another process changed a room."""
        self.store.listen(heard)

    # --- inside ---------------------------------------------------------------------------------------------

    @property
    def _idle_hours(self) -> str:
        hours = self.idle_s / 3600
        return f"{hours:g} idle hour{'s' * (hours != 1)}"

    @contextmanager
    def _changing(self, room, trace: bool = False) -> Iterator[Room]:
        """The room, held against every other request (this process's and, in a shared store, other processes'),
        read afresh; written back through its store unless the request was refused. `trace`: its trace changes."""
        with self._lock:
            if not is_room_id(room):
                raise RoomError(GONE, 404)
            with self.store.changing(room) as alive:
                r = self._room(room)
                now = self.clock()
                streams_lost(r.seats, alive, now)  # streams of a process that died: their seats wait for a return
                yield r
                self.store.save(room, r, now, r.touched + self.idle_s, trace)

    @contextmanager
    def _lecturers(self, room, key, refusal: str, trace: bool = False) -> Iterator[Room]:
        """_changing, if `key` is the room's lecturer key; else RoomError(refusal)."""
        with self._changing(room, trace) as r:
            room_rules.check_key(r, key, refusal)
            yield r

    def _room(self, room) -> Room:
        r = self.store.load(room, self.clock()) if is_room_id(room) else None
        if r is None:
            raise RoomError(GONE, 404)
        return r

    def _resolve(self, code_or_room, client: str) -> str:
        text = code_or_room.strip() if isinstance(code_or_room, str) else ""
        code = "".join(text.split()).replace("-", "").upper()
        room = text if is_room_id(text) else self.store.room_of(code) if is_code(code) else None
        if room is not None and self.store.load(room, self.clock()) is not None:
            return room
        if len(text) > 2 * CODE_LENGTH:  # a room id (a link), not a code typed in: 128 bits are not guessed
            raise RoomError(GONE, 404)
        if not is_code(code):
            raise RoomError(f"{text[:12]!r} is not a room code: a code is {CODE_LENGTH} characters, digits 2–9 and "
                            f"letters but I, L and O; check it on the projector", 404)
        self.guesses.miss(client, self.clock())
        raise RoomError(f"no open room has the code {code!r} (a room closes after {self._idle_hours}); "
                        f"check the code on the projector", 404)

    def _new_code(self) -> str:
        while True:
            code = with_check("".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_RANDOM)))
            if self.store.room_of(code) is None:
                return code

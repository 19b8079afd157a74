"""Rooms: one lecturer drives a trace, many students follow it and answer the quiz (issue 23). This module is the
room store: every room of one server, in memory, behind one lock, with no web framework (the page, app/, serves it).
What one room holds is lecture/room_state.py's, and what each request does to it lecture/room_rules.py's: a store
finds the room, holds the lock, and applies the rule, so another store would keep the same rules.

    store = RoomStore()
    opened = store.open(trace_json, quiz_facts(trace), trace_title(trace))  # room id, short code, lecturer's key
    room, follower = store.join(opened.code)              # a student: a follower id (their answers are theirs alone)
    store.drive(opened.room, opened.key, round_=3, step=0, quiz=True, trace=opened.trace)
    store.answer(opened.room, follower, round_=3, guess=2)
    store.view(opened.room)                              # what every follower sees: the round, the step, counts

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
from typing import Callable

from specviz.lecture import room_rules
from specviz.lecture.code_guesses import Guesses
from specviz.lecture.results import TraceResults
from specviz.lecture.room_codes import CODE_ALPHABET, CODE_LENGTH, CODE_RANDOM, is_code, with_check
from specviz.lecture.room_state import OpenedRoom, Room, RoomError, RoomView
from specviz.lecture.seats import MAX_FOLLOWERS
from specviz.lecture.showings import MAX_TRACES, results_of
from specviz.record.quiz_data import QuizFacts

MAX_ROOMS = 50  # rooms at once on one server: each holds its trace (at most record.trace.MAX_TRACE_BYTES)
IDLE_S = 4 * 3600  # a room nobody drove or joined for this long is closed


class RoomStore:
    """Every room of one server, behind one lock. `clock` is injectable so tests need not wait hours."""

    def __init__(self, max_rooms: int = MAX_ROOMS, max_followers: int = MAX_FOLLOWERS, idle_s: float = IDLE_S,
                 clock: Callable[[], float] = time.monotonic, max_traces: int = MAX_TRACES):
        self.max_rooms, self.max_followers, self.idle_s, self.clock = max_rooms, max_followers, idle_s, clock
        self.max_traces = max_traces
        self.guesses = Guesses()  # well-formed codes that named no room, per client
        self._rooms: dict[str, Room] = {}
        self._codes: dict[str, str] = {}  # short code -> room id
        self._lock = threading.Lock()

    # --- the lecturer -------------------------------------------------------------------------------------------

    @property
    def rooms(self) -> int:
        with self._lock:
            self._expire()
            return len(self._rooms)

    def open(self, trace_json: str, facts: QuizFacts, title: str = "the room's trace") -> OpenedRoom:
        """A new room on a trace (already checked by record.load), with its rounds' facts (quiz_facts) and its title
        (trace_title)."""
        room_rules.check_facts(facts)
        with self._lock:
            self._expire()
            if len(self._rooms) >= self.max_rooms:
                raise RoomError(f"this server holds {self.max_rooms} rooms already; try again when one closes "
                                f"(a room closes after {self._idle_hours})", 503)
            room, code = secrets.token_urlsafe(16), self._new_code()  # the room's id: 128 bits
            r = self._rooms[room] = room_rules.new_room(trace_json, facts, title, code, self.clock())
            self._codes[code] = room
            return OpenedRoom(room, code, r.key, r.trace_id)

    def drive(self, room: str, key: str, round_: int, step: int = 0, quiz: bool | None = None,
              leading: bool | None = None, *, trace) -> RoomView:
        """Move the room to `round_` (1-based) and reveal `step`; only the lecturer's key may, and only from a page
        that shows the room's trace (`trace`: the trace_id it shows). `leading`: False while the lecturer's page
        shows another trace (the room stays where it is, and says so)."""
        with self._lock:
            r = self._lecturers(room, key, "only the lecturer who opened this room can move it; followers step on "
                                            "their own and press Follow to come back")
            room_rules.drive(r, round_, step, quiz, leading, trace)
            return room_rules.changed(r, self.clock())

    def retrace(self, room: str, key: str, trace_json: str, facts: QuizFacts,
                title: str = "the room's trace") -> RoomView:
        """Move the room to another trace (the one on the lecturer's screen): round 1, quiz off. A trace new to the
        room starts with no answers; one it showed before (the same trace_id) and still keeps resumes its answers and
        reveals. The earlier trace's stay for the results; past `max_traces` the least recently shown is dropped."""
        room_rules.check_facts(facts)
        with self._lock:
            r = self._lecturers(room, key, "only the lecturer who opened this room can move it to another trace")
            room_rules.retrace(r, trace_json, facts, title, self.max_traces)
            return room_rules.changed(r, self.clock())

    def results(self, room: str, key: str) -> tuple[list[TraceResults], int]:
        """(every trace the room keeps, in the order it first showed them, with its rounds' answers counted and
        reveal steps reached; how many traces it dropped) for the lecturer's download; RoomError when no round was
        answered or revealed yet."""
        with self._lock:
            r = self._lecturers(room, key, "only the lecturer who opened this room can download its results")
            shown = results_of(r.traces)
            if not any(t.counts or t.reached for t in shown):
                raise RoomError("nothing to download yet: no round of this room has been answered or revealed "
                                "(turn quiz mode on for answers, or reveal a round)", 409)
            return shown, r.dropped

    def lead(self, room: str, key: str) -> tuple[RoomView, str]:
        """(the room's state, its short code) for its lecturer reopening it (a lecturer's link), if `key` is theirs."""
        with self._lock:
            r = self._lecturers(room, key, "this lecturer link's key does not open this room; use the link you "
                                           "copied when the room was opened")
            r.touched = self.clock()
            return room_rules.view_of(r, self.clock()), r.code

    def check_key(self, room: str, key) -> None:
        """RoomError unless `key` is the room's lecturer key (a lecturer's page following its own room)."""
        with self._lock:
            self._lecturers(room, key, "only the lecturer's page follows a room without joining it")

    # --- the followers ------------------------------------------------------------------------------------------

    def join(self, code_or_room: str, client: str = "", follower: str | None = None) -> tuple[str, str]:
        """(the room's id, a follower id) for a short code or a room id, and a seat for GRACE_S (its stream then
        holds it); `client` (an address) is what the guessing limit counts. `follower`: the id this browser had
        (a reload keeps its seat and its answers)."""
        with self._lock:
            self._expire()
            room = self._resolve(code_or_room, client)
            return room, room_rules.join(self._rooms[room], follower, self.clock(), self.max_followers)

    def attend(self, room: str, follower, hold: bool = True) -> None:
        """A follower's stream opened: its seat is held while the stream is open (`hold` False: only the check
        that it may, made before the stream starts)."""
        with self._lock:
            room_rules.attend(self._room(room), follower, self.clock(), self.max_followers, hold)

    def leave(self, room: str, follower: str) -> None:
        """A follower's stream closed: its seat is kept GRACE_S more (a reload comes back to it)."""
        with self._lock:
            if room in self._rooms:
                room_rules.leave(self._rooms[room], follower, self.clock())

    def resolve(self, code_or_room: str, client: str = "") -> str:
        """The room id a short code (or a room id) names; unknown codes count against `client`'s guesses."""
        with self._lock:
            self._expire()
            return self._resolve(code_or_room, client)

    def answer(self, room: str, follower: str, round_: int, guess: int, part=None) -> RoomView:
        """A follower's answer for a round of the trace on screen, from 0 to the most that round's quiz offers: the
        latest counts, and it may change until the round's first reveal. `part`: the room's part the follower's page
        holds (None: not said); one from before a move is refused, so it never counts for the new trace."""
        with self._lock:
            r = self._room(room)
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

    # --- inside ---------------------------------------------------------------------------------------------

    @property
    def _idle_hours(self) -> str:
        hours = self.idle_s / 3600
        return f"{hours:g} idle hour{'s' * (hours != 1)}"

    def _lecturers(self, room, key, refusal: str) -> Room:
        """The room, if `key` is its lecturer's key; else RoomError(refusal)."""
        r = self._room(room)
        room_rules.check_key(r, key, refusal)
        return r

    def _room(self, room) -> Room:
        self._expire()
        r = self._rooms.get(room) if isinstance(room, str) else None
        if r is None:
            raise RoomError("this room does not exist or has closed (rooms close after a few idle hours); ask the "
                            "lecturer for the current link or code", 404)
        return r

    def _resolve(self, code_or_room, client: str) -> str:
        text = code_or_room.strip() if isinstance(code_or_room, str) else ""
        code = "".join(text.split()).replace("-", "").upper()
        room = text if text in self._rooms else self._codes.get(code)
        if room is not None:
            return room
        if len(text) > 2 * CODE_LENGTH:  # a room id (a link), not a code typed in: 128 bits are not guessed
            raise RoomError("this room does not exist or has closed (rooms close after a few idle hours); ask the "
                            "lecturer for the current link or code", 404)
        if not is_code(code):
            raise RoomError(f"{text[:12]!r} is not a room code: a code is {CODE_LENGTH} characters, digits 2–9 and "
                            f"letters but I, L and O; check it on the projector", 404)
        self.guesses.miss(client, self.clock())
        raise RoomError(f"no open room has the code {code!r} (a room closes after {self._idle_hours}); "
                        f"check the code on the projector", 404)

    def _new_code(self) -> str:
        while True:
            code = with_check("".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_RANDOM)))
            if code not in self._codes:
                return code

    def _expire(self) -> None:
        now = self.clock()
        for room in [k for k, r in self._rooms.items() if now - r.touched > self.idle_s]:
            self._codes.pop(self._rooms.pop(room).code, None)
        self.guesses.trim()

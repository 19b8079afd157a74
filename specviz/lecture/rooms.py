"""Rooms: one lecturer drives a trace, many students follow it and answer the quiz (issue 23). This module is the
room's state and its rules, with no web framework: the page (app/) serves it.

    store = RoomStore()
    opened = store.open(trace_json, quiz_facts(trace))   # OpenedRoom: room id, short code, the lecturer's key
    room, follower = store.join(opened.code)              # a student: a follower id (their answers are theirs alone)
    store.drive(opened.room, opened.key, round_=3, step=0, quiz=True)
    store.answer(opened.room, follower, round_=3, guess=2)
    store.view(opened.room)                              # what every follower sees: the round, the step, counts

Bounded and safe by construction: room ids and lecturer keys are 128 random bits (`secrets`), the short code only an
alias that a client may miss a few times before it must wait; at most MAX_ROOMS rooms and MAX_FOLLOWERS followers a
room; a room idle for IDLE_S is gone; one answer per follower per round, taken only while the round is on the
lecturer's screen in quiz mode and nothing of it is revealed; nothing one follower sends reaches another but the
counts, and those only once the round is revealed. Every refusal is a RoomError with a sentence for a person.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Callable

from specviz.settings.bounds import whole_number
from specviz.view.room import QuizFacts

MAX_ROOMS = 50  # rooms at once on one server: each holds its trace (at most record.trace.MAX_TRACE_BYTES)
MAX_FOLLOWERS = 300  # followers a room (a lecture hall of 100 with room to spare)
IDLE_S = 4 * 3600  # a room nobody drove or joined for this long is closed
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L: read off a projector
CODE_LENGTH = 6  # 31^6 ≈ 8.9e8 codes: guessing one of 50 rooms takes ~1.8e7 tries, and MISSES_ALLOWED stops that
MISSES_ALLOWED, MISS_WINDOW_S = 10, 60.0  # a client may name unknown codes this often a minute, then must wait
MISSES_ALLOWED_ALL = 600  # and all clients together this often a minute (a client's address can be forged)


class RoomError(ValueError):
    """A room request refused, with what to tell the person. `status`: the HTTP status the page answers with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class OpenedRoom:
    room: str  # the room's id (in the join link)
    code: str  # the short code shown on the projector, an alias of `room`
    key: str  # the lecturer's key: only its holder drives the room; never shown to students


@dataclass
class Room:
    trace_json: str  # the trace, sent once to each follower
    facts: QuizFacts  # per round: the largest answer, the right one, the reveal steps
    key: str
    code: str
    round_: int = 1
    step: int = 0  # reveal steps shown in this round
    quiz: bool = False
    version: int = 0  # bumped on every change a follower must see
    followers: set[str] = field(default_factory=set)
    answers: dict[int, dict[str, int]] = field(default_factory=dict)  # round -> follower -> guess
    reached: dict[int, int] = field(default_factory=dict)  # round -> the reveal step the lecturer left it at
    touched: float = 0.0


@dataclass(frozen=True)
class RoomView:
    """What every follower of a room sees (no follower's identity, no lecturer key)."""

    round_: int
    step: int
    quiz: bool
    version: int
    followers: int  # joined so far
    answered: int  # followers who answered the round on screen
    reached: dict[int, int]  # round -> reveal steps shown (a follower stepping back sees what the class saw)
    revealed: dict[int, dict[int, int]]  # for each round revealed to its last step: answer -> how many gave it


class RoomStore:
    """Every room of one server, behind one lock. `clock` is injectable so tests need not wait hours."""

    def __init__(self, max_rooms: int = MAX_ROOMS, max_followers: int = MAX_FOLLOWERS, idle_s: float = IDLE_S,
                 clock: Callable[[], float] = time.monotonic):
        self.max_rooms, self.max_followers, self.idle_s, self.clock = max_rooms, max_followers, idle_s, clock
        self._rooms: dict[str, Room] = {}
        self._codes: dict[str, str] = {}  # short code -> room id
        self._misses: dict[str, deque] = {}  # client -> times it named an unknown code
        self._misses_all: deque = deque()  # every client's, for the limit on all of them
        self._lock = threading.Lock()

    # --- the lecturer -------------------------------------------------------------------------------------------

    @property
    def rooms(self) -> int:
        with self._lock:
            self._expire()
            return len(self._rooms)

    def open(self, trace_json: str, facts: QuizFacts) -> OpenedRoom:
        """A new room on a trace (already checked by record.load), with its rounds' facts (view.room.quiz_facts)."""
        if not facts.rounds:
            raise RoomError("a room needs a trace with at least one round")
        with self._lock:
            self._expire()
            if len(self._rooms) >= self.max_rooms:
                raise RoomError(f"this server holds {self.max_rooms} rooms already; try again when one closes "
                                f"(a room closes after {self._idle_hours})", 503)
            room, key = secrets.token_urlsafe(16), secrets.token_urlsafe(16)  # 128 bits each
            code = self._new_code()
            self._rooms[room] = Room(trace_json, facts, key, code, touched=self.clock())
            self._codes[code] = room
            return OpenedRoom(room, code, key)

    def drive(self, room: str, key: str, round_: int, step: int = 0, quiz: bool | None = None) -> RoomView:
        """Move the room to `round_` (1-based) and reveal `step`; only the lecturer's key may."""
        with self._lock:
            r = self._lecturers(room, key, "only the lecturer who opened this room can move it; followers step on "
                                            "their own and press Follow to come back")
            r.round_ = _whole(round_, 1, len(r.facts.rounds), "round")
            r.step = _whole(step, 0, r.facts.rounds[r.round_ - 1].steps, f"reveal step of round {r.round_}")
            r.quiz = r.quiz if quiz is None else bool(quiz)
            if r.step:
                r.reached[r.round_] = r.step
            r.version += 1
            r.touched = self.clock()
            return self._view(r)

    # --- the followers ------------------------------------------------------------------------------------------

    def join(self, code_or_room: str, client: str = "", follower: str | None = None) -> tuple[str, str]:
        """(the room's id, a follower id) for a short code or a room id; `client` (an address) is what the
        guessing limit counts. `follower`: the id this browser had (a reconnect keeps its answers)."""
        with self._lock:
            self._expire()
            room = self._resolve(code_or_room, client)
            r = self._rooms[room]
            r.touched = self.clock()
            if isinstance(follower, str) and follower in r.followers:
                return room, follower
            if len(r.followers) >= self.max_followers:
                raise RoomError(f"this room is full ({self.max_followers} followers); watch the projector, or ask "
                                f"the lecturer to open a second room", 503)
            follower = secrets.token_urlsafe(12)
            r.followers.add(follower)
            return room, follower

    def resolve(self, code_or_room: str, client: str = "") -> str:
        """The room id a short code (or a room id) names; unknown codes count against `client`'s guesses."""
        with self._lock:
            self._expire()
            return self._resolve(code_or_room, client)

    def answer(self, room: str, follower: str, round_: int, guess: int) -> RoomView:
        """A follower's answer for a round: once, from 0 to the most that round's quiz offers."""
        with self._lock:
            r = self._room(room)
            if follower not in r.followers:
                raise RoomError("join the room before answering")
            round_ = _whole(round_, 1, len(r.facts.rounds), "round")
            guess = _whole(guess, 0, r.facts.rounds[round_ - 1].most, "answer")
            given = r.answers.get(round_, {})
            if follower in given:
                raise RoomError(f"you answered round {round_} already ({given[follower]}); one answer a round", 409)
            _check_open(r, round_)
            r.answers.setdefault(round_, {})[follower] = guess
            r.version += 1
            return self._view(r)

    def mine(self, room: str, follower: str) -> dict[int, int]:
        """One follower's own answers, round -> guess (to restore their page after a reconnect)."""
        with self._lock:
            r = self._room(room)
            return {n: given[follower] for n, given in r.answers.items() if follower in given}

    def view(self, room: str) -> RoomView:
        with self._lock:
            return self._view(self._room(room))

    def trace_json(self, room: str) -> str:
        with self._lock:
            return self._room(room).trace_json

    def facts(self, room: str) -> QuizFacts:
        with self._lock:
            return self._room(room).facts

    def lead(self, room: str, key: str) -> tuple[RoomView, str]:
        """(the room's state, its short code) for its lecturer reopening it (a lecturer's link), if `key` is theirs."""
        with self._lock:
            r = self._lecturers(room, key, "this lecturer link's key does not open this room; use the link you "
                                           "copied when the room was opened")
            r.touched = self.clock()
            return self._view(r), r.code

    # --- inside ---------------------------------------------------------------------------------------------

    @property
    def _idle_hours(self) -> str:
        hours = self.idle_s / 3600
        return f"{hours:g} idle hour{'s' * (hours != 1)}"

    def _view(self, r: Room) -> RoomView:
        revealed = {n: dict(Counter(r.answers.get(n, {}).values())) for n, step in r.reached.items()
                    if step >= r.facts.rounds[n - 1].steps}
        return RoomView(r.round_, r.step, r.quiz, r.version, len(r.followers), len(r.answers.get(r.round_, {})),
                        dict(r.reached), revealed)

    def _lecturers(self, room, key, refusal: str) -> Room:
        """The room, if `key` is its lecturer's key (compared in constant time); else RoomError(refusal)."""
        r = self._room(room)
        if not isinstance(key, str) or not secrets.compare_digest(key.encode(), r.key.encode()):
            raise RoomError(refusal, 403)
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
        room = text if text in self._rooms else self._codes.get(text.upper())
        if room is not None:
            return room
        now, mine, everyone = self.clock(), self._misses.setdefault(client, deque()), self._misses_all
        for misses in (mine, everyone):
            while misses and now - misses[0] > MISS_WINDOW_S:
                misses.popleft()
        if len(mine) >= MISSES_ALLOWED or len(everyone) >= MISSES_ALLOWED_ALL:
            raise RoomError("too many unknown codes; wait a minute and check the code on the projector", 429)
        mine.append(now)
        everyone.append(now)
        raise RoomError(f"no open room has the code {text[:12]!r} (a room closes after {self._idle_hours}); "
                        f"check the code on the projector", 404)

    def _new_code(self) -> str:
        while True:
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            if code not in self._codes:
                return code

    def _expire(self) -> None:
        now = self.clock()
        for room in [k for k, r in self._rooms.items() if now - r.touched > self.idle_s]:
            self._codes.pop(self._rooms.pop(room).code, None)
        if len(self._misses) > 10_000:  # a bounded memory of who guessed
            self._misses.clear()


def _check_open(r: Room, round_: int) -> None:
    """Answers are taken for the round on the lecturer's screen, in quiz mode, before its first reveal."""
    if not r.quiz:
        raise RoomError("the quiz is not open: answers are taken once the lecturer turns quiz mode on", 409)
    if round_ != r.round_:
        raise RoomError(f"answers are open for round {r.round_}, the one on the lecturer's screen, not round "
                        f"{round_}", 409)
    if r.reached.get(round_, 0) > 0:
        raise RoomError(f"answers for round {round_} closed when the lecturer began revealing it", 409)


def _whole(value, low: int, high: int, what: str) -> int:
    """settings.bounds.whole_number, but JSON numbers only: a room's requests send numbers, never "3"."""
    number = None if isinstance(value, str) else whole_number(value)
    if number is None:
        raise RoomError(f"the {what} must be a whole number from {low} to {high}, got {str(value)[:20]!r}")
    if not low <= number <= high:
        raise RoomError(f"the {what} must be from {low} to {high}, got {number}")
    return number

"""Rooms: one lecturer drives a trace, many students follow it and answer the quiz (issue 23). This module is the
room's state and its rules, with no web framework: the page (app/) serves it.

    store = RoomStore()
    opened = store.open(trace_json, quiz_facts(trace), trace_title(trace))  # room id, short code, lecturer's key
    room, follower = store.join(opened.code)              # a student: a follower id (their answers are theirs alone)
    store.drive(opened.room, opened.key, round_=3, step=0, quiz=True, trace=opened.trace)
    store.answer(opened.room, follower, round_=3, guess=2)
    store.view(opened.room)                              # what every follower sees: the round, the step, counts

Bounded and safe by construction: room ids and lecturer keys are 128 random bits (`secrets`), the short code only an
alias whose last character checks the others (a typo is told at once and is not a guess) and that a client may miss
a few times before it must wait; at most MAX_ROOMS rooms; at most MAX_FOLLOWERS seats a room, a seat held while its
follower's stream is open and GRACE_S after (a reload keeps it; the seats' rules are lecture/seats.py's); a room idle
for IDLE_S is gone; one answer per
follower per round, which they may change while the round is on the lecturer's screen in quiz mode and nothing of it
is revealed; nothing one follower sends reaches another but the counts, and those only once the round is revealed.
Every refusal is a RoomError with a sentence for a person.

What a follower may hold of each round (issue 44) is kept here too, as each round's form (record/quiz_data.py's
follower_forms: nothing, the quiz form with the steps revealed so far, or the round in full) and the room version at
which it last changed, so the page and the stream send a round again only when its form changes. A room knows which
trace it is on (`trace_id`, a hash of its JSON, and a title); a drive names the trace its page shows, and one for
another trace is refused, so a lecturer's page left on an old trace never moves the room.

Results across a lecture (issue 55, item 7): answers and reveals are kept per trace (lecture/showings.py, the last
MAX_TRACES a room showed). A room moved to another trace starts its answers afresh; moved back to one it keeps, it
resumes it as the class left it (a lecturer coming back means to go on, not to ask again); the results list every
trace kept under its title. An answer naming an earlier `part` (a page left on the trace before) is refused.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from specviz.lecture.results import TraceResults
from specviz.lecture.room_codes import CODE_ALPHABET, CODE_LENGTH, CODE_RANDOM, is_code, with_check
from specviz.lecture.room_trace import trace_id
from specviz.lecture.seats import GRACE_S, MAX_FOLLOWERS, Seat, forget_gone, present, take_seat
from specviz.lecture.showings import MAX_TRACES, Showing, forget, results_of, show
from specviz.record.quiz_data import QuizFacts, follower_forms
from specviz.settings.bounds import whole_number

MAX_ROOMS = 50  # rooms at once on one server: each holds its trace (at most record.trace.MAX_TRACE_BYTES)
IDLE_S = 4 * 3600  # a room nobody drove or joined for this long is closed
MISSES_ALLOWED, MISS_WINDOW_S = 10, 60.0  # a client may name well-formed unknown codes this often a minute
MISSES_ALLOWED_ALL = 60  # and all clients together this often a minute (a client's address can be forged)


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
    trace: str = ""  # trace_id of the trace it was opened on: its lecturer's drives name it


@dataclass
class Room:
    trace_json: str  # the trace on screen, sent once to each follower
    key: str
    code: str
    trace_id: str  # trace_id(trace_json): what a drive must name, and its Showing in `traces`
    traces: dict[str, Showing]  # trace_id -> what the class did with it, the least recently shown first
    round_: int = 1
    step: int = 0  # reveal steps shown in this round
    quiz: bool = False
    leading: bool = True  # False once the lecturer's page has left the room's trace (followers are told)
    part: int = 1  # the room's trace: 1, then one more each time the lecturer moves the room to another
    version: int = 0  # bumped on every change a follower must see
    seats: dict[str, Seat] = field(default_factory=dict)  # follower id -> its seat, held or not
    forms: dict[int, int] = field(default_factory=dict)  # round -> what a follower may hold of it (follower_forms)
    changed: dict[int, int] = field(default_factory=dict)  # round -> the version at which its form last changed
    touched: float = 0.0
    dropped: int = 0  # traces whose results were dropped to keep MAX_TRACES

    @property
    def now(self) -> Showing:
        """The trace on screen: its answers, reveals and facts."""
        return self.traces[self.trace_id]

    @property
    def facts(self) -> QuizFacts:
        return self.now.facts


@dataclass(frozen=True)
class RoomView:
    """What every follower of a room sees (no follower's identity, no lecturer key)."""

    round_: int
    step: int
    quiz: bool
    version: int
    followers: int  # seats held now: followers present, or gone less than GRACE_S ago
    answered: int  # answers to the round on screen
    reached: dict[int, int]  # round -> reveal steps shown (a follower stepping back sees what the class saw)
    revealed: dict[int, dict[int, int]]  # for each round revealed to its last step: answer -> how many gave it
    leading: bool = True
    part: int = 1
    trace: str = ""  # the room's trace_id, and its title
    title: str = ""
    forms: dict[int, int] = field(default_factory=dict)  # round -> its form on a follower's page (follower_forms)
    changed: dict[int, int] = field(default_factory=dict)  # round -> the version at which that form was reached

    @property
    def forms_version(self) -> int:
        """The version of the last change of any round's form: a page built now holds every form up to it."""
        return max(self.changed.values(), default=0)


class RoomStore:
    """Every room of one server, behind one lock. `clock` is injectable so tests need not wait hours."""

    def __init__(self, max_rooms: int = MAX_ROOMS, max_followers: int = MAX_FOLLOWERS, idle_s: float = IDLE_S,
                 clock: Callable[[], float] = time.monotonic, max_traces: int = MAX_TRACES):
        self.max_rooms, self.max_followers, self.idle_s, self.clock = max_rooms, max_followers, idle_s, clock
        self.max_traces = max_traces
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

    def open(self, trace_json: str, facts: QuizFacts, title: str = "the room's trace") -> OpenedRoom:
        """A new room on a trace (already checked by record.load), with its rounds' facts (quiz_facts) and its title
        (trace_title)."""
        _check_facts(facts)
        with self._lock:
            self._expire()
            if len(self._rooms) >= self.max_rooms:
                raise RoomError(f"this server holds {self.max_rooms} rooms already; try again when one closes "
                                f"(a room closes after {self._idle_hours})", 503)
            room, key = secrets.token_urlsafe(16), secrets.token_urlsafe(16)  # 128 bits each
            code = self._new_code()
            tid = trace_id(trace_json)
            r = self._rooms[room] = Room(trace_json, key, code, tid, {tid: Showing(facts, title)}, touched=self.clock())
            self._codes[code] = room
            self._reform(r)
            return OpenedRoom(room, code, key, r.trace_id)

    def drive(self, room: str, key: str, round_: int, step: int = 0, quiz: bool | None = None,
              leading: bool | None = None, *, trace) -> RoomView:
        """Move the room to `round_` (1-based) and reveal `step`; only the lecturer's key may, and only from a page
        that shows the room's trace (`trace`: the trace_id it shows). `leading`: False while the lecturer's page
        shows another trace (the room stays where it is, and says so)."""
        with self._lock:
            r = self._lecturers(room, key, "only the lecturer who opened this room can move it; followers step on "
                                            "their own and press Follow to come back")
            _check_trace(r, trace)
            number = _whole(round_, 1, len(r.facts.rounds), "round")
            r.step = _whole(step, 0, r.facts.rounds[number - 1].steps, f"reveal step of round {number}")
            r.round_ = number
            r.quiz = r.quiz if quiz is None else _flag(quiz, "quiz")
            r.leading = r.leading if leading is None else _flag(leading, "leading")
            now = r.now
            if r.step:  # never fewer than shown before: a phone keeps what it was sent
                now.reached[number] = max(now.reached.get(number, 0), r.step)
            now.shown.add(number)  # on the room's screen now: visible to followers; with quiz mode off, released
            if not r.quiz:
                now.released.add(number)
            return self._changed(r)

    def retrace(self, room: str, key: str, trace_json: str, facts: QuizFacts,
                title: str = "the room's trace") -> RoomView:
        """Move the room to another trace (the one on the lecturer's screen): round 1, quiz off. A trace new to the
        room starts with no answers; one it showed before (the same trace_id) and still keeps resumes its answers and
        reveals. The earlier trace's stay for the results; past `max_traces` the least recently shown is dropped."""
        _check_facts(facts)
        with self._lock:
            r = self._lecturers(room, key, "only the lecturer who opened this room can move it to another trace")
            r.trace_json, r.part, r.leading = trace_json, r.part + 1, True
            r.trace_id = trace_id(trace_json)
            r.dropped += show(r.traces, r.trace_id, facts, title, r.part, self.max_traces)
            r.round_, r.step, r.quiz = 1, 0, False
            r.forms, r.changed = {}, {}  # every round's form anew: the followers' pages reload on the new part
            return self._changed(r)

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

    # --- the followers ------------------------------------------------------------------------------------------

    def join(self, code_or_room: str, client: str = "", follower: str | None = None) -> tuple[str, str]:
        """(the room's id, a follower id) for a short code or a room id, and a seat for GRACE_S (its stream then
        holds it); `client` (an address) is what the guessing limit counts. `follower`: the id this browser had
        (a reload keeps its seat and its answers)."""
        with self._lock:
            self._expire()
            room = self._resolve(code_or_room, client)
            r = self._rooms[room]
            r.touched = self.clock()
            if not (isinstance(follower, str) and follower in r.seats):
                follower = secrets.token_urlsafe(12)
            self._seat(r, follower).since = self.clock()
            self._forget_gone(r)
            r.version += 1
            return room, follower

    def attend(self, room: str, follower, hold: bool = True) -> None:
        """A follower's stream opened: its seat is held while the stream is open (`hold` False: only the check
        that it may, made before the stream starts)."""
        with self._lock:
            r = self._room(room)
            if not isinstance(follower, str) or follower not in r.seats:
                raise RoomError("join the room before following it (reload the page)", 403)
            seat = self._seat(r, follower)
            if hold:
                seat.stream_opened()
                r.version += 1

    def leave(self, room: str, follower: str) -> None:
        """A follower's stream closed: its seat is kept GRACE_S more (a reload comes back to it)."""
        with self._lock:
            seat = self._rooms[room].seats.get(follower) if room in self._rooms else None
            if seat is not None:
                seat.stream_closed(self.clock())

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
            if not isinstance(follower, str) or follower not in r.seats:
                raise RoomError("join the room before answering", 403)
            if part is not None and _whole(part, 1, r.part, "part (the room's trace your page holds)") != r.part:
                raise RoomError("the lecturer moved the room to another trace: your page reloads with it (this "
                                "answer was not counted)", 409)
            round_ = _whole(round_, 1, len(r.facts.rounds), "round")
            guess = _whole(guess, 0, r.facts.rounds[round_ - 1].most, "answer")
            _check_open(r, round_)
            r.now.answers.setdefault(round_, {})[follower] = guess
            r.version += 1
            return self._view(r)

    def mine(self, room: str, follower: str) -> dict[int, int]:
        """One follower's own answers to the trace on screen, round -> guess (to restore their page after a
        reconnect)."""
        with self._lock:
            r = self._room(room)
            return {n: given[follower] for n, given in r.now.answers.items() if follower in given}

    def view(self, room: str) -> RoomView:
        with self._lock:
            return self._view(self._room(room))

    def trace_json(self, room: str) -> tuple[str, int]:
        """(the room's trace, its part: which trace of the room it is)."""
        with self._lock:
            r = self._room(room)
            return r.trace_json, r.part

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

    def check_key(self, room: str, key) -> None:
        """RoomError unless `key` is the room's lecturer key (a lecturer's page following its own room)."""
        with self._lock:
            self._lecturers(room, key, "only the lecturer's page follows a room without joining it")

    # --- inside ---------------------------------------------------------------------------------------------

    @property
    def _idle_hours(self) -> str:
        hours = self.idle_s / 3600
        return f"{hours:g} idle hour{'s' * (hours != 1)}"

    def _changed(self, r: Room) -> RoomView:
        r.version += 1
        r.touched = self.clock()
        self._reform(r)
        return self._view(r)

    @staticmethod
    def _reform(r: Room) -> None:
        """Each round's form on a follower's page; a round whose form changed is marked with the room's version, so
        the streams send it again."""
        now = r.now
        forms = follower_forms([f.steps for f in now.facts.rounds], now.reached, now.released, now.shown)
        for number, form in forms.items():
            if r.forms.get(number) != form:
                r.changed[number] = r.version
        r.forms = forms

    def _view(self, r: Room) -> RoomView:
        now = r.now
        revealed = {n: dict(now.counts(n)) for n, step in now.reached.items() if step >= now.facts.rounds[n - 1].steps}
        return RoomView(r.round_, r.step, r.quiz, r.version, present(r.seats, self.clock()),
                        sum(now.counts(r.round_).values()), dict(now.reached), revealed, r.leading, r.part,
                        r.trace_id, now.title, dict(r.forms), dict(r.changed))

    def _seat(self, r: Room, follower: str) -> Seat:
        """`follower`'s seat, held; RoomError if it had none held and every seat is taken."""
        seat = take_seat(r.seats, follower, self.clock(), self.max_followers)
        if seat is None:
            raise RoomError(f"this room is full ({self.max_followers} people following it now); watch the "
                            f"projector and try again in a minute, or ask the lecturer to open a second room", 503)
        return seat

    def _forget_gone(self, r: Room) -> None:
        """The followers gone longest lose their seats (seats.forget_gone); their answers stay in the counts of
        every trace kept, without their id."""
        for follower in forget_gone(r.seats, self.clock()):
            forget(r.traces, follower)

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
        self._count_miss(client)
        raise RoomError(f"no open room has the code {code!r} (a room closes after {self._idle_hours}); "
                        f"check the code on the projector", 404)

    def _count_miss(self, client: str) -> None:
        """A well-formed code that names no room: a guess, or a code from a closed room. Too many: "wait"."""
        now, mine, everyone = self.clock(), self._misses.setdefault(client, deque()), self._misses_all
        for misses in (mine, everyone):
            while misses and now - misses[0] > MISS_WINDOW_S:
                misses.popleft()
        if len(mine) >= MISSES_ALLOWED or len(everyone) >= MISSES_ALLOWED_ALL:
            raise RoomError("too many unknown codes; wait a minute and check the code on the projector", 429)
        mine.append(now)
        everyone.append(now)

    def _new_code(self) -> str:
        while True:
            code = with_check("".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_RANDOM)))
            if code not in self._codes:
                return code

    def _expire(self) -> None:
        now = self.clock()
        for room in [k for k, r in self._rooms.items() if now - r.touched > self.idle_s]:
            self._codes.pop(self._rooms.pop(room).code, None)
        if len(self._misses) > 10_000:  # a bounded memory of who guessed
            self._misses.clear()


def _check_facts(facts: QuizFacts) -> None:
    if not facts.rounds:
        raise RoomError("a room needs a trace with at least one round")


def _check_trace(r: Room, trace) -> None:
    """A drive must come from a page that shows the room's trace: one left on another moves nothing."""
    if not isinstance(trace, str) or not trace:
        raise RoomError("a drive must name the trace its page shows (\"trace\": the id the room gave it); "
                        "reload the lecturer's page")
    if not secrets.compare_digest(trace.encode(), r.trace_id.encode()):
        raise RoomError(f"the room is on {r.now.title}, not on the trace this page shows: move the room here, or "
                        f"follow the room (this page's steps do not move it)", 409)


def _check_open(r: Room, round_: int) -> None:
    """Answers are taken for the round on the lecturer's screen, in quiz mode, before its first reveal."""
    if not r.quiz:
        raise RoomError("the quiz is not open: answers are taken once the lecturer turns quiz mode on", 409)
    if round_ != r.round_:
        raise RoomError(f"answers are open for round {r.round_}, the one on the lecturer's screen, not round "
                        f"{round_}", 409)
    if r.now.reached.get(round_, 0) > 0:
        raise RoomError(f"answers for round {round_} closed when the lecturer began revealing it", 409)


def _flag(value, what: str) -> bool:
    """A JSON boolean, never "false" or 0 (which would read as a choice nobody made)."""
    if not isinstance(value, bool):
        raise RoomError(f"{what} must be true or false, got {str(value)[:20]!r}")
    return value


def _whole(value, low: int, high: int, what: str) -> int:
    """settings.bounds.whole_number, but JSON numbers only: a room's requests send numbers, never "3"."""
    number = None if isinstance(value, str) else whole_number(value)
    if number is None:
        raise RoomError(f"the {what} must be a whole number from {low} to {high}, got {str(value)[:20]!r}")
    if not low <= number <= high:
        raise RoomError(f"the {what} must be from {low} to {high}, got {number}")
    return number

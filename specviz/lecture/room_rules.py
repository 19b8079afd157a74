"""The rules of one room: what each request does to a Room (lecture/room_state.py), given the time. No lock and no
store: a room store (lecture/rooms.py) finds the room, holds its lock, and calls these, so any store keeps one copy
of the rules.

    r = new_room(trace_json, facts, title, code, now)  # its lecturer's key drawn here; every round's form worked out
    check_key(r, key, "only the lecturer who opened this room can move it")  # compared in constant time
    drive(r, round_=3, step=0, quiz=True, leading=None, trace=r.trace_id)
    changed(r, now)                                     # a new version: -> the RoomView every follower sees
    follower = join(r, None, now, most=300)             # a new follower id, its seat held
    answer(r, follower, round_=3, guess=2, part=None)

One answer per follower per round, which they may change while the round is on the lecturer's screen in quiz mode
and nothing of it is revealed; nothing one follower sends reaches another but the counts, and those only once the
round is revealed. A drive names the trace its page shows, and one for another trace is refused, so a lecturer's page
left on an old trace never moves the room. Results across a lecture (issue 55, item 7): answers and reveals are kept
per trace (lecture/showings.py). A room moved to another trace starts its answers afresh; moved back to one it keeps,
it resumes it as the class left it (a lecturer coming back means to go on, not to ask again). An answer naming an
earlier `part` (a page left on the trace before) is refused. Every refusal is a RoomError with a sentence for a
person.
"""

from __future__ import annotations

import secrets

from specviz.lecture.room_state import Room, RoomError, RoomView
from specviz.lecture.seats import Seat, forget_gone, present, take_seat
from specviz.lecture.showings import Showing, forget, show, trace_id
from specviz.record.quiz_data import QuizFacts, follower_forms
from specviz.settings.bounds import whole_number

# --- the lecturer ---------------------------------------------------------------------------------------------------

def new_room(trace_json: str, facts: QuizFacts, title: str, code: str, now: float) -> Room:
    """A room on a trace (already checked by record.load, its facts by check_facts) under short code `code`, with a
    lecturer's key of 128 random bits."""
    tid = trace_id(trace_json)
    r = Room(trace_json, secrets.token_urlsafe(16), code, tid, {tid: Showing(facts, title)}, touched=now)
    _reform(r)
    return r


def drive(r: Room, round_: int, step: int, quiz: bool | None, leading: bool | None, trace) -> None:
    """Move the room to `round_` (1-based) and reveal `step`, from a page that shows the room's trace (`trace`: the
    trace_id it shows). `quiz`, `leading`: None keeps them."""
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


def retrace(r: Room, trace_json: str, facts: QuizFacts, title: str, most: int) -> None:
    """Move the room to another trace: round 1, quiz off; past `most` traces kept the least recently shown is
    dropped (showings.show)."""
    r.trace_json, r.part, r.leading = trace_json, r.part + 1, True
    r.trace_id = trace_id(trace_json)
    r.dropped += show(r.traces, r.trace_id, facts, title, r.part, most)
    r.round_, r.step, r.quiz = 1, 0, False
    r.forms, r.changed = {}, {}  # every round's form anew: the followers' pages reload on the new part


def changed(r: Room, now: float) -> RoomView:
    """A change every follower must see: a new version, each round's form worked out again. -> the room's view."""
    r.version += 1
    r.touched = now
    _reform(r)
    return view_of(r, now)


def _reform(r: Room) -> None:
    """Each round's form on a follower's page; a round whose form changed is marked with the room's version, so
    the streams send it again."""
    now = r.now
    forms = follower_forms([f.steps for f in now.facts.rounds], now.reached, now.released, now.shown)
    for number, form in forms.items():
        if r.forms.get(number) != form:
            r.changed[number] = r.version
    r.forms = forms


def view_of(r: Room, now: float) -> RoomView:
    """What every follower sees at time `now`: counts only, and those only for rounds revealed to their last step."""
    on = r.now
    revealed = {n: dict(on.counts(n)) for n, step in on.reached.items() if step >= on.facts.rounds[n - 1].steps}
    return RoomView(r.round_, r.step, r.quiz, r.version, present(r.seats, now), sum(on.counts(r.round_).values()),
                    dict(on.reached), revealed, r.leading, r.part, r.trace_id, on.title, dict(r.forms),
                    dict(r.changed))


def check_key(r: Room, key, refusal: str) -> None:
    """RoomError(refusal) unless `key` is the room's lecturer key (compared in constant time)."""
    if not isinstance(key, str) or not secrets.compare_digest(key.encode(), r.key.encode()):
        raise RoomError(refusal, 403)


def check_facts(facts: QuizFacts) -> None:
    if not facts.rounds:
        raise RoomError("a room needs a trace with at least one round")


# --- the followers --------------------------------------------------------------------------------------------------

def join(r: Room, follower, now: float, most: int) -> str:
    """A follower in: `follower` if the room knows that id (a reload keeps its seat and its answers), else a new id;
    its seat held for GRACE_S (its stream then holds it). -> the follower's id."""
    r.touched = now
    if not (isinstance(follower, str) and follower in r.seats):
        follower = secrets.token_urlsafe(12)
    _seat(r, follower, now, most).since = now
    for gone in forget_gone(r.seats, now):  # the gone longest lose their seats; their answers stay in the counts
        forget(r.traces, gone)
    r.version += 1
    return follower


def attend(r: Room, follower, now: float, most: int, hold: bool, process: str = "") -> None:
    """A follower's stream opened in `process`: its seat is held while the stream is open (`hold` False: only the
    check that it may, made before the stream starts)."""
    _check_seated(r, follower, "join the room before following it (reload the page)")
    taken = _seat(r, follower, now, most)
    if hold:
        taken.stream_opened(process)
        r.version += 1


def leave(r: Room, follower: str, now: float, process: str = "") -> None:
    """A follower's stream in `process` closed: its seat is kept GRACE_S more from `now` (a reload comes back)."""
    taken = r.seats.get(follower)
    if taken is not None:
        taken.stream_closed(now, process)


def _seat(r: Room, follower: str, now: float, most: int) -> Seat:
    """`follower`'s seat, held; RoomError if it had none held and every seat (`most`) is taken."""
    taken = take_seat(r.seats, follower, now, most)
    if taken is None:
        raise RoomError(f"this room is full ({most} people following it now); watch the projector and try again in "
                        f"a minute, or ask the lecturer to open a second room", 503)
    return taken


def _check_seated(r: Room, follower, refusal: str) -> None:
    """RoomError(refusal) unless `follower` has joined the room (and was not forgotten since)."""
    if not isinstance(follower, str) or follower not in r.seats:
        raise RoomError(refusal, 403)


def answer(r: Room, follower: str, round_: int, guess: int, part=None) -> None:
    """A follower's answer for a round of the trace on screen, from 0 to the most that round's quiz offers. `part`:
    the room's part the follower's page holds (None: not said); one from before a move is refused."""
    _check_seated(r, follower, "join the room before answering")
    if part is not None and _whole(part, 1, r.part, "part (the room's trace your page holds)") != r.part:
        raise RoomError("the lecturer moved the room to another trace: your page reloads with it (this "
                        "answer was not counted)", 409)
    round_ = _whole(round_, 1, len(r.facts.rounds), "round")
    guess = _whole(guess, 0, r.facts.rounds[round_ - 1].most, "answer")
    _check_open(r, round_)
    r.now.answers.setdefault(round_, {})[follower] = guess
    r.version += 1


def mine(r: Room, follower: str) -> dict[int, int]:
    """One follower's own answers to the trace on screen, round -> guess."""
    return {n: given[follower] for n, given in r.now.answers.items() if follower in given}


# --- checks ---------------------------------------------------------------------------------------------------------

def _check_trace(r: Room, trace) -> None:
    """A drive must come from a page that shows the room's trace: one left on another moves nothing."""
    if not isinstance(trace, str) or not trace:
        raise RoomError("a drive must name the trace its page shows (\"trace\": the id the room gave it); "
                        "reload the lecturer's page")
    if not secrets.compare_digest(trace.encode(), r.trace_id.encode()):
        raise RoomError(f"the room is on {r.now.title}, not on the trace this page shows: move the room here, or "
                        f"follow the room (this page's steps do not move it)", 409)


def _check_open(r: Room, round_: int) -> None:
    """Answers are taken for the round on the lecturer's screen, in quiz mode, before its first reveal, and never for
    a round the room released before (shown with quiz mode off: its verdicts are on every phone)."""
    if not r.quiz:
        raise RoomError("the quiz is not open: answers are taken once the lecturer turns quiz mode on", 409)
    if round_ != r.round_:
        raise RoomError(f"answers are open for round {r.round_}, the one on the lecturer's screen, not round "
                        f"{round_}", 409)
    if r.now.reached.get(round_, 0) > 0:
        raise RoomError(f"answers for round {round_} closed when the lecturer began revealing it", 409)
    if round_ in r.now.released:  # shown with quiz mode off: every phone holds its verdicts (issue 64, item 2)
        raise RoomError(f"round {round_} was shown with quiz mode off, so the class has seen how it ends: answers "
                        f"to it are not counted", 409)


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

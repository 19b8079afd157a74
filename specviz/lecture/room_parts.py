"""What a request changed in a room, so a store writes that alone (issue 63): a join one seat, an answer one answer,
a drive the room's core, never the whole room. A store keeps, beside each room it holds, what it last wrote of it
(`Written`); after a rule of lecture/room_rules.py has changed the room, `changes` tells the pieces that differ
(lecture/room_json.py's texts) and what is written now. A process that shares the store catches up on another's
change by applying it to its copy (`applied`). The rules stay whole-room: only the writing is piecewise.

    before = written(r)                       # what the store holds of r
    room_rules.join(r, None, now, 300)        # one seat more
    change, before = changes(before, r)       # -> Change(core=..., seats={follower: "12.0 {}"}, answers={})
    r = applied(r_elsewhere, change)          # another process's copy, caught up
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specviz.lecture.room_json import answer_field, core_text, room_of, seat_from, seat_text, set_answer
from specviz.lecture.room_state import Room
from specviz.lecture.seats import Seat


@dataclass
class Change:
    """The pieces of a room a request changed: its core's text if it changed, and each seat and answer changed
    (None: gone, a follower forgotten)."""

    core: str | None = None
    seats: dict[str, str | None] = field(default_factory=dict)  # follower -> seat_text
    answers: dict[str, str | None] = field(default_factory=dict)  # answer_field -> the guess

    def __bool__(self) -> bool:
        return self.core is not None or bool(self.seats) or bool(self.answers)


@dataclass
class Written:
    """What a store last wrote of a room, in a form cheap to compare."""

    core: str
    seats: dict[str, tuple]  # follower -> (since, its streams)
    answers: dict[tuple, int]  # (trace, round, follower) -> guess


def written(r: Room) -> Written:
    return Written(core_text(r), {f: _seat_key(s) for f, s in r.seats.items()}, _answers(r))


def changes(before: Written | None, r: Room) -> tuple[Change, Written]:
    """(what of `r` differs from what was written (`before`; None: nothing yet), what is written once the change
    is)."""
    before = before or Written("", {}, {})
    now = written(r)
    change = Change(now.core if now.core != before.core else None)
    for f, key in now.seats.items():
        if before.seats.get(f) != key:
            change.seats[f] = seat_text(r.seats[f])
    change.seats.update({f: None for f in before.seats.keys() - now.seats.keys()})
    for (t, n, f), guess in now.answers.items():
        if before.answers.get((t, n, f)) != guess:
            change.answers[answer_field(t, n, f)] = str(guess)
    change.answers.update({answer_field(*a): None for a in before.answers.keys() - now.answers.keys()})
    return change, now


def applied(r: Room, change: Change, was: Written) -> Room:
    """Room `r` (its store's `was`, updated in place) with another process's `change`: a new Room if its core
    changed (its seats and its kept traces' answers carried over), else `r` changed in place. Its trace is `r`'s:
    the caller reads the new one if its trace_id changed."""
    if change.core is not None:
        new = room_of(change.core, r.trace_json, {}, {})
        new.seats = r.seats
        for t, showing in new.traces.items():
            if t in r.traces:
                showing.answers = r.traces[t].answers
        r, was.core = new, change.core
    for f, text in change.seats.items():
        if text is None:
            r.seats.pop(f, None)
            was.seats.pop(f, None)
        else:
            r.seats[f] = seat_from(text)
            was.seats[f] = _seat_key(r.seats[f])
    for name, guess in change.answers.items():
        set_answer(r, name, guess)
        t, n, f = name.split(" ")
        if guess is None:
            was.answers.pop((t, int(n), f), None)
        else:
            was.answers[(t, int(n), f)] = int(guess)
    return r


def _seat_key(seat: Seat) -> tuple:
    return seat.since, tuple(sorted(seat.streams.items()))


def _answers(r: Room) -> dict[tuple, int]:
    return {(t, n, f): g for t, s in r.traces.items() for n, given in s.answers.items() for f, g in given.items()}

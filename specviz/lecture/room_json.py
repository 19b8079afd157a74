"""A room as text: what a store that outlives its process keeps of one Room (lecture/room_state.py), in pieces a
request changes alone, so a join or an answer writes a few bytes, not the room (issue 63):

- its core (`core_text`): round, step, quiz, version, forms, each trace's facts and reveals: JSON, bounded by the
  traces' rounds whatever the room's size;
- one text a seat (`seat_text`), keyed by the follower's id;
- one text an answer (`answer_field` -> the guess), keyed by trace, round and follower;
- its trace apart (it changes only when the lecturer moves the room).

JSON's keys are strings: the rounds' numbers are read back as numbers, the sets as sets, so a room read back equals
the room written.

    text = room_text(r)                      # every piece in one JSON (everything but r.trace_json)
    room_from(text, r.trace_json) == r       # -> True
    room_of(core_text(r), r.trace_json, {f: seat_text(s) for f, s in r.seats.items()}, answers_text(r)) == r
"""

from __future__ import annotations

import json
from collections import Counter

from specviz.lecture.room_state import Room
from specviz.lecture.seats import Seat
from specviz.lecture.showings import Showing
from specviz.record.quiz_data import QuizFacts, RoundFacts

JSON = {"separators": (",", ":")}


def core_text(r: Room) -> str:
    """Room `r` as JSON, without its trace, its seats and its answers."""
    return json.dumps({
        "key": r.key, "code": r.code, "trace_id": r.trace_id, "round": r.round_, "step": r.step, "quiz": r.quiz,
        "leading": r.leading, "part": r.part, "version": r.version, "touched": r.touched, "dropped": r.dropped,
        "forms": r.forms, "changed": r.changed, "traces": {t: _showing_json(s) for t, s in r.traces.items()}}, **JSON)


def seat_text(seat: Seat) -> str:
    """`0.5 {"a1b2":1}`: when the seat was last taken or left, and its open streams by process."""
    return f"{seat.since!r} {json.dumps(seat.streams, **JSON)}"


def seat_from(text: str) -> Seat:
    since, streams = text.split(" ", 1)
    return Seat(json.loads(streams), float(since))


def answer_field(trace: str, number: int, follower: str) -> str:
    """An answer's name: `<trace_id> <round> <follower id>` (none of them holds a space)."""
    return f"{trace} {number} {follower}"


def answers_text(r: Room) -> dict[str, str]:
    """Every answer the room keeps by id, answer_field -> the guess."""
    return {answer_field(t, n, f): str(g) for t, s in r.traces.items() for n, given in s.answers.items()
            for f, g in given.items()}


def room_of(core: str, trace_json: str, seats: dict[str, str], answers: dict[str, str]) -> Room:
    """The Room of its pieces as written (answers of a trace the room no longer keeps left out)."""
    d = json.loads(core)
    r = Room(trace_json, d["key"], d["code"], d["trace_id"],
             {t: _showing_from(s) for t, s in d["traces"].items()},  # JSON keeps the order: least recent first
             d["round"], d["step"], d["quiz"], d["leading"], d["part"], d["version"],
             {f: seat_from(text) for f, text in seats.items()},
             _numbered(d["forms"]), _numbered(d["changed"]), d["touched"], d["dropped"])
    for field, guess in answers.items():
        set_answer(r, field, guess)
    return r


def set_answer(r: Room, field: str, guess: str | None) -> None:
    """Answer `field` given as `guess` (None: withdrawn, its follower forgotten) in room `r`."""
    trace, number, follower = field.split(" ")
    if trace in r.traces:
        given = r.traces[trace].answers.setdefault(int(number), {})
        if guess is None:
            given.pop(follower, None)
        else:
            given[follower] = int(guess)


def room_text(r: Room) -> str:
    """Room `r` as one JSON of its pieces, its trace left out."""
    return json.dumps({"core": core_text(r), "seats": {f: seat_text(s) for f, s in r.seats.items()},
                       "answers": answers_text(r)}, **JSON)


def room_from(text: str, trace_json: str) -> Room:
    """The Room room_text wrote, on its trace `trace_json`."""
    d = json.loads(text)
    return room_of(d["core"], trace_json, d["seats"], d["answers"])


def _showing_json(s: Showing) -> dict:
    return {"alpha": s.facts.alpha, "rounds": [[f.most, f.accepted, f.steps, f.tree, f.expected]
                                               for f in s.facts.rounds],
            "title": s.title, "first": s.first, "forgotten": {n: dict(c) for n, c in s.forgotten.items()},
            "reached": s.reached, "shown": sorted(s.shown), "released": sorted(s.released)}


def _showing_from(d: dict) -> Showing:
    facts = QuizFacts(d["alpha"], tuple(RoundFacts(*f) for f in d["rounds"]))
    return Showing(facts, d["title"], d["first"], {},
                   {int(n): Counter(_numbered(c)) for n, c in d["forgotten"].items()}, _numbered(d["reached"]),
                   set(d["shown"]), set(d["released"]))


def _numbered(d: dict) -> dict:
    """{"3": v} -> {3: v}: a dict keyed by round (or by answer) as JSON wrote it."""
    return {int(n): v for n, v in d.items()}

"""A room as JSON: what a store that outlives its process keeps of one Room (lecture/room_state.py), its trace apart
(the trace changes only when the lecturer moves the room; the rest with every join, answer and step). JSON's keys
are strings: the rounds' numbers are read back as numbers, the sets as sets, so a room read back equals the room
written.

    text = room_text(r)                      # everything but r.trace_json
    room_from(text, r.trace_json) == r       # -> True
"""

from __future__ import annotations

import json
from collections import Counter

from specviz.lecture.room_state import Room
from specviz.lecture.seats import Seat
from specviz.lecture.showings import Showing
from specviz.record.quiz_data import QuizFacts, RoundFacts


def room_text(r: Room) -> str:
    """Room `r` as JSON, its trace left out."""
    return json.dumps({
        "key": r.key, "code": r.code, "trace_id": r.trace_id, "round": r.round_, "step": r.step, "quiz": r.quiz,
        "leading": r.leading, "part": r.part, "version": r.version, "touched": r.touched, "dropped": r.dropped,
        "forms": r.forms, "changed": r.changed,
        "seats": {f: [seat.streams, seat.since] for f, seat in r.seats.items()},
        "traces": {t: _showing_json(s) for t, s in r.traces.items()}}, separators=(",", ":"))


def room_from(text: str, trace_json: str) -> Room:
    """The Room room_text wrote, on its trace `trace_json`."""
    d = json.loads(text)
    return Room(trace_json, d["key"], d["code"], d["trace_id"],
                {t: _showing_from(s) for t, s in d["traces"].items()},  # JSON keeps the order: least recent first
                d["round"], d["step"], d["quiz"], d["leading"], d["part"], d["version"],
                {f: Seat(streams, since) for f, (streams, since) in d["seats"].items()},
                _numbered(d["forms"]), _numbered(d["changed"]), d["touched"], d["dropped"])


def _showing_json(s: Showing) -> dict:
    return {"alpha": s.facts.alpha, "rounds": [[f.most, f.accepted, f.steps, f.tree, f.expected]
                                               for f in s.facts.rounds],
            "title": s.title, "first": s.first, "answers": s.answers,
            "forgotten": {n: dict(c) for n, c in s.forgotten.items()}, "reached": s.reached,
            "shown": sorted(s.shown), "released": sorted(s.released)}


def _showing_from(d: dict) -> Showing:
    facts = QuizFacts(d["alpha"], tuple(RoundFacts(*f) for f in d["rounds"]))
    return Showing(facts, d["title"], d["first"], _numbered(d["answers"]),
                   {int(n): Counter(_numbered(c)) for n, c in d["forgotten"].items()}, _numbered(d["reached"]),
                   set(d["shown"]), set(d["released"]))


def _numbered(d: dict) -> dict:
    """{"3": v} -> {3: v}: a dict keyed by round (or by answer) as JSON wrote it."""
    return {int(n): v for n, v in d.items()}

"""Moving a room to the trace on screen (specviz/app/room_panel.py: move_room, the "Move my room" button's handler,
public as /move_room): only with the room's own key, and bad input gets a sentence, never an exception."""

from __future__ import annotations

import json

import pytest

from specviz.app.room_panel import move_room
from specviz.app.room_hub import RoomHub
from specviz.lecture.examples import load_example
from specviz.lecture.rooms import Rooms
from specviz.lecture.room_trace import quiz_facts


@pytest.fixture
def hub():
    return RoomHub(Rooms(max_rooms=3))


def test_the_room_moves_with_its_key_only(hub):
    code, story = load_example("code"), load_example("story")
    opened = hub.rooms.open(code.to_json(), quiz_facts(code))
    other = hub.rooms.open(code.to_json(), quiz_facts(code))
    for lead in (None, 5, "not json", "[1]", json.dumps({"room": opened.room}), "x" * 5000,
                 json.dumps({"room": opened.room, "key": "forged"}),
                 json.dumps({"room": opened.room, "key": other.key}),  # another room's key
                 json.dumps({"room": ["x"], "key": opened.key}), json.dumps({"room": "nope", "key": opened.key})):
        box, status = move_room(hub, story, lead)
        assert "error" in status and hub.rooms.trace_json(opened.room) == (code.to_json(), 1), lead
    box, status = move_room(hub, None, json.dumps({"room": opened.room, "key": opened.key}))
    assert "Open a trace first" in status
    box, status = move_room(hub, story, json.dumps({"room": opened.room, "key": opened.key, "base": "http://h/"}))
    assert "now shows this trace" in status and 'data-part="2"' in box and opened.key in box
    assert hub.rooms.trace_json(opened.room) == (story.to_json(), 2)
    assert hub.rooms.trace_json(other.room)[1] == 1  # the other room is untouched

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


def _first_load(demo):
    """The page's first-load event (room_panel.open_linked), as the page wires it."""
    return next(fn for fn in demo.fns.values() if fn.targets and fn.targets[0][1] == "load" and fn.fn is not None)


def test_the_first_screen_leaves_a_setting_it_does_not_change_so_typed_text_stays(engine):
    """Text typed in the prompt box before the first screen's example landed was overwritten by the example's prompt,
    the same text the box opened with (issue 64, item 16). The first load reads the settings box as the page opened
    with it and writes only what the example changes: the prompt stays untouched, the example's temperature lands; a
    link to an example with another prompt writes that prompt (the person asked for it)."""
    from specviz.app.page import build_demo
    from specviz.app.trace_files import CONTROLS

    demo = build_demo(lambda preset, progress: engine, {"tiny": "Tiny"}, "tiny", hub=RoomHub(Rooms(max_rooms=3)))
    load = _first_load(demo)
    lecture, link, *shown = (component.value for component in load.inputs)  # what the browser sends at page load
    assert len(shown) == len(CONTROLS)
    controls = dict(zip(CONTROLS, load.inputs[2:]))
    plain = load.fn(lecture, "http://127.0.0.1:7860/", *shown)
    assert controls["prompt"] not in plain and controls["temperature"] in plain  # the code example is greedy
    assert load_example("code").prompt == controls["prompt"].value and plain[controls["temperature"]] == 0.0
    linked = load.fn(lecture, "http://127.0.0.1:7860/?example=paris", *shown)
    assert linked[controls["prompt"]] == load_example("paris").prompt

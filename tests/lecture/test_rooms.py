"""Rooms (specviz/lecture/rooms.py): the lecturer drives, followers follow and answer, and every bound holds with a
clear message: unguessable keys, a short code that cannot be guessed at speed (and whose typos are no guesses),
seats held only by followers present, idle rooms closing, one answer a round (changeable until the reveal), nothing
of one follower reaching another but the counts."""

import itertools
import json
import threading

import pytest

from specviz.lecture import seats
from specviz.lecture.results import results_csv, results_json
from specviz.lecture.room_codes import CODE_ALPHABET, CODE_LENGTH, is_code, with_check
from specviz.lecture.room_trace import round_facts
from specviz.lecture.code_guesses import MISSES_ALLOWED, MISSES_ALLOWED_ALL
from specviz.lecture.room_state import RoomError
from specviz.lecture.rooms import Rooms
from specviz.lecture.seats import GRACE_S
from specviz.lecture.showings import MAX_TRACES
from specviz.record.quiz_data import QuizFacts
from tests.helpers import STORES, Clock, room_store


def facts(*most: int) -> QuizFacts:
    """A trace's facts with rounds offering answers 0 … most (each accepting 1 of them, in 2 reveal steps)."""
    return QuizFacts(0.5, tuple(round_facts(0.5, m, min(m, 1), 2) for m in most))


@pytest.fixture(params=STORES)
def rooms(request, tmp_path):
    """The rooms of a server of three rooms, four seats a room, an hour's idle: in each store (the same rules)."""
    return Rooms(room_store(request.param, request, tmp_path), max_rooms=3, max_followers=4, idle_s=3600,
                 clock=Clock())


def test_the_lecturer_drives_and_followers_see_it(rooms):
    opened = rooms.open('{"trace": 1}', facts(0, 4, 4))
    assert len(opened.room) >= 22 and len(opened.key) >= 22  # 128 random bits each, url-safe
    assert len(opened.code) == CODE_LENGTH and set(opened.code) <= set(CODE_ALPHABET)
    room, follower = rooms.join(opened.code.lower())  # a code typed in lower case still works
    assert room == opened.room and rooms.trace_json(room) == ('{"trace": 1}', 1)
    before = rooms.view(room).version
    view = rooms.drive(room, opened.key, round_=3, step=2, quiz=True, trace=opened.trace)
    assert (view.round_, view.step, view.quiz, view.followers) == (3, 2, True, 1) and view.version > before
    assert view.reached == {3: 2}


def test_only_the_key_drives(rooms):
    opened = rooms.open("{}", facts(0, 4))
    room, follower = rooms.join(opened.room)
    for forged in (follower, "", None, opened.key[:-1] + "x", opened.code):
        with pytest.raises(RoomError, match="only the lecturer"):
            rooms.drive(room, forged, round_=2, trace=opened.trace)
    assert rooms.view(room).round_ == 1  # nothing moved


def test_answers_are_counted_once_and_never_named(rooms):
    opened = rooms.open("{}", facts(0, 4))
    room = opened.room
    alice, bob = rooms.join(room)[1], rooms.join(room)[1]
    rooms.drive(room, opened.key, round_=2, quiz=True, trace=opened.trace)
    rooms.answer(room, alice, 2, 3)
    view = rooms.answer(room, bob, 2, 1)
    assert view.answered == 2 and view.revealed == {}  # counted, but not shown before the round is revealed
    assert alice not in repr(view) and bob not in repr(view)  # a view carries counts, never who answered
    rooms.answer(room, alice, 2, 4)  # a mis-tap changed: the latest counts, once
    view = rooms.answer(room, alice, 2, 3)
    assert view.answered == 2
    for bad, message in ((5, "from 0 to 4"), (-1, "from 0 to 4"), (2.5, "whole number"), ("2", "whole number"),
                         (float("nan"), "whole number"), (True, "whole number"), (None, "whole number"),
                         ([1], "whole number")):
        with pytest.raises(RoomError, match=message):
            rooms.answer(room, alice, 2, bad)
    for forged in ("a-forged-follower", None, 7, ["x"]):
        with pytest.raises(RoomError, match="join the room"):
            rooms.answer(room, forged, 2, 1)
    assert rooms.mine(room, alice) == {2: 3} and rooms.mine(room, bob) == {2: 1}
    rooms.drive(room, opened.key, round_=2, step=1, trace=opened.trace)
    assert rooms.view(room).revealed == {}  # one step of two: not revealed yet
    view = rooms.drive(room, opened.key, round_=2, step=2, trace=opened.trace)
    assert view.revealed == {2: {3: 1, 1: 1}}


def test_answers_are_taken_only_for_the_round_on_screen_before_its_reveal(rooms):
    opened = rooms.open("{}", facts(2, 2, 2))
    room, follower = rooms.join(opened.code)
    with pytest.raises(RoomError, match="quiz is not open"):
        rooms.answer(room, follower, 1, 1)
    rooms.drive(room, opened.key, round_=2, quiz=True, trace=opened.trace)
    with pytest.raises(RoomError, match="open for round 2, the one on the lecturer's screen, not round 3"):
        rooms.answer(room, follower, 3, 1)
    rooms.answer(room, follower, 2, 2)
    rooms.drive(room, opened.key, round_=2, step=1, trace=opened.trace)
    with pytest.raises(RoomError, match="closed when the lecturer began revealing"):
        rooms.answer(room, follower, 2, 1)  # no change after the first reveal
    assert rooms.mine(room, follower) == {2: 2}
    with pytest.raises(RoomError, match="reveal step of round 2 must be from 0 to 2"):
        rooms.drive(room, opened.key, round_=2, step=3, trace=opened.trace)


def test_a_round_shown_with_the_quiz_off_takes_no_answers_when_the_quiz_comes_on(rooms):
    """Issue 64, item 2: quiz mode turned on over a round the room already released (shown with quiz mode off, so
    every phone holds its verdicts): the room counts no answer to it and says why; the next round is open."""
    opened = rooms.open("{}", facts(2, 2, 2))
    room, follower = rooms.join(opened.code)
    rooms.drive(room, opened.key, round_=1, quiz=False, trace=opened.trace)  # released: its verdicts on every phone
    rooms.drive(room, opened.key, round_=1, quiz=True, trace=opened.trace)
    with pytest.raises(RoomError, match="round 1 was shown with quiz mode off, so the class has seen how it ends: "
                                        "answers to it are not counted"):
        rooms.answer(room, follower, 1, 1)
    rooms.drive(room, opened.key, round_=2, quiz=True, trace=opened.trace)
    rooms.answer(room, follower, 2, 1)
    assert rooms.mine(room, follower) == {2: 1}


def test_a_reconnecting_follower_keeps_its_answers_and_a_forged_id_gets_a_new_one(rooms):
    opened = rooms.open("{}", facts(2, 2))
    room, alice = rooms.join(opened.code)
    rooms.drive(room, opened.key, round_=1, quiz=True, trace=opened.trace)
    rooms.answer(room, alice, 1, 2)
    assert rooms.join(room, follower=alice) == (room, alice)
    again = rooms.join(room, follower="made-up")[1]
    assert again != alice and rooms.mine(room, again) == {} and rooms.view(room).followers == 2
    other = rooms.open("{}", facts(2))
    elsewhere = rooms.join(other.room, follower=alice)[1]  # another room's follower id is no id here
    assert elsewhere != alice and rooms.mine(other.room, elsewhere) == {}


def test_bad_rounds_and_unknown_rooms_get_a_message(rooms):
    opened = rooms.open("{}", facts(0, 4))
    with pytest.raises(RoomError, match="round must be from 1 to 2"):
        rooms.drive(opened.room, opened.key, round_=3, trace=opened.trace)
    with pytest.raises(RoomError, match="does not exist or has closed"):
        rooms.view("nope")
    with pytest.raises(RoomError, match="at least one round"):
        rooms.open("{}", facts())


def test_full_rooms_and_a_full_server_say_so(rooms):
    opened = rooms.open("{}", facts(0, 1))
    for _ in range(4):
        rooms.join(opened.code)
    with pytest.raises(RoomError, match="this room is full"):
        rooms.join(opened.code)
    rooms.clock.now += GRACE_S + 1  # nobody opened a stream: the seats were only held for the grace
    rooms.join(opened.code)
    rooms.open("{}", facts(0)), rooms.open("{}", facts(0))
    with pytest.raises(RoomError, match="holds 3 rooms already"):
        rooms.open("{}", facts(0))


def test_idle_rooms_close_and_free_their_place(rooms):
    opened = rooms.open("{}", facts(0, 4))
    rooms.clock.now += 3000
    rooms.drive(opened.room, opened.key, round_=2, trace=opened.trace)  # driving keeps it open
    rooms.clock.now += 3000
    assert rooms.view(opened.room).round_ == 2
    rooms.clock.now += 3601
    assert rooms.rooms == 0
    with pytest.raises(RoomError, match=r"no open room has the code .* closes after 1 idle hour\)"):
        rooms.join(opened.code)
    with pytest.raises(RoomError, match="does not exist or has closed"):
        rooms.view(opened.room)


WELL_FORMED = [with_check("".join(chars)) for chars in itertools.islice(itertools.product("XYZ", repeat=6), 200)]


def test_guessing_codes_is_limited_per_client(rooms):
    opened = rooms.open("{}", facts(0))
    for code in WELL_FORMED[:MISSES_ALLOWED]:
        with pytest.raises(RoomError, match="no open room has the code"):
            rooms.join(code, client="10.0.0.9")
    with pytest.raises(RoomError, match="too many unknown codes"):
        rooms.join(WELL_FORMED[MISSES_ALLOWED], client="10.0.0.9")
    assert rooms.join(opened.code, client="10.0.0.9")[0] == opened.room  # a right code always gets in
    assert rooms.join(opened.code, client="another")[0] == opened.room  # others are not held up
    rooms.clock.now += 61
    with pytest.raises(RoomError, match="no open room has the code"):  # a minute later: allowed again
        rooms.join(WELL_FORMED[0], client="10.0.0.9")


def test_every_code_checks_itself_and_a_typo_is_never_a_guess(rooms):
    opened = rooms.open("{}", facts(0))
    assert is_code(opened.code) and with_check("222222") == "2222222"
    typos = [opened.code[:i] + c + opened.code[i + 1:] for i in range(CODE_LENGTH) for c in CODE_ALPHABET
             if c != opened.code[i]]
    typos += [opened.code[:i] + opened.code[j] + opened.code[i + 1:j] + opened.code[i] + opened.code[j + 1:]
              for i in range(CODE_LENGTH) for j in range(i + 1, CODE_LENGTH) if opened.code[i] != opened.code[j]]
    assert typos and not any(is_code(t) for t in typos)  # one wrong character, or any swapped pair
    for typo in typos + ["0" + opened.code[1:], opened.code[:-1], "", "Z" * 40]:
        with pytest.raises(RoomError, match="not a room code|does not exist"):
            rooms.join(typo, client="the hall's one address")  # 200-odd typos from one address: none counted
    assert rooms.join(opened.code, client="the hall's one address")[0] == opened.room
    assert rooms.join(f" {opened.code[:3].lower()}-{opened.code[3:]} ")[0] == opened.room  # as a person types it
    for code in WELL_FORMED[:MISSES_ALLOWED]:  # and the well-formed misses still have their limit
        with pytest.raises(RoomError, match="no open room has the code"):
            rooms.join(code, client="the hall's one address")
    with pytest.raises(RoomError, match="too many unknown codes"):
        rooms.join(WELL_FORMED[MISSES_ALLOWED], client="the hall's one address")


def test_forged_addresses_meet_the_limit_on_everyone(rooms):
    for i, code in enumerate(WELL_FORMED[:MISSES_ALLOWED_ALL]):
        with pytest.raises(RoomError, match="no open room"):
            rooms.join(code, client=f"forged-{i}")
    with pytest.raises(RoomError, match="too many unknown codes"):
        rooms.join(WELL_FORMED[MISSES_ALLOWED_ALL], client="yet another")


def test_seats_are_the_people_present(rooms):
    opened = rooms.open("{}", facts(0, 2))
    room = opened.room
    people = [rooms.join(room)[1] for _ in range(4)]
    for p in people:
        rooms.attend(room, p)  # their streams open
    with pytest.raises(RoomError, match="this room is full"):
        rooms.join(room)
    rooms.clock.now += 10 * GRACE_S
    assert rooms.view(room).followers == 4  # an open stream holds its seat however long
    rooms.leave(room, people[0])
    rooms.clock.now += GRACE_S - 1
    assert rooms.join(room, follower=people[0])[1] == people[0]  # a reload within the grace keeps its seat
    rooms.attend(room, people[0])
    for p in people[1:]:
        rooms.leave(room, p)
    rooms.clock.now += GRACE_S + 1
    assert rooms.view(room).followers == 1  # three left: their seats are free after the grace
    newcomers = [rooms.join(room)[1] for _ in range(3)]
    assert rooms.view(room).followers == 4
    with pytest.raises(RoomError, match="this room is full"):
        rooms.join(room, follower=people[1])  # gone, and every seat taken: no seat for it now
    for p in newcomers:
        rooms.leave(room, p)  # (never opened a stream: leave is harmless)
    rooms.clock.now += GRACE_S + 1
    assert rooms.join(room, follower=people[1])[1] == people[1]  # a seat again, the same id
    for forged in ("forged", None, 3, people[0] + "x"):
        with pytest.raises(RoomError, match="join the room"):
            rooms.attend(room, forged)


def test_a_hall_with_people_coming_and_going_never_fills(rooms):
    opened = rooms.open("{}", facts(0, 2))
    rooms.drive(opened.room, opened.key, round_=2, quiz=True, trace=opened.trace)
    for hour in range(50):  # 50 waves of 3 people: 150 arrivals in a room of 4 seats
        wave = [rooms.join(opened.room)[1] for _ in range(3)]
        for p in wave:
            rooms.attend(opened.room, p)
            rooms.answer(opened.room, p, 2, hour % 3)
        for p in wave:
            rooms.leave(opened.room, p)
        rooms.clock.now += GRACE_S + 1
    assert rooms.view(opened.room).answered == 150  # every answer still counted


def test_followers_long_gone_are_forgotten_but_their_answers_counted(rooms, monkeypatch):
    monkeypatch.setattr(seats, "MAX_GONE", 2)
    opened = rooms.open("{}", facts(2))
    rooms.drive(opened.room, opened.key, round_=1, quiz=True, trace=opened.trace)
    first = []
    for guess in (0, 1, 2, 2, 1):
        follower = rooms.join(opened.room)[1]
        rooms.answer(opened.room, follower, 1, guess)
        first.append(follower)
        rooms.clock.now += GRACE_S + 1
    rooms.join(opened.room)
    assert len(rooms.store.load(opened.room, rooms.clock()).seats) <= 2 + 1  # two gone kept by id, one present
    assert rooms.join(opened.room, follower=first[0])[1] != first[0]  # the longest gone is forgotten
    view = rooms.drive(opened.room, opened.key, round_=1, step=2, trace=opened.trace)
    assert view.revealed == {1: {0: 1, 1: 2, 2: 2}}  # but its answer is still counted


def test_the_lecturer_moves_the_room_to_another_trace_and_downloads_results(rooms):
    opened = rooms.open('{"trace": 1}', facts(2, 2))
    follower = rooms.join(opened.room)[1]
    rooms.drive(opened.room, opened.key, round_=2, quiz=True, trace=opened.trace)
    rooms.answer(opened.room, follower, 2, 1)
    rooms.drive(opened.room, opened.key, round_=2, step=1, trace=opened.trace)
    (shown,), dropped = rooms.results(opened.room, opened.key)
    assert (shown.counts, shown.reached, dropped) == ({2: {1: 1}}, {2: 1}, 0)
    for forged in (None, "", follower, opened.code, 5):
        with pytest.raises(RoomError, match="only the lecturer"):
            rooms.results(opened.room, forged)
        with pytest.raises(RoomError, match="only the lecturer"):
            rooms.retrace(opened.room, forged, "{}", facts(4))
    other = rooms.open("{}", facts(1))
    with pytest.raises(RoomError, match="only the lecturer"):  # another room's key
        rooms.results(opened.room, other.key)
    view = rooms.drive(opened.room, opened.key, round_=2, leading=False, trace=opened.trace)
    assert not view.leading and view.round_ == 2
    for bad in ("false", 0, None, [False]):
        with pytest.raises(RoomError, match="must be true or false"):
            rooms.drive(opened.room, opened.key, round_=2, quiz="no" if bad is None else bad,
                        leading=None, trace=opened.trace)
    view = rooms.retrace(opened.room, opened.key, '{"trace": 2}', facts(4, 4, 4))
    assert (view.part, view.round_, view.step, view.quiz, view.leading) == (2, 1, 0, False, True)
    assert rooms.trace_json(opened.room) == ('{"trace": 2}', 2)
    assert [t.counts for t in rooms.results(opened.room, opened.key)[0]] == [{2: {1: 1}}, {}]  # the first kept
    assert rooms.join(opened.room, follower=follower)[1] == follower  # the class stays in the room
    with pytest.raises(RoomError, match="at least one round"):
        rooms.retrace(opened.room, opened.key, "{}", facts())


def test_each_trace_keeps_its_own_answers_and_the_results_list_every_trace(rooms):
    """Issue 55, item 7: a room moved to another trace starts that trace's answers afresh (round 2 of B mixes in
    nothing of round 2 of A, nor does a page still on A answer for B); moving back resumes A as the class left it;
    the results list A and B, each under its title, with their rounds' answers and the class's score."""
    a = rooms.open('{"trace": "A"}', facts(2, 2, 2), "the example “A”")
    alice, bob = rooms.join(a.room)[1], rooms.join(a.room)[1]
    rooms.drive(a.room, a.key, round_=2, quiz=True, trace=a.trace)
    rooms.answer(a.room, alice, 2, 1)
    rooms.answer(a.room, bob, 2, 2, part=1)
    rooms.drive(a.room, a.key, round_=2, step=2, trace=a.trace)  # revealed: the target accepted 1, alice was right
    b = rooms.retrace(a.room, a.key, '{"trace": "B"}', facts(3, 3), "the example “B”").trace
    view = rooms.drive(a.room, a.key, round_=2, quiz=True, trace=b)
    assert (view.answered, view.revealed, view.reached) == (0, {}, {}) and rooms.mine(a.room, alice) == {}
    with pytest.raises(RoomError, match="moved the room to another trace") as refused:
        rooms.answer(a.room, bob, 2, 2, part=1)  # a page still on A: its answer is not B's
    assert refused.value.status == 409 and rooms.view(a.room).answered == 0
    for bad in ("2", 2.5, True, [2], 3):
        with pytest.raises(RoomError, match="part"):
            rooms.answer(a.room, bob, 2, 2, part=bad)
    rooms.answer(a.room, alice, 2, 3, part=2)
    assert rooms.drive(a.room, a.key, round_=2, step=2, trace=b).revealed == {2: {3: 1}}
    shown, dropped = rooms.results(a.room, a.key)
    assert dropped == 0 and [(t.title, t.counts, t.reached) for t in shown] == [
        ("the example “A”", {2: {1: 1, 2: 1}}, {2: 2}), ("the example “B”", {2: {3: 1}}, {2: 2})]
    data = json.loads(results_json(shown, dropped))
    assert [(t["title"], t["score"]) for t in data["traces"]] == [
        ("the example “A”", {"right": 1, "answers": 2, "rounds": 1}),
        ("the example “B”", {"right": 0, "answers": 1, "rounds": 1})]
    assert [row["histogram"] for row in data["traces"][0]["rounds"]] == [{"0": 0, "1": 1, "2": 1}]
    assert [line.split(",")[:2] for line in results_csv(shown, dropped).splitlines()[1:]] == [
        ["the example “A”", "2"], ["the example “B”", "2"]]
    view = rooms.retrace(a.room, a.key, '{"trace": "A"}', facts(2, 2, 2), "the example “A”")  # back to A
    assert (view.trace, view.part, view.title) == (a.trace, 3, "the example “A”")
    assert view.revealed == {2: {1: 1, 2: 1}} and view.reached == {2: 2} and rooms.mine(a.room, alice) == {2: 1}
    assert [t.title for t in rooms.results(a.room, a.key)[0]] == ["the example “A”", "the example “B”"]
    c = rooms.retrace(a.room, a.key, '{"trace": "C"}', facts(1), "C").trace  # fewer rounds than the room was at
    for move in (lambda: rooms.drive(a.room, a.key, round_=2, trace=c), lambda: rooms.answer(a.room, alice, 2, 0)):
        with pytest.raises(RoomError, match="round must be from 1 to 1"):
            move()
    assert rooms.drive(a.room, a.key, round_=1, quiz=True, trace=c).round_ == 1


def test_a_room_keeps_its_last_traces_results_and_says_how_many_it_dropped(rooms):
    opened = rooms.open('{"trace": 0}', facts(2), "trace 0")
    follower = rooms.join(opened.room)[1]
    for n in range(MAX_TRACES + 2):
        trace = opened.trace if n == 0 else rooms.retrace(opened.room, opened.key, f'{{"trace": {n}}}', facts(2),
                                                          f"trace {n}").trace
        rooms.drive(opened.room, opened.key, round_=1, quiz=True, trace=trace)
        rooms.answer(opened.room, follower, 1, n % 3)
    shown, dropped = rooms.results(opened.room, opened.key)
    assert dropped == 2 and [t.title for t in shown] == [f"trace {n}" for n in range(2, MAX_TRACES + 2)]
    assert "2 traces" in json.loads(results_json(shown, dropped))["note"]
    assert "2 traces" in results_csv(shown, dropped).splitlines()[1]
    view = rooms.retrace(opened.room, opened.key, '{"trace": 0}', facts(2), "trace 0")  # a dropped trace: afresh
    assert view.answered == 0 and rooms.mine(opened.room, follower) == {}
    assert len(rooms.results(opened.room, opened.key)[0]) == MAX_TRACES and len(rooms.store.load(opened.room, rooms.clock()).traces) \
        == MAX_TRACES


def test_an_empty_room_has_no_results_to_download(rooms):
    opened = rooms.open('{"trace": 1}', facts(2, 2))
    rooms.drive(opened.room, opened.key, round_=2, quiz=True, trace=opened.trace)  # shown, nobody answered
    with pytest.raises(RoomError, match="nothing to download yet") as refused:
        rooms.results(opened.room, opened.key)
    assert refused.value.status == 409
    assert json.loads(results_json([], 0))["traces"] == [] and results_csv([], 0).startswith("trace,round,")


def test_a_flood_of_joins_is_bounded_and_the_room_goes_on(rooms):
    opened = rooms.open("{}", facts(0, 4))
    refused = []

    def join():
        try:
            rooms.join(opened.code)
        except RoomError as e:
            refused.append(str(e))

    threads = [threading.Thread(target=join) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert rooms.view(opened.room).followers == 4 and len(refused) == 36
    assert rooms.drive(opened.room, opened.key, round_=2, trace=opened.trace).round_ == 2

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
from specviz.lecture.rooms import RoomStore
from specviz.lecture.seats import GRACE_S
from specviz.lecture.showings import MAX_TRACES
from specviz.record.quiz_data import QuizFacts
from tests.helpers import Clock


def facts(*most: int) -> QuizFacts:
    """A trace's facts with rounds offering answers 0 … most (each accepting 1 of them, in 2 reveal steps)."""
    return QuizFacts(0.5, tuple(round_facts(0.5, m, min(m, 1), 2) for m in most))


@pytest.fixture
def store():
    return RoomStore(max_rooms=3, max_followers=4, idle_s=3600, clock=Clock())


def test_the_lecturer_drives_and_followers_see_it(store):
    opened = store.open('{"trace": 1}', facts(0, 4, 4))
    assert len(opened.room) >= 22 and len(opened.key) >= 22  # 128 random bits each, url-safe
    assert len(opened.code) == CODE_LENGTH and set(opened.code) <= set(CODE_ALPHABET)
    room, follower = store.join(opened.code.lower())  # a code typed in lower case still works
    assert room == opened.room and store.trace_json(room) == ('{"trace": 1}', 1)
    before = store.view(room).version
    view = store.drive(room, opened.key, round_=3, step=2, quiz=True, trace=opened.trace)
    assert (view.round_, view.step, view.quiz, view.followers) == (3, 2, True, 1) and view.version > before
    assert view.reached == {3: 2}


def test_only_the_key_drives(store):
    opened = store.open("{}", facts(0, 4))
    room, follower = store.join(opened.room)
    for forged in (follower, "", None, opened.key[:-1] + "x", opened.code):
        with pytest.raises(RoomError, match="only the lecturer"):
            store.drive(room, forged, round_=2, trace=opened.trace)
    assert store.view(room).round_ == 1  # nothing moved


def test_answers_are_counted_once_and_never_named(store):
    opened = store.open("{}", facts(0, 4))
    room = opened.room
    alice, bob = store.join(room)[1], store.join(room)[1]
    store.drive(room, opened.key, round_=2, quiz=True, trace=opened.trace)
    store.answer(room, alice, 2, 3)
    view = store.answer(room, bob, 2, 1)
    assert view.answered == 2 and view.revealed == {}  # counted, but not shown before the round is revealed
    assert alice not in repr(view) and bob not in repr(view)  # a view carries counts, never who answered
    store.answer(room, alice, 2, 4)  # a mis-tap changed: the latest counts, once
    view = store.answer(room, alice, 2, 3)
    assert view.answered == 2
    for bad, message in ((5, "from 0 to 4"), (-1, "from 0 to 4"), (2.5, "whole number"), ("2", "whole number"),
                         (float("nan"), "whole number"), (True, "whole number"), (None, "whole number"),
                         ([1], "whole number")):
        with pytest.raises(RoomError, match=message):
            store.answer(room, alice, 2, bad)
    for forged in ("a-forged-follower", None, 7, ["x"]):
        with pytest.raises(RoomError, match="join the room"):
            store.answer(room, forged, 2, 1)
    assert store.mine(room, alice) == {2: 3} and store.mine(room, bob) == {2: 1}
    store.drive(room, opened.key, round_=2, step=1, trace=opened.trace)
    assert store.view(room).revealed == {}  # one step of two: not revealed yet
    view = store.drive(room, opened.key, round_=2, step=2, trace=opened.trace)
    assert view.revealed == {2: {3: 1, 1: 1}}


def test_answers_are_taken_only_for_the_round_on_screen_before_its_reveal(store):
    opened = store.open("{}", facts(2, 2, 2))
    room, follower = store.join(opened.code)
    with pytest.raises(RoomError, match="quiz is not open"):
        store.answer(room, follower, 1, 1)
    store.drive(room, opened.key, round_=2, quiz=True, trace=opened.trace)
    with pytest.raises(RoomError, match="open for round 2, the one on the lecturer's screen, not round 3"):
        store.answer(room, follower, 3, 1)
    store.answer(room, follower, 2, 2)
    store.drive(room, opened.key, round_=2, step=1, trace=opened.trace)
    with pytest.raises(RoomError, match="closed when the lecturer began revealing"):
        store.answer(room, follower, 2, 1)  # no change after the first reveal
    assert store.mine(room, follower) == {2: 2}
    with pytest.raises(RoomError, match="reveal step of round 2 must be from 0 to 2"):
        store.drive(room, opened.key, round_=2, step=3, trace=opened.trace)


def test_a_reconnecting_follower_keeps_its_answers_and_a_forged_id_gets_a_new_one(store):
    opened = store.open("{}", facts(2, 2))
    room, alice = store.join(opened.code)
    store.drive(room, opened.key, round_=1, quiz=True, trace=opened.trace)
    store.answer(room, alice, 1, 2)
    assert store.join(room, follower=alice) == (room, alice)
    again = store.join(room, follower="made-up")[1]
    assert again != alice and store.mine(room, again) == {} and store.view(room).followers == 2
    other = store.open("{}", facts(2))
    elsewhere = store.join(other.room, follower=alice)[1]  # another room's follower id is no id here
    assert elsewhere != alice and store.mine(other.room, elsewhere) == {}


def test_bad_rounds_and_unknown_rooms_get_a_message(store):
    opened = store.open("{}", facts(0, 4))
    with pytest.raises(RoomError, match="round must be from 1 to 2"):
        store.drive(opened.room, opened.key, round_=3, trace=opened.trace)
    with pytest.raises(RoomError, match="does not exist or has closed"):
        store.view("nope")
    with pytest.raises(RoomError, match="at least one round"):
        store.open("{}", facts())


def test_full_rooms_and_a_full_server_say_so(store):
    opened = store.open("{}", facts(0, 1))
    for _ in range(4):
        store.join(opened.code)
    with pytest.raises(RoomError, match="this room is full"):
        store.join(opened.code)
    store.clock.now += GRACE_S + 1  # nobody opened a stream: the seats were only held for the grace
    store.join(opened.code)
    store.open("{}", facts(0)), store.open("{}", facts(0))
    with pytest.raises(RoomError, match="holds 3 rooms already"):
        store.open("{}", facts(0))


def test_idle_rooms_close_and_free_their_place(store):
    opened = store.open("{}", facts(0, 4))
    store.clock.now += 3000
    store.drive(opened.room, opened.key, round_=2, trace=opened.trace)  # driving keeps it open
    store.clock.now += 3000
    assert store.view(opened.room).round_ == 2
    store.clock.now += 3601
    assert store.rooms == 0
    with pytest.raises(RoomError, match=r"no open room has the code .* closes after 1 idle hour\)"):
        store.join(opened.code)
    with pytest.raises(RoomError, match="does not exist or has closed"):
        store.view(opened.room)


WELL_FORMED = [with_check("".join(chars)) for chars in itertools.islice(itertools.product("XYZ", repeat=6), 200)]


def test_guessing_codes_is_limited_per_client(store):
    opened = store.open("{}", facts(0))
    for code in WELL_FORMED[:MISSES_ALLOWED]:
        with pytest.raises(RoomError, match="no open room has the code"):
            store.join(code, client="10.0.0.9")
    with pytest.raises(RoomError, match="too many unknown codes"):
        store.join(WELL_FORMED[MISSES_ALLOWED], client="10.0.0.9")
    assert store.join(opened.code, client="10.0.0.9")[0] == opened.room  # a right code always gets in
    assert store.join(opened.code, client="another")[0] == opened.room  # others are not held up
    store.clock.now += 61
    with pytest.raises(RoomError, match="no open room has the code"):  # a minute later: allowed again
        store.join(WELL_FORMED[0], client="10.0.0.9")


def test_every_code_checks_itself_and_a_typo_is_never_a_guess(store):
    opened = store.open("{}", facts(0))
    assert is_code(opened.code) and with_check("222222") == "2222222"
    typos = [opened.code[:i] + c + opened.code[i + 1:] for i in range(CODE_LENGTH) for c in CODE_ALPHABET
             if c != opened.code[i]]
    typos += [opened.code[:i] + opened.code[j] + opened.code[i + 1:j] + opened.code[i] + opened.code[j + 1:]
              for i in range(CODE_LENGTH) for j in range(i + 1, CODE_LENGTH) if opened.code[i] != opened.code[j]]
    assert typos and not any(is_code(t) for t in typos)  # one wrong character, or any swapped pair
    for typo in typos + ["0" + opened.code[1:], opened.code[:-1], "", "Z" * 40]:
        with pytest.raises(RoomError, match="not a room code|does not exist"):
            store.join(typo, client="the hall's one address")  # 200-odd typos from one address: none counted
    assert store.join(opened.code, client="the hall's one address")[0] == opened.room
    assert store.join(f" {opened.code[:3].lower()}-{opened.code[3:]} ")[0] == opened.room  # as a person types it
    for code in WELL_FORMED[:MISSES_ALLOWED]:  # and the well-formed misses still have their limit
        with pytest.raises(RoomError, match="no open room has the code"):
            store.join(code, client="the hall's one address")
    with pytest.raises(RoomError, match="too many unknown codes"):
        store.join(WELL_FORMED[MISSES_ALLOWED], client="the hall's one address")


def test_forged_addresses_meet_the_limit_on_everyone(store):
    for i, code in enumerate(WELL_FORMED[:MISSES_ALLOWED_ALL]):
        with pytest.raises(RoomError, match="no open room"):
            store.join(code, client=f"forged-{i}")
    with pytest.raises(RoomError, match="too many unknown codes"):
        store.join(WELL_FORMED[MISSES_ALLOWED_ALL], client="yet another")


def test_seats_are_the_people_present(store):
    opened = store.open("{}", facts(0, 2))
    room = opened.room
    people = [store.join(room)[1] for _ in range(4)]
    for p in people:
        store.attend(room, p)  # their streams open
    with pytest.raises(RoomError, match="this room is full"):
        store.join(room)
    store.clock.now += 10 * GRACE_S
    assert store.view(room).followers == 4  # an open stream holds its seat however long
    store.leave(room, people[0])
    store.clock.now += GRACE_S - 1
    assert store.join(room, follower=people[0])[1] == people[0]  # a reload within the grace keeps its seat
    store.attend(room, people[0])
    for p in people[1:]:
        store.leave(room, p)
    store.clock.now += GRACE_S + 1
    assert store.view(room).followers == 1  # three left: their seats are free after the grace
    newcomers = [store.join(room)[1] for _ in range(3)]
    assert store.view(room).followers == 4
    with pytest.raises(RoomError, match="this room is full"):
        store.join(room, follower=people[1])  # gone, and every seat taken: no seat for it now
    for p in newcomers:
        store.leave(room, p)  # (never opened a stream: leave is harmless)
    store.clock.now += GRACE_S + 1
    assert store.join(room, follower=people[1])[1] == people[1]  # a seat again, the same id
    for forged in ("forged", None, 3, people[0] + "x"):
        with pytest.raises(RoomError, match="join the room"):
            store.attend(room, forged)


def test_a_hall_with_people_coming_and_going_never_fills(store):
    opened = store.open("{}", facts(0, 2))
    store.drive(opened.room, opened.key, round_=2, quiz=True, trace=opened.trace)
    for hour in range(50):  # 50 waves of 3 people: 150 arrivals in a room of 4 seats
        wave = [store.join(opened.room)[1] for _ in range(3)]
        for p in wave:
            store.attend(opened.room, p)
            store.answer(opened.room, p, 2, hour % 3)
        for p in wave:
            store.leave(opened.room, p)
        store.clock.now += GRACE_S + 1
    assert store.view(opened.room).answered == 150  # every answer still counted


def test_followers_long_gone_are_forgotten_but_their_answers_counted(store, monkeypatch):
    monkeypatch.setattr(seats, "MAX_GONE", 2)
    opened = store.open("{}", facts(2))
    store.drive(opened.room, opened.key, round_=1, quiz=True, trace=opened.trace)
    first = []
    for guess in (0, 1, 2, 2, 1):
        follower = store.join(opened.room)[1]
        store.answer(opened.room, follower, 1, guess)
        first.append(follower)
        store.clock.now += GRACE_S + 1
    store.join(opened.room)
    assert len(store._rooms[opened.room].seats) <= 2 + 1  # two gone kept by id, one present
    assert store.join(opened.room, follower=first[0])[1] != first[0]  # the longest gone is forgotten
    view = store.drive(opened.room, opened.key, round_=1, step=2, trace=opened.trace)
    assert view.revealed == {1: {0: 1, 1: 2, 2: 2}}  # but its answer is still counted


def test_the_lecturer_moves_the_room_to_another_trace_and_downloads_results(store):
    opened = store.open('{"trace": 1}', facts(2, 2))
    follower = store.join(opened.room)[1]
    store.drive(opened.room, opened.key, round_=2, quiz=True, trace=opened.trace)
    store.answer(opened.room, follower, 2, 1)
    store.drive(opened.room, opened.key, round_=2, step=1, trace=opened.trace)
    (shown,), dropped = store.results(opened.room, opened.key)
    assert (shown.counts, shown.reached, dropped) == ({2: {1: 1}}, {2: 1}, 0)
    for forged in (None, "", follower, opened.code, 5):
        with pytest.raises(RoomError, match="only the lecturer"):
            store.results(opened.room, forged)
        with pytest.raises(RoomError, match="only the lecturer"):
            store.retrace(opened.room, forged, "{}", facts(4))
    other = store.open("{}", facts(1))
    with pytest.raises(RoomError, match="only the lecturer"):  # another room's key
        store.results(opened.room, other.key)
    view = store.drive(opened.room, opened.key, round_=2, leading=False, trace=opened.trace)
    assert not view.leading and view.round_ == 2
    for bad in ("false", 0, None, [False]):
        with pytest.raises(RoomError, match="must be true or false"):
            store.drive(opened.room, opened.key, round_=2, quiz="no" if bad is None else bad,
                        leading=None, trace=opened.trace)
    view = store.retrace(opened.room, opened.key, '{"trace": 2}', facts(4, 4, 4))
    assert (view.part, view.round_, view.step, view.quiz, view.leading) == (2, 1, 0, False, True)
    assert store.trace_json(opened.room) == ('{"trace": 2}', 2)
    assert [t.counts for t in store.results(opened.room, opened.key)[0]] == [{2: {1: 1}}, {}]  # the first kept
    assert store.join(opened.room, follower=follower)[1] == follower  # the class stays in the room
    with pytest.raises(RoomError, match="at least one round"):
        store.retrace(opened.room, opened.key, "{}", facts())


def test_each_trace_keeps_its_own_answers_and_the_results_list_every_trace(store):
    """Issue 55, item 7: a room moved to another trace starts that trace's answers afresh (round 2 of B mixes in
    nothing of round 2 of A, nor does a page still on A answer for B); moving back resumes A as the class left it;
    the results list A and B, each under its title, with their rounds' answers and the class's score."""
    a = store.open('{"trace": "A"}', facts(2, 2, 2), "the example “A”")
    alice, bob = store.join(a.room)[1], store.join(a.room)[1]
    store.drive(a.room, a.key, round_=2, quiz=True, trace=a.trace)
    store.answer(a.room, alice, 2, 1)
    store.answer(a.room, bob, 2, 2, part=1)
    store.drive(a.room, a.key, round_=2, step=2, trace=a.trace)  # revealed: the target accepted 1, alice was right
    b = store.retrace(a.room, a.key, '{"trace": "B"}', facts(3, 3), "the example “B”").trace
    view = store.drive(a.room, a.key, round_=2, quiz=True, trace=b)
    assert (view.answered, view.revealed, view.reached) == (0, {}, {}) and store.mine(a.room, alice) == {}
    with pytest.raises(RoomError, match="moved the room to another trace") as refused:
        store.answer(a.room, bob, 2, 2, part=1)  # a page still on A: its answer is not B's
    assert refused.value.status == 409 and store.view(a.room).answered == 0
    for bad in ("2", 2.5, True, [2], 3):
        with pytest.raises(RoomError, match="part"):
            store.answer(a.room, bob, 2, 2, part=bad)
    store.answer(a.room, alice, 2, 3, part=2)
    assert store.drive(a.room, a.key, round_=2, step=2, trace=b).revealed == {2: {3: 1}}
    shown, dropped = store.results(a.room, a.key)
    assert dropped == 0 and [(t.title, t.counts, t.reached) for t in shown] == [
        ("the example “A”", {2: {1: 1, 2: 1}}, {2: 2}), ("the example “B”", {2: {3: 1}}, {2: 2})]
    data = json.loads(results_json(shown, dropped))
    assert [(t["title"], t["score"]) for t in data["traces"]] == [
        ("the example “A”", {"right": 1, "answers": 2, "rounds": 1}),
        ("the example “B”", {"right": 0, "answers": 1, "rounds": 1})]
    assert [row["histogram"] for row in data["traces"][0]["rounds"]] == [{"0": 0, "1": 1, "2": 1}]
    assert [line.split(",")[:2] for line in results_csv(shown, dropped).splitlines()[1:]] == [
        ["the example “A”", "2"], ["the example “B”", "2"]]
    view = store.retrace(a.room, a.key, '{"trace": "A"}', facts(2, 2, 2), "the example “A”")  # back to A
    assert (view.trace, view.part, view.title) == (a.trace, 3, "the example “A”")
    assert view.revealed == {2: {1: 1, 2: 1}} and view.reached == {2: 2} and store.mine(a.room, alice) == {2: 1}
    assert [t.title for t in store.results(a.room, a.key)[0]] == ["the example “A”", "the example “B”"]
    c = store.retrace(a.room, a.key, '{"trace": "C"}', facts(1), "C").trace  # fewer rounds than the room was at
    for move in (lambda: store.drive(a.room, a.key, round_=2, trace=c), lambda: store.answer(a.room, alice, 2, 0)):
        with pytest.raises(RoomError, match="round must be from 1 to 1"):
            move()
    assert store.drive(a.room, a.key, round_=1, quiz=True, trace=c).round_ == 1


def test_a_room_keeps_its_last_traces_results_and_says_how_many_it_dropped(store):
    opened = store.open('{"trace": 0}', facts(2), "trace 0")
    follower = store.join(opened.room)[1]
    for n in range(MAX_TRACES + 2):
        trace = opened.trace if n == 0 else store.retrace(opened.room, opened.key, f'{{"trace": {n}}}', facts(2),
                                                          f"trace {n}").trace
        store.drive(opened.room, opened.key, round_=1, quiz=True, trace=trace)
        store.answer(opened.room, follower, 1, n % 3)
    shown, dropped = store.results(opened.room, opened.key)
    assert dropped == 2 and [t.title for t in shown] == [f"trace {n}" for n in range(2, MAX_TRACES + 2)]
    assert "2 traces" in json.loads(results_json(shown, dropped))["note"]
    assert "2 traces" in results_csv(shown, dropped).splitlines()[1]
    view = store.retrace(opened.room, opened.key, '{"trace": 0}', facts(2), "trace 0")  # a dropped trace: afresh
    assert view.answered == 0 and store.mine(opened.room, follower) == {}
    assert len(store.results(opened.room, opened.key)[0]) == MAX_TRACES and len(store._rooms[opened.room].traces) \
        == MAX_TRACES


def test_an_empty_room_has_no_results_to_download(store):
    opened = store.open('{"trace": 1}', facts(2, 2))
    store.drive(opened.room, opened.key, round_=2, quiz=True, trace=opened.trace)  # shown, nobody answered
    with pytest.raises(RoomError, match="nothing to download yet") as refused:
        store.results(opened.room, opened.key)
    assert refused.value.status == 409
    assert json.loads(results_json([], 0))["traces"] == [] and results_csv([], 0).startswith("trace,round,")


def test_a_flood_of_joins_is_bounded_and_the_room_goes_on(store):
    opened = store.open("{}", facts(0, 4))
    refused = []

    def join():
        try:
            store.join(opened.code)
        except RoomError as e:
            refused.append(str(e))

    threads = [threading.Thread(target=join) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.view(opened.room).followers == 4 and len(refused) == 36
    assert store.drive(opened.room, opened.key, round_=2, trace=opened.trace).round_ == 2

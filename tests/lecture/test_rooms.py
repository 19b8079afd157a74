"""Rooms (specviz/lecture/rooms.py): the lecturer drives, followers follow and answer, and every bound holds with a
clear message: unguessable keys, a short code that cannot be guessed at speed, full rooms, idle rooms closing,
one answer a round, nothing of one follower reaching another but the counts."""

import threading

import pytest

from specviz.lecture.rooms import CODE_ALPHABET, CODE_LENGTH, MISSES_ALLOWED, RoomError, RoomStore
from specviz.view.room import QuizFacts, RoundFacts


def facts(*most: int) -> QuizFacts:
    """A trace's facts with rounds offering answers 0 … most (each accepting 1 of them, in 2 reveal steps)."""
    return QuizFacts(0.5, tuple(RoundFacts(m, min(m, 1), 2) for m in most))


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def store():
    return RoomStore(max_rooms=3, max_followers=4, idle_s=3600, clock=Clock())


def test_the_lecturer_drives_and_followers_see_it(store):
    opened = store.open('{"trace": 1}', facts(0, 4, 4))
    assert len(opened.room) >= 22 and len(opened.key) >= 22  # 128 random bits each, url-safe
    assert len(opened.code) == CODE_LENGTH and set(opened.code) <= set(CODE_ALPHABET)
    room, follower = store.join(opened.code.lower())  # a code typed in lower case still works
    assert room == opened.room and store.trace_json(room) == '{"trace": 1}'
    before = store.view(room).version
    view = store.drive(room, opened.key, round_=3, step=2, quiz=True)
    assert (view.round_, view.step, view.quiz, view.followers) == (3, 2, True, 1) and view.version > before
    assert view.reached == {3: 2}


def test_only_the_key_drives(store):
    opened = store.open("{}", facts(0, 4))
    room, follower = store.join(opened.room)
    for forged in (follower, "", None, opened.key[:-1] + "x", opened.code):
        with pytest.raises(RoomError, match="only the lecturer"):
            store.drive(room, forged, round_=2)
    assert store.view(room).round_ == 1  # nothing moved


def test_answers_are_counted_once_and_never_named(store):
    opened = store.open("{}", facts(0, 4))
    room = opened.room
    alice, bob = store.join(room)[1], store.join(room)[1]
    store.drive(room, opened.key, round_=2, quiz=True)
    store.answer(room, alice, 2, 3)
    view = store.answer(room, bob, 2, 1)
    assert view.answered == 2 and view.revealed == {}  # counted, but not shown before the round is revealed
    assert alice not in repr(view) and bob not in repr(view)  # a view carries counts, never who answered
    with pytest.raises(RoomError, match="answered round 2 already"):
        store.answer(room, alice, 2, 4)
    for bad, message in ((5, "from 0 to 4"), (-1, "from 0 to 4"), (2.5, "whole number"), ("2", "whole number"),
                         (float("nan"), "whole number"), (True, "whole number")):
        with pytest.raises(RoomError, match=message):  # checked before "already answered"
            store.answer(room, alice, 2, bad)
    with pytest.raises(RoomError, match="join the room"):
        store.answer(room, "a-forged-follower", 2, 1)
    assert store.mine(room, alice) == {2: 3} and store.mine(room, bob) == {2: 1}
    store.drive(room, opened.key, round_=2, step=1)
    assert store.view(room).revealed == {}  # one step of two: not revealed yet
    view = store.drive(room, opened.key, round_=2, step=2)
    assert view.revealed == {2: {3: 1, 1: 1}}


def test_answers_are_taken_only_for_the_round_on_screen_before_its_reveal(store):
    opened = store.open("{}", facts(2, 2, 2))
    room, follower = store.join(opened.code)
    with pytest.raises(RoomError, match="quiz is not open"):
        store.answer(room, follower, 1, 1)
    store.drive(room, opened.key, round_=2, quiz=True)
    with pytest.raises(RoomError, match="open for round 2, the one on the lecturer's screen, not round 3"):
        store.answer(room, follower, 3, 1)
    store.drive(room, opened.key, round_=2, step=1)
    with pytest.raises(RoomError, match="closed when the lecturer began revealing"):
        store.answer(room, follower, 2, 1)
    with pytest.raises(RoomError, match="reveal step of round 2 must be from 0 to 2"):
        store.drive(room, opened.key, round_=2, step=3)


def test_a_reconnecting_follower_keeps_its_answers_and_a_forged_id_gets_a_new_one(store):
    opened = store.open("{}", facts(2, 2))
    room, alice = store.join(opened.code)
    store.drive(room, opened.key, round_=1, quiz=True)
    store.answer(room, alice, 1, 2)
    assert store.join(room, follower=alice) == (room, alice)
    again = store.join(room, follower="made-up")[1]
    assert again != alice and store.mine(room, again) == {} and store.view(room).followers == 2


def test_bad_rounds_and_unknown_rooms_get_a_message(store):
    opened = store.open("{}", facts(0, 4))
    with pytest.raises(RoomError, match="round must be from 1 to 2"):
        store.drive(opened.room, opened.key, round_=3)
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
    store.open("{}", facts(0)), store.open("{}", facts(0))
    with pytest.raises(RoomError, match="holds 3 rooms already"):
        store.open("{}", facts(0))


def test_idle_rooms_close_and_free_their_place(store):
    opened = store.open("{}", facts(0, 4))
    store.clock.now += 3000
    store.drive(opened.room, opened.key, round_=2)  # driving keeps it open
    store.clock.now += 3000
    assert store.view(opened.room).round_ == 2
    store.clock.now += 3601
    assert store.rooms == 0
    with pytest.raises(RoomError, match=r"no open room has the code .* closes after 1 idle hour\)"):
        store.join(opened.code)
    with pytest.raises(RoomError, match="does not exist or has closed"):
        store.view(opened.room)


def test_guessing_codes_is_limited_per_client(store):
    opened = store.open("{}", facts(0))
    for _ in range(MISSES_ALLOWED):
        with pytest.raises(RoomError, match="no open room has the code"):
            store.join("ZZZZZZ", client="10.0.0.9")
    with pytest.raises(RoomError, match="too many unknown codes"):
        store.join("ZZZZZY", client="10.0.0.9")
    assert store.join(opened.code, client="another")[0] == opened.room  # others are not held up
    store.clock.now += 61
    with pytest.raises(RoomError, match="no open room has the code"):  # a minute later: allowed again
        store.join("ZZZZZZ", client="10.0.0.9")


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
    assert store.drive(opened.room, opened.key, round_=2).round_ == 2

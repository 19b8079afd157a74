"""A room's seats (specviz/lecture/seats.py), worked by hand on a room of two seats: held while a stream is open and
GRACE_S after, a full room refuses a newcomer but not a returning follower whose seat is still held, and past
MAX_GONE the longest gone are forgotten. (tests/lecture/test_rooms.py checks the same through a room.)"""

from specviz.lecture import seats
from specviz.lecture.seats import GRACE_S, Seat, forget_gone, present, take_seat


def test_a_seat_is_held_while_its_stream_is_open_and_a_grace_after():
    seat = Seat(since=0.0)
    assert seat.held(GRACE_S) and not seat.held(GRACE_S + 1)  # taken at 0: held until GRACE_S
    seat.stream_opened()
    assert seat.held(100 * GRACE_S)  # an open stream holds it however long
    seat.stream_closed(now=500.0)
    seat.stream_closed(now=500.0)  # closed twice (a reload's overlap): never below no stream
    assert not seat.streams and seat.held(500.0 + GRACE_S) and not seat.held(500.0 + GRACE_S + 1)


def test_a_full_room_refuses_newcomers_but_keeps_held_seats():
    room: dict[str, Seat] = {}
    assert take_seat(room, "a", now=0.0, most=2) is take_seat(room, "a", now=1.0, most=2)  # one seat, the same
    take_seat(room, "b", now=0.0, most=2)
    assert present(room, now=1.0) == 2 and take_seat(room, "c", now=1.0, most=2) is None  # full
    assert take_seat(room, "b", now=1.0, most=2) is room["b"]  # "b" holds its seat: it may come back
    later = GRACE_S + 1  # nobody opened a stream: both seats free
    assert present(room, now=later) == 0 and take_seat(room, "c", now=later, most=2).since == later


def test_past_max_gone_the_longest_gone_are_forgotten(monkeypatch):
    monkeypatch.setattr(seats, "MAX_GONE", 2)
    room = {f: Seat(since=since) for f, since in [("d", 3.0), ("a", 0.0), ("c", 1.0), ("b", 1.0), ("e", 100.0)]}
    room["e"].stream_opened()  # present: never forgotten
    now = 3.0 + GRACE_S + 1  # a, b, c, d gone; two are kept
    assert forget_gone(room, now) == ["a", "b"]  # the longest gone first, ties by id
    assert sorted(room) == ["c", "d", "e"] and forget_gone(room, now) == []

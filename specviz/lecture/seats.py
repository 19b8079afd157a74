"""A room's seats: the followers present at once, bounded like a lecture hall (a Room, lecture/room_state.py, keeps one
dict of them, follower id -> Seat, and its store's lock guards them). A seat is held while its follower's event stream
is open, and GRACE_S after the last one closed or after it was taken (a reload or a phone's dropped Wi-Fi keeps it); a
seat not held is free for someone else but still names its follower, so a return keeps their answers, until more than
MAX_GONE are gone and the longest gone are forgotten. Seats know no answers, no clock and no web: the room passes the
time, and moves a forgotten follower's answers into its counts without their id.

    seats = {}
    seat = take_seat(seats, "f1", now=0.0, most=300)   # a seat, held GRACE_S from now (None: every seat taken)
    seat.stream_opened()                               # held while the stream is open
    seat.stream_closed(now=9.0)                        # and until 9.0 + GRACE_S
    present(seats, now=50.0)                           # -> 0
    forget_gone(seats, now=50.0)                       # -> [] (fewer than MAX_GONE gone: all still known by id)
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_FOLLOWERS = 300  # seats a room: people present at once (a lecture hall of 300), not everyone who ever came
GRACE_S = 30.0  # a seat outlives its follower's last stream this long: a reload or a phone's dropped Wi-Fi keeps it
MAX_GONE = 300  # followers gone past GRACE_S still known by id a room (a return keeps their answers); then forgotten


@dataclass
class Seat:
    # the follower's open event streams, by the process serving them (a phone and its reload may overlap; with rooms
    # in a shared store, lecture/room_store.py, another process may serve a stream: a process gone takes its own)
    streams: dict[str, int] = field(default_factory=dict)
    since: float = 0.0  # when it joined or its last stream closed: the seat holds GRACE_S from then

    def held(self, now: float) -> bool:
        return bool(self.streams) or now - self.since <= GRACE_S

    def stream_opened(self, process: str = "") -> None:
        self.streams[process] = self.streams.get(process, 0) + 1

    def stream_closed(self, now: float, process: str = "") -> None:
        """Held GRACE_S more from `now` once no stream is open (a reload comes back to it)."""
        left = self.streams.pop(process, 0) - 1
        if left > 0:
            self.streams[process] = left
        self.since = now


def present(seats: dict[str, Seat], now: float) -> int:
    """Seats held now: followers present, or gone less than GRACE_S ago."""
    return sum(seat.held(now) for seat in seats.values())


def take_seat(seats: dict[str, Seat], follower: str, now: float, most: int) -> Seat | None:
    """`follower`'s seat, held (a new one held GRACE_S from `now`); None if it had none held and `most` seats are
    held already (the room then says it is full)."""
    seat = seats.get(follower)
    if (seat is None or not seat.held(now)) and present(seats, now) >= most:
        return None
    return seats.setdefault(follower, Seat(since=now))


def forget_gone(seats: dict[str, Seat], now: float) -> list[str]:
    """Past MAX_GONE followers gone (seats not held), the longest gone lose their seats: their ids, longest gone
    first (ties by id), for the room to keep their answers without them."""
    gone = sorted((seat.since, f) for f, seat in seats.items() if not seat.held(now))
    forgotten = [follower for _, follower in gone[:max(len(gone) - MAX_GONE, 0)]]
    for follower in forgotten:
        del seats[follower]
    return forgotten


def streams_lost(seats: dict[str, Seat], alive: set[str], now: float) -> None:
    """Streams served by a process no longer `alive` (killed, or this store reopened after a restart) are closed as of
    `now`: their seats are held GRACE_S more, for their followers to reconnect through a process that is."""
    for seat in seats.values():
        gone = [process for process in seat.streams if process not in alive]
        for process in gone:
            del seat.streams[process]
        if gone and not seat.streams:
            seat.since = now

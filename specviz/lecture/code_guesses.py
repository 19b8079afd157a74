"""The limit on guessing a room's code: a well-formed code that names no room (a guess, or a code from a closed room)
counts against the client that named it, and against all clients together, since a client's address can be forged.
Too many in a minute, and the room store (lecture/rooms.py) answers "wait" instead of looking. A typo is no guess: a
code whose check character does not fit is refused before it counts (lecture/room_codes.py). docs/lecture.md has
the arithmetic of what a guesser can hope for.

    guesses = Guesses()
    guesses.miss("10.0.0.9", now=0.0)    # counted; the eleventh within a minute: RoomError("too many …", 429)
"""

from __future__ import annotations

from collections import deque

from specviz.lecture.room_state import RoomError

MISSES_ALLOWED, MISS_WINDOW_S = 10, 60.0  # a client may name well-formed unknown codes this often a minute
MISSES_ALLOWED_ALL = 60  # and all clients together this often a minute (a client's address can be forged)
CLIENTS_KEPT = 10_000  # clients whose misses are remembered: past this, all are forgotten (a bounded memory)


class Guesses:
    """The times each client, and every client together, named a well-formed code that opens no room."""

    def __init__(self):
        self._mine: dict[str, deque] = {}  # client -> times it missed
        self._everyone: deque = deque()  # every client's, for the limit on all of them

    def miss(self, client: str, now: float) -> None:
        """Count a miss by `client` at `now`; RoomError (429) instead when it, or everyone, missed too often."""
        mine, everyone = self._mine.setdefault(client, deque()), self._everyone
        for misses in (mine, everyone):
            while misses and now - misses[0] > MISS_WINDOW_S:
                misses.popleft()
        if len(mine) >= MISSES_ALLOWED or len(everyone) >= MISSES_ALLOWED_ALL:
            raise RoomError("too many unknown codes; wait a minute and check the code on the projector", 429)
        mine.append(now)
        everyone.append(now)

    def trim(self) -> None:
        """Past CLIENTS_KEPT clients, forget every client's misses (the limit on all of them stays)."""
        if len(self._mine) > CLIENTS_KEPT:
            self._mine.clear()

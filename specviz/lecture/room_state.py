"""A room as data: what one room holds (`Room`), what every follower of it sees (`RoomView`), what its lecturer gets
on opening it (`OpenedRoom`), and the refusal every room module raises (`RoomError`). Records only: no lock, no
clock, no store. A room store (lecture/rooms.py) keeps the Rooms, and the rules that change one are
lecture/room_rules.py's.

What a follower may hold of each round (issue 44) is kept here too, as each round's form (record/quiz_data.py's
follower_forms: nothing, the quiz form with the steps revealed so far, or the round in full) and the room version at
which it last changed, so the page and the stream send a round again only when its form changes. A room knows which
trace it is on (`trace_id`, a hash of its JSON, and a title) and keeps what the class did with each trace it showed
(lecture/showings.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specviz.lecture.seats import Seat
from specviz.lecture.showings import Showing
from specviz.record.quiz_data import QuizFacts


class RoomError(ValueError):
    """A room request refused, with what to tell the person. `status`: the HTTP status the page answers with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class OpenedRoom:
    room: str  # the room's id (in the join link)
    code: str  # the short code shown on the projector, an alias of `room`
    key: str  # the lecturer's key: only its holder drives the room; never shown to students
    trace: str = ""  # trace_id of the trace it was opened on: its lecturer's drives name it


@dataclass
class Room:
    trace_json: str  # the trace on screen, sent once to each follower
    key: str
    code: str
    trace_id: str  # trace_id(trace_json): what a drive must name, and its Showing in `traces`
    traces: dict[str, Showing]  # trace_id -> what the class did with it, the least recently shown first
    round_: int = 1
    step: int = 0  # reveal steps shown in this round
    quiz: bool = False
    leading: bool = True  # False once the lecturer's page has left the room's trace (followers are told)
    part: int = 1  # the room's trace: 1, then one more each time the lecturer moves the room to another
    version: int = 0  # bumped on every change a follower must see
    seats: dict[str, Seat] = field(default_factory=dict)  # follower id -> its seat, held or not
    forms: dict[int, int] = field(default_factory=dict)  # round -> what a follower may hold of it (follower_forms)
    changed: dict[int, int] = field(default_factory=dict)  # round -> the version at which its form last changed
    touched: float = 0.0
    dropped: int = 0  # traces whose results were dropped to keep MAX_TRACES

    @property
    def now(self) -> Showing:
        """The trace on screen: its answers, reveals and facts."""
        return self.traces[self.trace_id]

    @property
    def facts(self) -> QuizFacts:
        return self.now.facts


@dataclass(frozen=True)
class RoomView:
    """What every follower of a room sees (no follower's identity, no lecturer key)."""

    round_: int
    step: int
    quiz: bool
    version: int
    followers: int  # seats held now: followers present, or gone less than GRACE_S ago
    answered: int  # answers to the round on screen
    reached: dict[int, int]  # round -> reveal steps shown (a follower stepping back sees what the class saw)
    revealed: dict[int, dict[int, int]]  # for each round revealed to its last step: answer -> how many gave it
    leading: bool = True
    part: int = 1
    trace: str = ""  # the room's trace_id, and its title
    title: str = ""
    forms: dict[int, int] = field(default_factory=dict)  # round -> its form on a follower's page (follower_forms)
    changed: dict[int, int] = field(default_factory=dict)  # round -> the version at which that form was reached

    @property
    def forms_version(self) -> int:
        """The version of the last change of any round's form: a page built now holds every form up to it."""
        return max(self.changed.values(), default=0)

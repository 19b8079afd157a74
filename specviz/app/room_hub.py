"""The room hub: the fan-out of each room's changes to its streams (app/room_routes.py serves them). A bell per room
wakes every stream of it after a change; the room's state is built as JSON once per version, a follower's page and
the rounds whose form changed are rendered once per change of a round's form, and each message is compressed once:
the same bytes go to every follower of a room at the same version, so a step costs the server one message a room,
not one a follower.

    hub = RoomHub(Rooms())                         # the rooms: lecture/rooms.py's, in their store
    hub.rooms.drive(room, key, 3, trace=trace)     # a change,
    hub.ring(room)                                 # then every stream of the room wakes
    sent = hub.state(room)                         # the room's state as its streams send it (Sent: key, JSON, view)
    await hub.message(room, sent, since, gz=True)  # a follower's message: the state and the rounds changed since

What a follower can fetch holds only what the room has released (issue 44; the rule is record/quiz_data.py's
follower_forms, the room keeps it): the page carries each round in its form now, and each state carries the rounds
whose form changed since the follower's last state (their new sections, rendered once per room version), so a reveal
reaches a phone without a reload. A stream is gzipped for a browser that accepts it, each message compressed once and
cut off by a full flush (`deflated`), so the same compressed bytes go to every follower (a section is a tenth of its
size compressed).
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections import OrderedDict
from functools import partial
from typing import NamedTuple

from specviz.app.room_html import gzipped_page
from specviz.lecture.room_state import RoomError, RoomView
from specviz.lecture.rooms import Rooms
from specviz.record.load import load_trace
from specviz.record.quiz_data import QuizFacts
from specviz.record.trace import Trace
from specviz.view.class_panel import class_panel
from specviz.view.follower import follower_section

JOIN_RING_S = 0.25  # joins are told to a room's followers at most this often (the joined count)
HEARD_RING_S = 0.1  # another process's changes (a shared store) ring a room at once, then at most this often
PAGES_KEPT = 16  # follower pages kept, gzipped (~30 kB each): rooms joining at once ask for the same few again and again
TRACES_KEPT = 16  # rooms' traces kept parsed (a paris-sized trace takes 70 ms to read), to render a changed round
DELTAS_KEPT = 8  # per room, the changed rounds' JSON kept for this many `since` versions (most followers share one)
WIRE_KEPT = 256  # followers' messages kept as sent (plain or gzipped), every room together


class Sent(NamedTuple):
    key: tuple  # (version, seats held): a new message when either changes
    data: str  # the state as JSON, the same bytes to every stream of the room
    view: RoomView  # what it was built from (the rounds' forms, for a follower's changed sections)


class RoomHub:
    """The rooms of one server and what their web side adds: a bell per room that wakes its streams, each room's
    state as the JSON its streams send, built once per version, and the rounds a follower may see, rendered once
    per change of their form."""

    def __init__(self, rooms: Rooms | None = None):
        self._bells: dict[str, asyncio.Event] = {}
        self._sent: dict[str, Sent] = {}  # room -> its state as last built
        self._pages: OrderedDict[tuple, bytes] = OrderedDict()  # (room, part, forms' version) -> its page, gzipped
        self._rendering: dict[tuple, asyncio.Future] = {}  # a page or a trace being made in a thread
        self._traces: OrderedDict[tuple, Trace] = OrderedDict()  # (room, part) -> its trace, parsed
        self._deltas: dict[str, tuple[tuple, OrderedDict]] = {}  # room -> ((part, forms' version), since -> JSON)
        self._wire: OrderedDict[tuple, bytes] = OrderedDict()  # (room, state, since, gzip) -> a follower's message
        self._soon: set[str] = set()  # rooms to ring shortly (joins)
        self._quiet: dict[str, bool] = {}  # rooms rung for another process's change lately -> heard again since
        self._loop: asyncio.AbstractEventLoop | None = None  # the server's, once a stream ran on it
        self.streams = 0
        self.use(rooms or Rooms())

    def use(self, rooms: Rooms) -> None:
        """Serve `rooms` (app.py, at start: the store SPECVIZ_ROOMS names); a change another process makes to one
        of them rings its streams here."""
        self.rooms = rooms
        rooms.listen(self._heard)

    def _heard(self, room: str) -> None:
        """Another process changed `room` (called from the store's thread): ring it on the server's loop."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._ring_heard, room)

    def _ring_heard(self, room: str) -> None:
        """Ring at once (a step reaches every process's followers without delay), then at most every HEARD_RING_S:
        a hall joining through other processes is a few messages to each follower here, not one per join."""
        if room in self._quiet:
            self._quiet[room] = True
            return
        self.ring(room)
        self._quiet[room] = False
        asyncio.get_running_loop().call_later(HEARD_RING_S, self._quiet_over, room)

    def _quiet_over(self, room: str) -> None:
        if self._quiet.pop(room, False):
            self._ring_heard(room)

    def ring(self, room: str) -> None:
        """Wake every stream of `room` (called on the event loop, after a change)."""
        bell = self._bells.pop(room, None)
        if bell is not None:
            bell.set()

    def ring_soon(self, room: str) -> None:
        """Ring `room` within JOIN_RING_S, once however many ask meanwhile: a hall joining at once is a few messages
        to each follower (the joined count), not one per join."""
        if room not in self._soon:
            self._soon.add(room)
            asyncio.get_running_loop().call_later(JOIN_RING_S, self._ring_later, room)

    def _ring_later(self, room: str) -> None:
        self._soon.discard(room)
        self.ring(room)

    def bell(self, room: str) -> asyncio.Event:
        self._loop = asyncio.get_running_loop()
        return self._bells.setdefault(room, asyncio.Event())

    def state(self, room: str) -> Sent:
        """The room's state for its streams; RoomError once it has closed. Seats free themselves GRACE_S after a
        stream closes, without a new version: the count is part of the key."""
        view = self.rooms.view(room)
        sent = self._sent.get(room)
        if sent is None or sent.key != (view.version, view.followers):
            facts = self.rooms.facts(room)
            steps = facts.rounds[view.round_ - 1].steps  # the round in full on the phones, not by its reveals
            released = view.forms.get(view.round_) == steps and view.reached.get(view.round_, 0) < steps
            panel = class_panel(facts, view.round_, view.quiz, view.followers, view.answered, view.revealed, released)
            sent = Sent((view.version, view.followers), json.dumps({
                "room": room, "round": view.round_, "step": view.step, "quiz": view.quiz, "version": view.version,
                "rounds": len(facts.rounds), "here": view.followers, "answered": view.answered,
                "leading": view.leading, "part": view.part, "trace": view.trace, "title": view.title,
                "reached": {str(n): s for n, s in view.reached.items()}, "panel": panel}), view)
            self._sent[room] = sent
            self._forget_closed()
        return sent

    def retrace(self, room: str, key: str, trace_json: str, facts: QuizFacts, title: str) -> None:
        """Move the room to another trace; its followers' pages reload on the next state (its `part` changed)."""
        self.rooms.retrace(room, key, trace_json, facts, title)
        self.ring(room)

    async def page(self, room: str) -> tuple[bytes, int]:
        """(a follower's page for `room` as the room has released it now, gzipped, its forms' version); RoomError
        if the room has closed. Rendered once per change of a round's form, in a thread (a class joining at once must
        not stall the streams of other rooms), however many ask for it meanwhile."""
        view = self.rooms.view(room)
        which = (room, view.part, view.forms_version)
        if which not in self._pages:
            trace = await self.trace(room, view.part)
            if trace is None:  # moved to another trace meanwhile: that one's page
                return await self.page(room)
            page = partial(gzipped_page, room, view.part, trace, view.forms, view.forms_version)
            self._pages[which] = await self._once(("page", *which), partial(asyncio.to_thread, page))
            while len(self._pages) > PAGES_KEPT:
                self._pages.popitem(last=False)
        self._pages.move_to_end(which)
        return self._pages[which], view.forms_version

    async def trace(self, room: str, part: int) -> Trace | None:
        """The room's trace, parsed once (in a thread), if the room is still on `part`; else None."""
        which = (room, part)
        if which not in self._traces:
            trace_json, now = self.rooms.trace_json(room)
            if now != part:
                return None
            try:
                self._traces[which] = await self._once(("trace", *which), partial(asyncio.to_thread, load_trace,
                                                                                   trace_json))
            except ValueError as e:  # checked when the room opened: only a room opened around record.load fails
                raise RoomError(f"this room's trace cannot be read ({e}); ask the lecturer to open the room again",
                                500) from None
            while len(self._traces) > TRACES_KEPT:
                self._traces.popitem(last=False)
        self._traces.move_to_end(which)
        return self._traces[which]

    async def changed(self, room: str, view: RoomView, since: int) -> str:
        """JSON {round: its section} of every round whose form changed after version `since` (a follower's page or
        last state holds every form up to it), as of `view`; built once per `since`, the same bytes to every
        follower that was there."""
        if since >= view.forms_version:
            return "{}"
        key = (view.part, view.forms_version)
        if self._deltas.get(room, (None,))[0] != key:
            self._deltas[room] = (key, OrderedDict())
        built = self._deltas[room][1]
        if since not in built:
            trace = await self.trace(room, view.part)
            built[since] = "{}" if trace is None else json.dumps(  # None: moved on; its followers reload
                {str(n): follower_section(trace, n, view.forms[n]) for n, at in sorted(view.changed.items())
                 if at > since})
            while len(built) > DELTAS_KEPT:
                built.popitem(last=False)
        return built[since]

    async def message(self, room: str, sent: Sent, since: int, gz: bool) -> bytes:
        """A follower's message for state `sent` (the rounds changed after `since`, the room's version as its id), as
        sent: UTF-8, or gzipped (`gz`); built and compressed once, the same bytes to every follower at `since`."""
        which = (room, sent.key, since, gz)
        if which not in self._wire:
            sections = await self.changed(room, sent.view, since)
            text = f'id: {sent.view.version}\ndata: {sent.data[:-1]}, "sections": {sections}}}\n\n'
            self._wire[which] = deflated(text) if gz else text.encode()
            while len(self._wire) > WIRE_KEPT:
                self._wire.popitem(last=False)
        return self._wire[which]

    async def _once(self, which: tuple, make):
        """`await make()`, however many ask for `which` meanwhile: one call, every asker gets its result."""
        if which not in self._rendering:
            self._rendering[which] = asyncio.ensure_future(make())
        try:  # shielded: an asker that leaves (a closed tab) does not cancel it for the others
            return await asyncio.shield(self._rendering[which])
        finally:
            self._rendering.pop(which, None)

    def _forget_closed(self) -> None:
        if len(self._sent) > self.rooms.max_rooms:  # rooms closed since: forget what was sent to them
            for room in list(self._sent):
                try:
                    self.rooms.view(room)
                except RoomError:
                    self._sent.pop(room, None)
                    self._bells.pop(room, None)
                    self._deltas.pop(room, None)


def deflated(text: str) -> bytes:
    """`text` as deflate blocks ending in a full flush: a piece of a gzip stream that needs nothing sent before it, so
    a message is compressed once and the same bytes continue every follower's stream (RFC 1951; the stream never
    ends cleanly, as a browser's event stream is cut off, not finished)."""
    squeeze = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return squeeze.compress(text.encode()) + squeeze.flush(zlib.Z_FULL_FLUSH)


ROOMS = RoomHub()  # the server's rooms: the page (build_demo) and the routes (serving.launch_kwargs) share it

"""Rooms on the web: a follower's page, its stream of the room's state, its answers, and the lecturer's steering, as
a few routes on Gradio's own FastAPI app (`launch(app_kwargs={"routes": room_routes(hub)})`, in serving.py).

    GET  /room/{room}          a follower's page (assets/follower.html): each round as far as the room has
                               released it (view/follower.py), with the stage's scripts and follow.js
    GET  /room?code=ABC2345    a short code typed in: to its room's page (guessing is rate-limited)
    POST /room/{room}/join     {"follower": the id this browser had, or null} -> {"follower", "answers"}
    GET  /room/{room}/events   ?follower=…&since=… (its seat is held while the stream is open) or ?key=… (a
                               lecturer's page): server-sent events, the room's state on every change, the class's
                               panel too, and for a follower each round whose form changed after `since` (the
                               page's version; on a reconnect, the Last-Event-ID the browser sends)
    POST /room/{room}/answer   {"follower", "round", "guess", "part"} -> {"answers"} (a later answer replaces it;
                               `part`, the room's trace the page holds, if given must be the room's now)
    POST /room/{room}/drive    {"key", "trace", "round", "step", "quiz", "leading"}: the lecturer's page only (key
                               checked), and only while it shows the room's trace (`trace`: its id)
    POST /room/{room}/results  {"key", "format": "csv" or "json"}: the class's answers counted, every trace the room
                               showed under its title, as a download

Why a route of our own rather than a Gradio event (measured: docs/lecture.md, "How followers receive steps"): a
follower's page needs none of Gradio's front end (a phone loads a few kB, not Gradio's and plotly's megabytes), one
server-sent stream per follower holds no thread and no queue slot, and a step is sent once per room version, the
same bytes to every follower. Every refusal answers JSON {"error": a sentence} with a status; nothing one follower
sends reaches another but the counts in the class's panel.

What a follower can fetch holds only what the room has released (issue 44; the rule is record/quiz_data.py's
follower_forms, the room keeps it): the page carries each round in its form now, and each state on the stream
carries the rounds whose form changed since the follower's last state (their new sections, rendered once per room
version and the same bytes to every follower at the same version), so a reveal reaches a phone without a reload.
A stream is gzipped for a browser that accepts it, each message compressed once and cut off by a full flush, so the
same compressed bytes go to every follower (a section is a tenth of its size compressed).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections import OrderedDict
from contextlib import aclosing
from functools import partial
from typing import NamedTuple

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from specviz.app.room_html import code_form, error_page, gzipped_page
from specviz.lecture.results import results_csv, results_json
from specviz.lecture.rooms import RoomError, RoomStore, RoomView
from specviz.lecture.seats import GRACE_S
from specviz.record.load import load_trace
from specviz.record.quiz_data import QuizFacts
from specviz.record.trace import Trace
from specviz.view.class_panel import class_panel
from specviz.view.follower import follower_section

KEEPALIVE_S = 15.0  # a comment down each idle stream this often, so proxies keep it open and a gone one is noticed
MAX_BODY = 2048  # bytes: every request body of these routes is a few numbers and ids
MAX_STREAMS = 2000  # open event streams on one server, every room together (a room holds at most MAX_FOLLOWERS)
JOIN_RING_S = 0.25  # joins are told to a room's followers at most this often (the joined count)
PAGES_KEPT = 16  # follower pages kept, gzipped (~30 kB each): rooms joining at once ask for the same few again and again
TRACES_KEPT = 16  # rooms' traces kept parsed (a paris-sized trace takes 70 ms to read), to render a changed round
DELTAS_KEPT = 8  # per room, the changed rounds' JSON kept for this many `since` versions (most followers share one)
WIRE_KEPT = 256  # followers' messages kept as sent (plain or gzipped), every room together
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # a gzip stream: deflate, no name, no time (RFC 1952)
RESULTS = {"csv": (results_csv, "text/csv; charset=utf-8"), "json": (results_json, "application/json")}


class Sent(NamedTuple):
    key: tuple  # (version, seats held): a new message when either changes
    data: str  # the state as JSON, the same bytes to every stream of the room
    view: RoomView  # what it was built from (the rounds' forms, for a follower's changed sections)


class RoomHub:
    """The rooms of one server and what their web side adds: a bell per room that wakes its streams, each room's
    state as the JSON its streams send, built once per version, and the rounds a follower may see, rendered once
    per change of their form."""

    def __init__(self, store: RoomStore | None = None):
        self.store = store or RoomStore()
        self._bells: dict[str, asyncio.Event] = {}
        self._sent: dict[str, Sent] = {}  # room -> its state as last built
        self._pages: OrderedDict[tuple, bytes] = OrderedDict()  # (room, part, forms' version) -> its page, gzipped
        self._rendering: dict[tuple, asyncio.Future] = {}  # a page or a trace being made in a thread
        self._traces: OrderedDict[tuple, Trace] = OrderedDict()  # (room, part) -> its trace, parsed
        self._deltas: dict[str, tuple[tuple, OrderedDict]] = {}  # room -> ((part, forms' version), since -> JSON)
        self._wire: OrderedDict[tuple, bytes] = OrderedDict()  # (room, state, since, gzip) -> a follower's message
        self._soon: set[str] = set()  # rooms to ring shortly (joins)
        self.streams = 0

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
        return self._bells.setdefault(room, asyncio.Event())

    def state(self, room: str) -> Sent:
        """The room's state for its streams; RoomError once it has closed. Seats free themselves GRACE_S after a
        stream closes, without a new version: the count is part of the key."""
        view = self.store.view(room)
        sent = self._sent.get(room)
        if sent is None or sent.key != (view.version, view.followers):
            facts = self.store.facts(room)
            panel = class_panel(facts, view.round_, view.quiz, view.followers, view.answered, view.revealed)
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
        self.store.retrace(room, key, trace_json, facts, title)
        self.ring(room)

    async def page(self, room: str) -> tuple[bytes, int]:
        """(a follower's page for `room` as the room has released it now, gzipped, its forms' version); RoomError
        if the room has closed. Rendered once per change of a round's form, in a thread (a class joining at once must
        not stall the streams of other rooms), however many ask for it meanwhile."""
        view = self.store.view(room)
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
            trace_json, now = self.store.trace_json(room)
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
        if len(self._sent) > self.store.max_rooms:  # rooms closed since: forget what was sent to them
            for room in list(self._sent):
                try:
                    self.store.view(room)
                except RoomError:
                    self._sent.pop(room, None)
                    self._bells.pop(room, None)
                    self._deltas.pop(room, None)


ROOMS = RoomHub()  # the server's rooms: the page (build_demo) and the routes (serving.launch_kwargs) share it


# --- the routes -----------------------------------------------------------------------------------------------

def room_routes(hub: RoomHub) -> list[Route]:
    def route(path: str, handler, method: str = "GET") -> Route:
        return Route(path, partial(handler, hub), methods=[method], name=handler.__name__.strip("_"))
    return [route("/room", _by_code), route("/room/{room}", _page), route("/room/{room}/join", _join, "POST"),
            route("/room/{room}/answer", _answer, "POST"), route("/room/{room}/drive", _drive, "POST"),
            route("/room/{room}/results", _results, "POST"), route("/room/{room}/events", _events)]


async def _page(hub: RoomHub, request: Request) -> Response:
    try:
        page, _ = await hub.page(request.path_params["room"])
    except RoomError as e:
        return HTMLResponse(error_page(str(e)), status_code=e.status)
    headers = {"Cache-Control": "no-store", "Vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(page, media_type="text/html; charset=utf-8", headers={**headers, "Content-Encoding": "gzip"})
    return HTMLResponse(gzip.decompress(page), headers=headers)


async def _by_code(hub: RoomHub, request: Request) -> Response:
    code = request.query_params.get("code", "")
    if not code:
        return HTMLResponse(code_form(""))
    try:
        room = hub.store.resolve(code, _client(request))
    except RoomError as e:
        return HTMLResponse(code_form(str(e)), status_code=e.status)
    return RedirectResponse(f"room/{room}", status_code=303)


async def _join(hub: RoomHub, request: Request) -> Response:
    async def act(body):
        room, follower = hub.store.join(request.path_params["room"], _client(request), body.get("follower"))
        hub.ring_soon(room)
        return {"follower": follower, "answers": _answers(hub.store.mine(room, follower))}
    return await _json_call(request, act)


async def _answer(hub: RoomHub, request: Request) -> Response:
    async def act(body):
        room, follower = request.path_params["room"], body.get("follower")
        hub.store.answer(room, follower, body.get("round"), body.get("guess"), body.get("part"))
        hub.ring(room)
        return {"answers": _answers(hub.store.mine(room, follower))}
    return await _json_call(request, act)


async def _drive(hub: RoomHub, request: Request) -> Response:
    async def act(body):
        room = request.path_params["room"]
        view = hub.store.drive(room, body.get("key"), body.get("round"), body.get("step", 0), body.get("quiz"),
                               body.get("leading"), trace=body.get("trace"))
        hub.ring(room)
        return {"version": view.version}
    return await _json_call(request, act)


async def _results(hub: RoomHub, request: Request) -> Response:
    """The class's answers counted, per round (lecture/results.py), as a file: counts only."""
    async def act(body):
        kind = body.get("format")
        if not isinstance(kind, str) or kind not in RESULTS:
            raise RoomError('the results\' format must be "csv" or "json"')
        made, media = RESULTS[kind]
        content = made(*hub.store.results(request.path_params["room"], body.get("key")))
        return Response(content, media_type=media, headers={
            "Content-Disposition": f'attachment; filename="specviz-room-results.{kind}"', "Cache-Control": "no-store"})
    return await _json_call(request, act)


async def _events(hub: RoomHub, request: Request) -> Response:
    """A follower's stream (?follower=…: its seat is held while it is open; `since`: the room version its page
    holds the rounds' forms of) or its lecturer's (?key=…)."""
    room, query = request.path_params["room"], request.query_params
    follower = query.get("follower")
    try:
        version = hub.state(room).view.version
        if hub.streams >= MAX_STREAMS:
            raise RoomError("the server follows as many rooms' streams as it can; reload in a minute", 503)
        if follower is not None:
            hub.store.attend(room, follower, hold=False)  # held once the stream runs: its end then frees it
            # a reconnect's Last-Event-ID: the version of the last state this page received
            since = _since(request.headers.get("last-event-id", query.get("since", "0")), version)
        else:
            hub.store.check_key(room, query.get("key"))
            since = None
    except RoomError as e:
        return _refusal(e)
    gz = "gzip" in request.headers.get("accept-encoding", "")
    return StreamingResponse(_stream(hub, room, follower, since, gz), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no", "Vary": "Accept-Encoding",
                                      **({"Content-Encoding": "gzip"} if gz else {})})


def deflated(text: str) -> bytes:
    """`text` as deflate blocks ending in a full flush: a piece of a gzip stream that needs nothing sent before it, so
    a message is compressed once and the same bytes continue every follower's stream (RFC 1951; the stream never
    ends cleanly, as a browser's event stream is cut off, not finished)."""
    squeeze = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return squeeze.compress(text.encode()) + squeeze.flush(zlib.Z_FULL_FLUSH)


def _since(text: str, version: int) -> int:
    """A page's version as a stream's query or header sends it: a whole number from 0 to the room's version."""
    if not (text.isascii() and text.isdigit() and len(text) <= 12 and int(text) <= version):
        raise RoomError(f"since must be the version of the follower's page, a whole number from 0 to {version}, "
                        f"got {text[:20]!r}; reload the page")
    return int(text)


async def _stream(hub: RoomHub, room: str, follower: str | None, since: int | None = None, gz: bool = False):
    """The room's state now, then again after every change (the latest only: a burst of answers is one message
    to a slow follower), a comment when idle, and a `closed` event when the room has gone. A follower's state also
    carries the rounds whose form changed after `since` (then after the state it last received); its `id` is the
    room's version, which the browser sends back on a reconnect. A follower's seat is held while this runs, and
    GRACE_S after (the room's count then drops: rung once the grace is over). `gz`: gzipped, as the browser asked."""
    hub.streams += 1
    try:
        if gz:
            yield GZIP_HEADER
        if follower is not None:
            try:
                hub.store.attend(room, follower)
            except RoomError as e:
                follower = None  # it holds no seat to give back
                yield _closed(e, gz)
                return
        # _states closes with this stream, at once, not whenever the garbage collector finds it
        async with aclosing(_states(hub, room, follower, since, gz)) as states:
            async for message in states:
                yield message
    finally:
        _stream_ended(hub, room, follower)


async def _states(hub: RoomHub, room: str, follower: str | None, since: int | None, gz: bool):
    """The room's messages: its state whenever it changed since the last one sent, a comment after KEEPALIVE_S
    without a change, and `closed` (then nothing) once the room has gone."""
    seen = None
    while True:
        bell = hub.bell(room)  # taken before reading, so a change after the read rings this one
        try:
            sent = hub.state(room)
            fresh = sent.key != seen
            if fresh:
                message, since = await _state_message(hub, room, sent, follower, since, gz)
        except RoomError as e:
            yield _closed(e, gz)
            return
        if fresh:
            seen = sent.key
            yield message
        elif not await _rung(bell):
            yield _wire(": idle\n\n", gz)


async def _state_message(hub: RoomHub, room: str, sent: Sent, follower: str | None, since: int | None,
                         gz: bool) -> tuple[bytes, int | None]:
    """(the message for state `sent`, the `since` of the next one): the lecturer's is the state alone; a
    follower's carries the rounds whose form changed after `since`, and its page then holds the state's version."""
    if follower is None:
        return _wire(f"data: {sent.data}\n\n", gz), since
    return await hub.message(room, sent, since, gz), sent.view.version


async def _rung(bell: asyncio.Event) -> bool:
    """Wait for the room's bell: True once it rang, False after KEEPALIVE_S of quiet (time for a keepalive)."""
    try:
        return await asyncio.wait_for(bell.wait(), KEEPALIVE_S)  # Event.wait() gives True
    except asyncio.TimeoutError:
        return False


def _stream_ended(hub: RoomHub, room: str, follower: str | None) -> None:
    """One stream fewer; a follower's seat is held GRACE_S more, the room rung once that is over (its count drops)."""
    hub.streams -= 1
    if follower is not None:
        hub.store.leave(room, follower)
        try:
            asyncio.get_running_loop().call_later(GRACE_S + 0.5, hub.ring, room)
        except RuntimeError:  # closed outside the loop (shutting down): nobody is left to tell
            pass


def _wire(text: str, gz: bool) -> bytes:
    """A message as a stream sends it: UTF-8, or deflated (`gz`) to continue its gzip stream."""
    return deflated(text) if gz else text.encode()


def _closed(e: RoomError, gz: bool) -> bytes:
    """The `closed` event: the room has gone, or never let this stream in (its sentence for the person)."""
    return _wire(f"event: closed\ndata: {json.dumps({'error': str(e)})}\n\n", gz)


async def _json_call(request: Request, act) -> Response:
    """Read a small JSON object, run `act(body)`, answer its dict as JSON, or the refusal with its status."""
    raw = await request.body() if int(request.headers.get("content-length") or 0) <= MAX_BODY else None
    try:
        if raw is None or len(raw) > MAX_BODY:
            raise RoomError(f"a request to a room carries at most {MAX_BODY} bytes", 413)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            raise RoomError("the request is not JSON") from None
        if not isinstance(body, dict):
            raise RoomError("the request must be a JSON object")
        answer = await act(body)
        return answer if isinstance(answer, Response) else JSONResponse(answer)
    except RoomError as e:
        return _refusal(e)


def _refusal(e: RoomError) -> JSONResponse:
    return JSONResponse({"error": str(e)}, status_code=e.status)


def _answers(mine: dict[int, int]) -> dict[str, int]:
    return {str(n): g for n, g in sorted(mine.items())}


def _client(request: Request) -> str:
    """Who the guessing limit counts: the first forwarded address (behind a proxy such as a Space's), else the
    peer's. A forged header only moves a guesser into the limit on every client together (rooms.py)."""
    forwarded = request.headers.get("x-forwarded-for", "").split(",")[0].strip()
    return forwarded or (request.client.host if request.client else "")

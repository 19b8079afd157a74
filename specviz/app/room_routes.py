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

What a follower can fetch holds only what the room has released (issue 44): the page carries each round in its
form now, and each state on the stream the rounds whose form changed since; the room hub (room_hub.py) builds both,
once per room version, the same bytes (gzipped for a browser that accepts it) to every follower.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import random
from contextlib import aclosing
from functools import partial

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from specviz.app.room_hub import RoomHub, Sent, deflated
from specviz.app.room_html import code_form, error_page
from specviz.lecture.results import results_csv, results_json
from specviz.lecture.room_state import RoomError
from specviz.lecture.seats import GRACE_S

KEEPALIVE_S = 15.0  # a comment down each idle stream this often, so proxies keep it open and a gone one is noticed
MAX_BODY = 2048  # bytes: every request body of these routes is a few numbers and ids
MAX_STREAMS = 2000  # open event streams on one server, every room together (a room holds at most MAX_FOLLOWERS)
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # a gzip stream: deflate, no name, no time (RFC 1952)
# a stream cut (its process killed or restarted) is retried by the browser after this long (the `retry` field; a
# browser's own default is 3 to 5 s): soon, spread by RETRY_JITTER_MS so a hall does not come back all at once
RETRY_MS, RETRY_JITTER_MS = 500, 500
UNAVAILABLE = 503  # a refusal for now (a full server, a store out of reach), not a room closed
RESULTS = {"csv": (results_csv, "text/csv; charset=utf-8"), "json": (results_json, "application/json")}


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
        room = hub.rooms.resolve(code, _client(request))
    except RoomError as e:
        return HTMLResponse(code_form(str(e)), status_code=e.status)
    return RedirectResponse(f"room/{room}", status_code=303)


async def _join(hub: RoomHub, request: Request) -> Response:
    async def act(body):
        room, follower = hub.rooms.join(request.path_params["room"], _client(request), body.get("follower"))
        hub.ring_soon(room)
        return {"follower": follower, "answers": _answers(hub.rooms.mine(room, follower))}
    return await _json_call(request, act)


async def _answer(hub: RoomHub, request: Request) -> Response:
    async def act(body):
        room, follower = request.path_params["room"], body.get("follower")
        hub.rooms.answer(room, follower, body.get("round"), body.get("guess"), body.get("part"))
        hub.ring(room)
        return {"answers": _answers(hub.rooms.mine(room, follower))}
    return await _json_call(request, act)


async def _drive(hub: RoomHub, request: Request) -> Response:
    async def act(body):
        room = request.path_params["room"]
        view = hub.rooms.drive(room, body.get("key"), body.get("round"), body.get("step", 0), body.get("quiz"),
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
        content = made(*hub.rooms.results(request.path_params["room"], body.get("key")))
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
            hub.rooms.attend(room, follower, hold=False)  # held once the stream runs: its end then frees it
            # a reconnect's Last-Event-ID: the version of the last state this page received
            since = _since(request.headers.get("last-event-id", query.get("since", "0")), version)
        else:
            hub.rooms.check_key(room, query.get("key"))
            since = None
    except RoomError as e:
        return _refusal(e)
    gz = "gzip" in request.headers.get("accept-encoding", "")
    return StreamingResponse(_stream(hub, room, follower, since, gz), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no", "Vary": "Accept-Encoding",
                                      **({"Content-Encoding": "gzip"} if gz else {})})


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
    GRACE_S after (the room's count then drops: rung once the grace is over). It opens with the delay after which a
browser retries once it is cut (RETRY_MS and a jitter). `gz`: gzipped, as the browser asked."""
    hub.streams += 1
    try:
        if gz:
            yield GZIP_HEADER
        yield _wire(f"retry: {RETRY_MS + random.randrange(RETRY_JITTER_MS)}\n\n", gz)  # no data: not a message
        if follower is not None:
            try:
                hub.rooms.attend(room, follower)
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
    without a change, and `closed` (then nothing) once the room has gone (a store out of reach is waited for)."""
    seen = None
    while True:
        bell = hub.bell(room)  # taken before reading, so a change after the read rings this one
        try:
            sent = hub.state(room)
            fresh = sent.key != seen
            if fresh:
                message, since = await _state_message(hub, room, sent, follower, since, gz)
        except RoomError as e:
            if e.status != UNAVAILABLE:  # closed: said, and the stream ends
                yield _closed(e, gz)
                return
            fresh = False  # its store out of reach for now: the stream waits (rung again when the store is back)
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
        hub.rooms.leave(room, follower)
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

"""Rooms on the web: a follower's page, its stream of the room's state, its answers, and the lecturer's steering, as
a few routes on Gradio's own FastAPI app (`launch(app_kwargs={"routes": room_routes(hub)})`, in serving.py).

    GET  /room/{room}          a follower's page (assets/follower.html): the trace's stage, sent once, with the
                               stage's scripts and follow.js
    GET  /room?code=ABC2345    a short code typed in: to its room's page (guessing is rate-limited)
    POST /room/{room}/join     {"follower": the id this browser had, or null} -> {"follower", "answers"}
    GET  /room/{room}/events   ?follower=… (its seat is held while the stream is open) or ?key=… (a lecturer's
                               page): server-sent events, the room's state on every change, the class's panel too
    POST /room/{room}/answer   {"follower", "round", "guess"} -> {"answers"} (a later answer replaces it)
    POST /room/{room}/drive    {"key", "round", "step", "quiz", "leading"}: the lecturer's page only (key checked)
    POST /room/{room}/results  {"key", "format": "csv" or "json"}: the class's answers counted, as a download

Why a route of our own rather than a Gradio event (measured: docs/lecture.md, "How followers receive steps"): a
follower's page needs none of Gradio's front end (a phone loads a few kB, not Gradio's and plotly's megabytes), one
server-sent stream per follower holds no thread and no queue slot, and a step is sent once per room version, the
same bytes to every follower. Every refusal answers JSON {"error": a sentence} with a status; nothing one follower
sends reaches another but the counts in the class's panel.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections import OrderedDict
from functools import lru_cache, partial
from html import escape
from string import Template

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from specviz.app.assets import FOLLOWER_SCRIPTS, scripts, text
from specviz.lecture.results import results_csv, results_json
from specviz.lecture.rooms import GRACE_S, RoomError, RoomStore
from specviz.record.load import load_trace
from specviz.record.quiz_data import QuizFacts
from specviz.view.class_panel import class_panel
from specviz.view.stage import stage_html
from specviz.view.style import palette_css

KEEPALIVE_S = 15.0  # a comment down each idle stream this often, so proxies keep it open and a gone one is noticed
MAX_BODY = 2048  # bytes: every request body of these routes is a few numbers and ids
MAX_STREAMS = 2000  # open event streams on one server, every room together (a room holds at most MAX_FOLLOWERS)
JOIN_RING_S = 0.25  # joins are told to a room's followers at most this often (the joined count)
PAGES_KEPT = 16  # follower pages kept, gzipped (~30 kB each): rooms joining at once ask for the same few again and again
RESULTS = {"csv": (results_csv, "text/csv; charset=utf-8"), "json": (results_json, "application/json")}


class RoomHub:
    """The rooms of one server and what their web side adds: a bell per room that wakes its streams, and each
    room's state as the JSON its streams send, built once per version."""

    def __init__(self, store: RoomStore | None = None):
        self.store = store or RoomStore()
        self._bells: dict[str, asyncio.Event] = {}
        self._sent: dict[str, tuple[tuple, str]] = {}  # room -> ((version, seats held), the state's JSON)
        self._pages: OrderedDict[tuple, bytes] = OrderedDict()  # (room, part) -> its follower page, gzipped
        self._rendering: dict[tuple, asyncio.Future] = {}  # (room, part) -> its page being rendered
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

    def state(self, room: str) -> tuple[tuple, str]:
        """((version, seats held), JSON) of the room's state for its streams; RoomError once it has closed. Seats
        free themselves GRACE_S after a stream closes, without a new version: the count is part of the key."""
        view = self.store.view(room)
        sent = self._sent.get(room)
        if sent is None or sent[0] != (view.version, view.followers):
            facts = self.store.facts(room)
            panel = class_panel(facts, view.round_, view.quiz, view.followers, view.answered, view.revealed)
            sent = ((view.version, view.followers), json.dumps({
                "room": room, "round": view.round_, "step": view.step, "quiz": view.quiz, "version": view.version,
                "rounds": len(facts.rounds), "here": view.followers, "answered": view.answered,
                "leading": view.leading, "part": view.part,
                "reached": {str(n): s for n, s in view.reached.items()}, "panel": panel}))
            self._sent[room] = sent
            self._forget_closed()
        return sent

    def retrace(self, room: str, key: str, trace_json: str, facts: QuizFacts) -> None:
        """Move the room to another trace; its followers' pages reload on the next state (its `part` changed)."""
        self.store.retrace(room, key, trace_json, facts)
        self.ring(room)

    async def page(self, room: str) -> bytes:
        """A follower's page for `room`, gzipped (a phone on a hall's Wi-Fi gets a tenth of it); RoomError if
        the room has closed. Rendered once, in a thread (a class joining at once must not stall the streams of
        other rooms), however many ask for it meanwhile."""
        trace_json, part = self.store.trace_json(room)
        which = (room, part)
        if which not in self._pages:
            if which not in self._rendering:
                self._rendering[which] = asyncio.ensure_future(asyncio.to_thread(_gzipped_page, room, trace_json))
            try:
                self._pages[which] = await self._rendering[which]
            finally:
                self._rendering.pop(which, None)
            while len(self._pages) > PAGES_KEPT:
                self._pages.popitem(last=False)
        self._pages.move_to_end(which)
        return self._pages[which]

    def _forget_closed(self) -> None:
        if len(self._sent) > self.store.max_rooms:  # rooms closed since: forget what was sent to them
            for room in list(self._sent):
                try:
                    self.store.view(room)
                except RoomError:
                    self._sent.pop(room, None)
                    self._bells.pop(room, None)


ROOMS = RoomHub()  # the server's rooms: the page (build_demo) and the routes (serving.launch_kwargs) share it


# --- the follower's page --------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _page_assets() -> tuple[str, str]:
    css = palette_css() + text("style.css") + text("room.css")
    js = scripts(FOLLOWER_SCRIPTS)
    return css, js


def _gzipped_page(room: str, trace_json: str) -> bytes:
    return gzip.compress(follower_page(room, trace_json).encode(), compresslevel=6)


def follower_page(room: str, trace_json: str) -> str:
    """The whole page a follower's browser gets once (assets/follower.html): the stage of every round (hidden but
    one), the class's panel and the follower's own answers (filled by follow.js), and the scripts."""
    css, js = _page_assets()
    trace = load_trace(trace_json)
    return Template(text("follower.html")).substitute(
        css=css, js=js, room=escape(room), stage=stage_html(trace, 1), draft=escape(trace.draft_model),
        target=escape(trace.target_model))


# --- the routes -----------------------------------------------------------------------------------------------

def room_routes(hub: RoomHub) -> list[Route]:
    def route(path: str, handler, method: str = "GET") -> Route:
        return Route(path, partial(handler, hub), methods=[method], name=handler.__name__.strip("_"))
    return [route("/room", _by_code), route("/room/{room}", _page), route("/room/{room}/join", _join, "POST"),
            route("/room/{room}/answer", _answer, "POST"), route("/room/{room}/drive", _drive, "POST"),
            route("/room/{room}/results", _results, "POST"), route("/room/{room}/events", _events)]


async def _page(hub: RoomHub, request: Request) -> Response:
    try:
        page = await hub.page(request.path_params["room"])
    except RoomError as e:
        return HTMLResponse(_error_page(str(e)), status_code=e.status)
    headers = {"Cache-Control": "no-store", "Vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(page, media_type="text/html; charset=utf-8", headers={**headers, "Content-Encoding": "gzip"})
    return HTMLResponse(gzip.decompress(page), headers=headers)


async def _by_code(hub: RoomHub, request: Request) -> Response:
    code = request.query_params.get("code", "")
    if not code:
        return HTMLResponse(_code_form(""))
    try:
        room = hub.store.resolve(code, _client(request))
    except RoomError as e:
        return HTMLResponse(_code_form(str(e)), status_code=e.status)
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
        hub.store.answer(room, follower, body.get("round"), body.get("guess"))
        hub.ring(room)
        return {"answers": _answers(hub.store.mine(room, follower))}
    return await _json_call(request, act)


async def _drive(hub: RoomHub, request: Request) -> Response:
    async def act(body):
        room = request.path_params["room"]
        view = hub.store.drive(room, body.get("key"), body.get("round"), body.get("step", 0), body.get("quiz"),
                               body.get("leading"))
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
    """A follower's stream (?follower=…: its seat is held while it is open) or its lecturer's (?key=…)."""
    room, query = request.path_params["room"], request.query_params
    follower = query.get("follower")
    try:
        hub.state(room)
        if hub.streams >= MAX_STREAMS:
            raise RoomError("the server follows as many rooms' streams as it can; reload in a minute", 503)
        if follower is not None:
            hub.store.attend(room, follower, hold=False)  # held once the stream runs: its end then frees it
        else:
            hub.store.check_key(room, query.get("key"))
    except RoomError as e:
        return _refusal(e)
    return StreamingResponse(_stream(hub, room, follower), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


async def _stream(hub: RoomHub, room: str, follower: str | None):
    """The room's state now, then again after every change (the latest only: a burst of answers is one message
    to a slow follower), a comment when idle, and a `closed` event when the room has gone. A follower's seat is
    held while this runs, and GRACE_S after (the room's count then drops: rung once the grace is over)."""
    hub.streams += 1
    try:
        if follower is not None:
            try:
                hub.store.attend(room, follower)
            except RoomError as e:
                follower = None  # it holds no seat to give back
                yield f"event: closed\ndata: {json.dumps({'error': str(e)})}\n\n"
                return
        seen = None
        while True:
            bell = hub.bell(room)  # taken before reading, so a change after the read rings this one
            try:
                version, data = hub.state(room)
            except RoomError as e:
                yield f"event: closed\ndata: {json.dumps({'error': str(e)})}\n\n"
                return
            if version != seen:
                seen = version
                yield f"data: {data}\n\n"
                continue
            try:
                await asyncio.wait_for(bell.wait(), KEEPALIVE_S)
            except asyncio.TimeoutError:
                yield ": idle\n\n"
    finally:
        hub.streams -= 1
        if follower is not None:
            hub.store.leave(room, follower)
            try:
                asyncio.get_running_loop().call_later(GRACE_S + 0.5, hub.ring, room)
            except RuntimeError:  # closed outside the loop (shutting down): nobody is left to tell
                pass


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


def _error_page(message: str) -> str:
    return _small_page("specviz room", f'<h1>specviz room</h1><p role="alert">{escape(message)}</p>'
                                       f'<p><a href="../room">Enter a room code</a></p>')


def _code_form(message: str) -> str:
    said = f'<p role="alert">{escape(message)}</p>' if message else ""
    return _small_page("specviz: join a room", f'<h1>Join a room</h1>{said}<form method="get" action="room"><label>'
                       f'Code on the projector <input name="code" autocomplete="off" autocapitalize="characters" '
                       f'maxlength="12" size="8" required></label> <button>Join</button></form>', "sv-room-form")


def _small_page(title: str, body: str, kind: str = "") -> str:
    """A page of a few lines (an error, the code form), styled by room.css like the follower's page."""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><title>{escape(title)}</title><style>{_small_css()}'
            f'</style></head><body class="sv-room-page {kind}">{body}</body></html>')


@lru_cache(maxsize=1)
def _small_css() -> str:
    return text("room.css")

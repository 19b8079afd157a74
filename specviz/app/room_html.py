"""A room's pages as HTML (app/room_routes.py serves them): the follower's page, gzipped once per change of what the
room has released, and the small pages (an error, the form that takes a code), all styled by assets/room.css.
"""

from __future__ import annotations

import gzip
from functools import lru_cache
from html import escape
from string import Template

from specviz.app.assets import FOLLOWER_SCRIPTS, scripts, text
from specviz.record.trace import Trace
from specviz.view.follower import follower_stage
from specviz.view.style import palette_css


@lru_cache(maxsize=1)
def _page_assets() -> tuple[str, str]:
    css = palette_css() + text("style.css") + text("room.css")
    js = scripts(FOLLOWER_SCRIPTS)
    return css, js


def gzipped_page(room: str, part: int, trace: Trace, forms: dict[int, int], since: int) -> bytes:
    return gzip.compress(follower_page(room, part, trace, forms, since).encode(), compresslevel=6)


def follower_page(room: str, part: int, trace: Trace, forms: dict[int, int], since: int) -> str:
    """The page a follower's browser gets (assets/follower.html) for the room's trace `part`: every round in its
    form (`forms`, as of room version `since`: the stream then sends what changes after it), one shown; the class's
    panel and the follower's own answers (filled by follow.js), and the scripts."""
    css, js = _page_assets()
    return Template(text("follower.html")).substitute(
        css=css, js=js, room=escape(room), part=int(part), since=int(since), stage=follower_stage(trace, forms),
        draft=escape(trace.draft_model), target=escape(trace.target_model))


def error_page(message: str) -> str:
    return _small_page("specviz room", f'<h1>specviz room</h1><p role="alert">{escape(message)}</p>'
                                       f'<p><a href="../room">Enter a room code</a></p>')


def code_form(message: str) -> str:
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

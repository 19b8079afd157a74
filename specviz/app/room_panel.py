"""The lecturer's side of a room on the main page, and the page's deep links.

"Open a room" puts the trace on screen into a room (lecture/rooms.py) and shows the join link, its QR code and the
short code for the projector; the lecturer's key stays in the page's markup (hidden) and in "Copy my lecturer
link", never on screen. From then on assets/room.js sends each round, reveal and quiz switch of this page to the
room and draws the class's panel from the room's stream (app/room_routes.py). The box also names the trace the
room was on when this page got it (its id and title): a drive names it, and a page whose room has moved to another
trace is told so and moves nothing (assets/room.js).

Deep links open the page on a shipped example, a round and a reveal step (`?example=paris&round=3&step=1`; a step,
or `quiz=1`, turns quiz mode on; `present=1`, read by assets/present.js, opens the presenter view; `tab=lab` or
`tab=costs`, read by assets/sections.js, opens that tab), or a room for its lecturer (`?room=…&key=…`); "Link to this
round" writes the link of what the page shows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

import gradio as gr
import segno

from specviz.app.actions import ModelActions, example_said
from specviz.app.room_hub import RoomHub
from specviz.lecture.examples import EXAMPLES, FIRST, ExampleError, example_named, load_example
from specviz.lecture.room_state import RoomError, RoomView
from specviz.record.load import load_trace
from specviz.record.trace import Trace
from specviz.settings.bounds import short_repr, whole_number
from specviz.view import notices
from specviz.record.quiz_data import QuizState, RoundQuiz
from specviz.record.quiz_data import reveal_steps
from specviz.lecture.room_trace import quiz_facts, trace_title

BASE_JS = "location.origin + location.pathname"  # the page's own address, as the browser sees it (a proxy's too)
HREF_JS = "location.href"  # the same with its query: what a deep link asks for


@dataclass
class RoomPanel:
    accordion: gr.Accordion  # folded until used: a lecturer's link unfolds it (its box must be on the page to lead)
    open: gr.Button
    move: gr.Button  # "Move the room to this trace": the room led from this page follows the trace on screen
    box: gr.HTML  # the join link, QR code and code; the class's panel (room.js fills it)
    link: gr.Button  # "Link to this round"
    link_text: gr.Textbox


def build_room_panel() -> RoomPanel:
    with gr.Accordion("Room: the class follows on their own devices", open=False, elem_id="room-panel") as accordion:
        with gr.Row(equal_height=True):
            open_ = gr.Button("Open a room for this trace", elem_id="open-room", scale=0, min_width=260)
            move = gr.Button("Move my room to this trace", elem_id="move-room", scale=0, min_width=240)
            link = gr.Button("Link to this round", elem_id="link-round", scale=0, min_width=200)
            link_text = gr.Textbox(label="Link to what the page shows (for a slide)", interactive=False,
                                   elem_id="round-link", buttons=["copy"], scale=3)
        box = gr.HTML("", label="Room", elem_id="room-box")
    return RoomPanel(accordion, open_, move, box, link, link_text)


def wire_room_panel(panel: RoomPanel, trace: gr.State, status: gr.HTML, hub: RoomHub) -> None:
    quick = dict(show_progress="hidden", concurrency_limit=None, queue=False)
    panel.open.click(lambda t, base: open_room(hub, t, base), [trace, panel.link_text], [panel.box, status],
                     js=f"(trace, base) => [trace, {BASE_JS}]", api_name="open_room", **quick)
    panel.move.click(lambda t, lead: move_room(hub, t, lead), [trace, panel.link_text], [panel.box, status],
                     js="(trace, lead) => [trace, JSON.stringify({...(document.querySelector('#room-box .sv-lead')"
                        "?.dataset || {}), base: " + BASE_JS + "})]", api_name="move_room", **quick)
    panel.link.click(link_to, [trace, panel.link_text], [panel.link_text, status], api_name="link_to_round",
                     js=f"(trace, base) => [trace, JSON.stringify({{base: {BASE_JS}, ...window.svWhere()}})]",
                     **quick)


# --- opening a room -------------------------------------------------------------------------------------------

def open_room(hub: RoomHub, trace: Trace | None, base) -> tuple:
    """A room on the trace on screen. -> the room box, the status line"""
    if trace is None or not trace.rounds:
        return gr.skip(), notices.status("Open a trace first (an example, a file or a run): a room shows one.",
                                           "error")
    try:
        opened = hub.rooms.open(trace.to_json(), quiz_facts(trace), trace_title(trace))
        view, _ = hub.rooms.lead(opened.room, opened.key)
    except RoomError as e:
        return gr.skip(), notices.status(str(e), "error")
    base = _base(base)
    return room_box(base, opened.room, opened.code, opened.key, view), notices.status(
        f"Room {opened.code} is open: students scan the QR code or enter the code; they follow your rounds, "
        f"reveals and quiz mode.", "done")


def move_room(hub: RoomHub, trace: Trace | None, lead_json) -> tuple:
    """Move the room this page leads (its id and key from the room box, as JSON) to the trace on screen; the
    followers' pages reload with it. -> the room box (anew: room.js leads from it), the status line"""
    try:
        lead = json.loads(lead_json) if isinstance(lead_json, str) and len(lead_json) <= 2000 else {}
    except ValueError:
        lead = {}
    lead = lead if isinstance(lead, dict) else {}
    if trace is None or not trace.rounds:
        return gr.skip(), notices.status("Open a trace first (an example, a file or a run): a room shows one.",
                                           "error")
    if not isinstance(lead.get("room"), str) or not isinstance(lead.get("key"), str):
        return gr.skip(), notices.status("This page leads no room: open one first.", "error")
    try:
        hub.retrace(lead["room"], lead["key"], trace.to_json(), quiz_facts(trace), trace_title(trace))
        view, code = hub.rooms.lead(lead["room"], lead["key"])
    except RoomError as e:
        return gr.skip(), notices.status(str(e), "error")
    return room_box(_base(lead.get("base")), lead["room"], code, lead["key"], view), notices.status(
        f"Room {code} now shows this trace: the class's pages reload with it, at round 1. Its answers start afresh "
        f"(a trace the room showed before goes on where the class left it); the results keep every trace's.",
        "done")


def room_box(base: str, room: str, code: str, key: str, view: RoomView) -> str:
    """The room's box on the lecturer's page: the QR code, the link and the code, the lecturer's buttons, what room.js
    leads from (hidden: the room, the key, the trace the room is on), and the question asked when this page and the
    room are on different traces (room.js fills in their titles)."""
    join = f"{base}room/{room}"
    lead = f"{base}?{urlencode({'room': room, 'key': key})}"
    qr = segno.make(join, error="m").svg_inline(border=2, dark="#111", light="#fff", omitsize=True)
    return (f'<div class="sv-room-box"><div class="sv-qr" role="img" aria-label="QR code of the join link">{qr}'
            f'</div><div><p>Follow on your phone or laptop: scan the code, open</p>'
            f'<p class="sv-room-link">{escape(join)}</p><p>or enter <span class="sv-room-code">{escape(code)}</span>'
            f' at <span class="sv-room-link">{escape(base)}room</span></p>'
            f'<p>The class sees your round, your reveals and quiz mode; in quiz mode each student answers on their '
            f'own device. Only your lecturer link moves the room: '
            f'<button type="button" class="sv-copy-lead">Copy my lecturer link</button> (never shown here).</p>'
            f'<p>The class\'s results (counts per round of every trace this room showed, no names): '
            f'<button type="button" class="sv-results" '
            f'data-format="csv">Download CSV</button> <button type="button" class="sv-results" data-format="json">'
            f'Download JSON</button></p>'
            f'<span hidden class="sv-lead" data-room="{escape(room)}" data-key="{escape(key)}" '
            f'data-link="{escape(lead)}" data-base="{escape(base)}" data-part="{int(view.part)}" '
            f'data-trace="{escape(view.trace)}" data-title="{escape(view.title)}"></span></div>'
            f'<div class="sv-room-ask" role="alertdialog" aria-label="another trace" hidden>'
            f'<p class="sv-room-ask-said">This page shows another trace than room {escape(code)}.</p>'
            f'<p>Until you choose, this page\'s steps do not move the room; the class waits on the room\'s round.</p>'
            f'<button type="button" class="sv-move-room">Move the room to this trace</button> '
            f'<button type="button" class="sv-follow-room">Follow the room</button> '
            f'<button type="button" class="sv-stop-lead">Stop leading the room</button> <span>(or open the room\'s '
            f'trace again to go on leading it)</span></div>'
            f'<div id="sv-room-said" class="sv-room-said" role="status"></div>'
            f'<div id="sv-class-lead" class="sv-class-lead"></div></div>')


def _base(base) -> str:
    """The page's address the browser sent, ending in "/" (a bad one: a relative "./", which still works)."""
    text = base if isinstance(base, str) else ""
    if not text.startswith(("http://", "https://")) or len(text) > 500 or any(c in text for c in "\"'<> "):
        return "./"
    return text if text.endswith("/") else text.rsplit("/", 1)[0] + "/"


# --- links ----------------------------------------------------------------------------------------------------

def link_to(trace: Trace | None, where_json) -> tuple:
    """The link of the shipped example on screen at its round and reveal step. -> link text, status"""
    try:
        where = json.loads(where_json) if isinstance(where_json, str) else {}
    except ValueError:
        where = {}
    name = example_named(trace) if trace is not None else None
    if name is None:
        return "", notices.status("Only a shipped recorded example has a link (a run of yours lives in this "
                                    "browser tab): open a room to share it with a class, or download the trace.",
                                    "error")
    query = {"example": name, "round": whole_number(where.get("round")) or 1}
    step = whole_number(where.get("step")) or 0
    if step or where.get("quiz"):
        query["step"] = step
    link = f"{_base(where.get('base'))}?{urlencode(query, quote_via=quote)}"
    return link, notices.status("The link opens this example at this round (and reveal step, in quiz mode); "
                                  "copy it from the box.", "done")


def open_linked(models: ModelActions, hub: RoomHub, panel: RoomPanel, lecture, href, *shown):
    """The page's first load: what its address `href` (as the browser sent it) asks for (an example at a round
    and step, a room for its lecturer), else examples.FIRST. A link that asks for something that is not there
    opens what it can and says why. `shown`: the settings box as the page held it when it loaded (CONTROLS' order);
    a setting the opened trace leaves as it was gets no update, so what a person typed there meanwhile stays."""
    return models.keep_shown(_opened(models, hub, panel, lecture, href), shown)


def _opened(models: ModelActions, hub: RoomHub, panel: RoomPanel, lecture, href) -> dict:
    parts = urlsplit(href if isinstance(href, str) and len(href) <= 2000 else "")
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    base = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    if "room" in query:
        return _lead_linked(models, hub, panel, lecture, base, query)
    name = query.get("example", FIRST)
    problems = []
    if name not in EXAMPLES:
        problems.append(f"there is no recorded example {short_repr(name)} (the examples: {', '.join(EXAMPLES)})")
        name = FIRST
    if not {"round", "step", "quiz"} & set(query):
        return _with_problems(models, models.open_example(list(EXAMPLES).index(name), lecture), problems)
    try:
        trace = load_example(name)
    except ExampleError:  # open_example says what is wrong with the file
        return _with_problems(models, models.open_example(list(EXAMPLES).index(name), lecture), problems)
    number, step = whole_number(query.get("round", 1)), whole_number(query.get("step", 0))
    n = len(trace.rounds)
    if number is None or not 1 <= number <= n:
        problems.append(f"the link asks for round {query.get('round', '')[:12]}, but “{name}” has rounds 1 to {n}")
        number = min(max(number or 1, 1), n)
    steps = reveal_steps(trace.rounds[number - 1])
    if step is None or not 0 <= step <= steps:
        problems.append(f"the link asks for reveal step {query.get('step', '')[:12]}, but round {number} has "
                        f"0 to {steps}")
        step = 0
    quiz = QuizState(on="step" in query or query.get("quiz") == "1", current=number, rounds={number: RoundQuiz(None, step)} if step else {})
    updates = models.show_trace(trace, lecture, f"Opened the recorded example “{EXAMPLES[name].title}” at round "
                                                f"{number} from a link: {example_said(EXAMPLES[name], trace)}", quiz)
    return _with_problems(models, updates, problems)


def _lead_linked(models: ModelActions, hub: RoomHub, panel: RoomPanel, lecture, base, query: dict) -> dict:
    room, key = query.get("room", ""), query.get("key", "")
    try:
        view, code = hub.rooms.lead(room, key)
        trace = load_trace(hub.rooms.trace_json(room)[0])
    except (RoomError, ValueError) as e:
        updates = models.open_first_example(lecture)
        return _with_problems(models, updates, [f"could not open the room: {e}"])
    quiz = QuizState(view.quiz, view.round_, {n: RoundQuiz(None, s) for n, s in view.reached.items()})
    updates = models.show_trace(trace, lecture, f"You lead room {code} again: the class follows this page.", quiz)
    updates[panel.box] = room_box(_base(base), room, code, key, view)
    updates[panel.accordion] = gr.Accordion(open=True)
    return updates


def _with_problems(models: ModelActions, updates: dict, problems: list[str]) -> dict:
    if problems:
        updates[models.out.status] = notices.status("; ".join(problems) + ".", "error")
    return updates

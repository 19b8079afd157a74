"""What a follower can fetch holds only what the room has released (issue 44), checked as a curious student would:
the follower page and the event stream fetched with a plain HTTP client, every section grepped for the fates, their
attributes and the numbers that decide them. For every shipped example and a tree trace, a lecture is driven step by
step (quiz on from the start, a round revealed step by step, a round shown with quiz mode off, rounds not reached);
after each step the page a late joiner gets, and the page a follower holds from its first load plus what the stream
sent since, are checked against the rule (docs/lecture.md, "What a phone can know, and when"), and must agree.

Negative controls: the same leak check finds the answer in the old page (every round in full: stage_html) and in a
quiz form with one fate planted in it. Bad input on the stream's new field (`since`, or a reconnect's Last-Event-ID)
and on the drive's (`trace`) gets a status and a sentence, and the room goes on.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib

import httpx
import pytest

from specviz.app.room_hub import RoomHub
from specviz.engine import Engine, RunSettings
from specviz.lecture.examples import EXAMPLES, load_example
from specviz.lecture.room_trace import quiz_facts, trace_title
from specviz.lecture.rooms import Rooms
from specviz.record.quiz_data import reveal_steps
from specviz.view.quiz_form import quiz_section
from specviz.view.stage import stage_html
from specviz.view.token_text import quoted
from harness.room_pages import room_server
from tests.helpers import Clock, EventReader

# A fate, its mark or its class; the attributes and panels that carry the answer; the verdict's draw; the result.
LEAK = re.compile(r"accepted|rejected|discarded|replacement|bonus|examined|[✓✗░◆★]|r = |for 1 target pass|"
                  r"data-accepted|data-steps|sv-next|sv-last|sv-explain|sv-cache|sv-answer|sv-tree-path|sv-dec-|"
                  r"sv-one-line", re.I)
SECTION = re.compile(r'<section class="sv-round[^>]*?data-round="(\d+)".*?</section>', re.S)
CARD = re.compile(r'(?=<div class="sv-pos[ "])')


@pytest.fixture(scope="module")
def tree_trace(tiny_pair, tokenizer):
    draft, target = tiny_pair
    settings = RunSettings(drafter="tree", tree_widths=(2, 2, 1), temperature=0.0, max_new_tokens=24)
    return Engine(draft, target, tokenizer, "tiny-draft", "tiny-target").run("def fib(n):", settings)


@pytest.fixture(scope="module")
def traces(tree_trace):
    return {**{name: load_example(name) for name in EXAMPLES}, "tiny-tree": tree_trace}


@pytest.fixture(scope="module")
def server():
    hub = RoomHub(Rooms(max_rooms=4, max_followers=5, idle_s=3600, clock=Clock()))
    with room_server(hub) as url:
        yield hub, url


@pytest.fixture
def http(server):
    with httpx.Client(base_url=server[1], timeout=30) as client:
        yield client


def sections(page: str) -> dict[int, str]:
    """Round -> its section in a page (or a stream's sections), the `hidden` flag left out (which round is on
    screen is the page's own business)."""
    return {int(m.group(1)): m.group(0).replace(" hidden>", ">", 1) for m in SECTION.finditer(page)}


def leaks(html: str, rnd) -> list[str]:
    """What of a round's verdicts a student could read in `html`: fate words, classes, attributes, the draw, the
    result, and the round's last token where it is no draft of the round."""
    found = [m.group() for m in LEAK.finditer(html)]
    if quoted(rnd.next_token.text) in html and rnd.next_token.text not in {d.text for d in rnd.drafts}:
        found.append(f"the last token {rnd.next_token.text!r}")
    return found


def check(html: str, rnd, form) -> list[str]:
    """Problems with a round's section on a follower's page, against `form`: "unseen", ("quiz", s) or "full"."""
    if form == "full":
        return [] if 'data-accepted="' in html else ["a released round came without its verdicts"]
    if form == "unseen":
        return ([] if "sv-unseen" in html and "sv-text" not in html and "sv-cards" not in html else
                ["a round not reached shows more than a placeholder"]) + leaks(html, rnd)
    s = form[1]
    head, _, cards = html.partition('<div class="sv-cards">')
    strip = head.split('class="sv-cut"', 1)[1] if 'class="sv-cut"' in head else ""
    chips = re.findall(r'class="sv-tok (sv-[\w-]+)', strip)
    problems = [f"the strip's drafts: {chips}"] if chips[s:] != ["sv-drafted"] * len(chips[s:]) or \
        any(c == "sv-drafted" for c in chips[:s]) else []
    shown = CARD.split(cards)[1:1 + s]  # positions 1 … s: revealed
    rest = html.replace(strip, "").replace("".join(shown), "")
    return problems + leaks(rest, rnd) + [f"position {i + 1} not revealed" for i, c in enumerate(shown)
                                          if not LEAK.search(c)]


class Oracle:
    """The rule of issue 44 as its decisions say it, kept beside the room: a round is released once revealed to its
    last step or shown with quiz mode off; visible once shown, or once every round before it is released."""

    def __init__(self, trace):
        self.steps = [reveal_steps(r) for r in trace.rounds]
        self.shown, self.quiz_off, self.reached = set(), set(), {}

    def drive(self, round_: int, step: int, quiz: bool) -> None:
        self.shown.add(round_)
        self.reached[round_] = max(self.reached.get(round_, 0), step)
        if not quiz:
            self.quiz_off.add(round_)

    def released(self, n: int) -> bool:
        return n in self.quiz_off or self.reached.get(n, 0) >= self.steps[n - 1]

    def form(self, n: int):
        if self.released(n):
            return "full"
        if n in self.shown or all(self.released(m) for m in range(1, n)):
            return "quiz", self.reached.get(n, 0)
        return "unseen"


def lecture(trace) -> list[tuple[int, int, bool]]:
    """The lecturer's drives (round, step, quiz): quiz on at round 1; round 2 revealed step by step to its end; round 3
    in quiz; round 4 shown with quiz mode off; round 5 in quiz again, its first step revealed where it has two."""
    steps = [reveal_steps(r) for r in trace.rounds]
    drives = [(1, 0, True)] + [(2, s, True) for s in range(steps[1] + 1)] + [(3, 0, True), (4, 0, False)]
    return drives + [(5, 0, True)] + ([(5, 1, True)] if steps[4] > 1 else [])


def open_room(hub, trace):
    for old in list(hub.rooms.store._rooms):  # each test its own room, within the server's four
        hub.rooms.close(old)
    return hub.rooms.open(trace.to_json(), quiz_facts(trace), trace_title(trace))


@pytest.mark.parametrize("name", [*EXAMPLES, "tiny-tree"])
def test_a_follower_fetches_only_what_the_room_released(server, http, traces, name):
    hub, base = server
    trace = traces[name]
    opened = open_room(hub, trace)
    follower = http.post(f"/room/{opened.room}/join", json={}).json()["follower"]
    first = http.get(f"/room/{opened.room}").text
    since = re.search(r'data-since="(\d+)"', first).group(1)
    held = sections(first)  # what this follower's page holds: its first load, then what the stream sends
    stream = EventReader(f"{base}/room/{opened.room}/events?follower={follower}&since={since}")
    oracle, versions = Oracle(trace), []
    try:
        for round_, step, quiz in lecture(trace):
            body = {"key": opened.key, "trace": opened.trace, "round": round_, "step": step, "quiz": quiz}
            version = http.post(f"/room/{opened.room}/drive", json=body).json()["version"]
            oracle.drive(round_, step, quiz)
            versions.append((version, {n: oracle.form(n) for n in range(1, len(trace.rounds) + 1)}))
            stream.wait_version(version)
            late = sections(http.get(f"/room/{opened.room}").text)  # a late joiner's page, or a reload
            got = {}
            for _, _, state, _ in list(stream.messages):  # in order: a later form replaces an earlier one
                got.update(sections("".join(state.get("sections", {}).values())))
            page_now = {**held, **got}
            assert page_now == late, f"after {round_, step, quiz}: the stream left the page behind"
            for n, html in late.items():
                problems = check(html, trace.rounds[n - 1], oracle.form(n))
                assert not problems, (name, (round_, step, quiz), n, oracle.form(n), problems[:5])
        for _, ident, state, _ in list(stream.messages):  # each message as it came: nothing early, even for a moment
            before = [forms for v, forms in versions if v <= state["version"]]  # the drives it came after
            for n, html in sections("".join(state.get("sections", {}).values())).items():
                assert before and not check(html, trace.rounds[n - 1], before[-1][n]), (name, n, ident)
            assert ident == str(state["version"])  # what a reconnect sends back as Last-Event-ID
    finally:
        stream.stop()
        hub.rooms.close(opened.room)
        hub.ring(opened.room)


@pytest.mark.parametrize("name", [*EXAMPLES, "tiny-tree"])
def test_the_leak_check_finds_the_answer_in_the_old_page(traces, name):
    """Negative control: the page built the old way (every round in full) gives every round away, and a quiz form
    with one thing of the verdict planted in it is caught."""
    trace = traces[name]
    old = sections(stage_html(trace, 1))
    assert len(old) == len(trace.rounds)
    for n, html in old.items():
        rnd = trace.rounds[n - 1]
        assert leaks(html, rnd), (name, n)
        quiz = quiz_section(trace, n)
        assert not leaks(quiz, rnd), (name, n, leaks(quiz, rnd))
        assert leaks(quiz.replace('data-k="', f'data-accepted="{rnd.n_accepted}" data-k="', 1), rnd)
        if rnd.drafts and not rnd.tree:
            assert leaks(quiz.replace("sv-drafted", f"sv-{rnd.drafts[0].fate}", 1), rnd)


def test_a_reconnect_gets_what_changed_since_its_last_state_and_nothing_more(server, http, traces):
    hub, base = server
    trace = traces["code"]
    opened = open_room(hub, trace)
    follower = http.post(f"/room/{opened.room}/join", json={}).json()["follower"]
    drive = {"key": opened.key, "trace": opened.trace}
    before = http.post(f"/room/{opened.room}/drive", json={**drive, "round": 2, "quiz": True}).json()["version"]
    steps = reveal_steps(trace.rounds[2])
    for step in range(steps + 1):
        http.post(f"/room/{opened.room}/drive", json={**drive, "round": 3, "step": step, "quiz": True})
    again = EventReader(f"{base}/room/{opened.room}/events?follower={follower}&since=0",
                        headers={"Last-Event-ID": str(before)})
    state = again.wait_version(before + 1)
    again.stop()
    assert set(state["sections"]) == {"3"} and 'data-accepted="' in state["sections"]["3"]  # round 3, released
    fresh = EventReader(f"{base}/room/{opened.room}/events?follower={follower}&since={state['version']}")
    assert fresh.wait_version(state["version"])["sections"] == {}  # nothing changed since: nothing sent
    fresh.stop()
    hub.rooms.close(opened.room)
    hub.ring(opened.room)


@pytest.mark.parametrize("query, header, message", [
    ("since=abc", None, "since must be the version"), ("since=-1", None, "since must be the version"),
    ("since=1.5", None, "since must be the version"), ("since=99999999999999", None, "since must be the version"),
    ("since=999", None, "from 0 to"), ("since=%C2%B2", None, "since must be the version"),
    ("since=0", "x" * 300, "since must be the version"),
])
def test_bad_since_gets_a_sentence_and_the_room_goes_on(server, http, traces, query, header, message):
    hub, _ = server
    opened = open_room(hub, traces["code"])
    follower = http.post(f"/room/{opened.room}/join", json={}).json()["follower"]
    headers = {"Last-Event-ID": header} if header else {}
    refused = http.get(f"/room/{opened.room}/events?follower={follower}&{query}", headers=headers)
    assert refused.status_code == 400 and message in refused.json()["error"]
    other = hub.rooms.open(traces["story"].to_json(), quiz_facts(traces["story"]), trace_title(traces["story"]))
    stranger = http.post(f"/room/{other.room}/join", json={}).json()["follower"]
    for who in (stranger, "forged", ""):  # another room's follower, a forged one: refused before `since` is read
        refused = http.get(f"/room/{opened.room}/events?follower={who}&since=0")
        assert refused.status_code == 403 and "join the room" in refused.json()["error"]
    for key, trace in ((opened.key, other.trace), (other.key, opened.trace)):  # another room's trace, or key
        refused = http.post(f"/room/{opened.room}/drive", json={"key": key, "trace": trace, "round": 2})
        assert refused.status_code in (403, 409) and refused.json()["error"]
    ok = http.post(f"/room/{opened.room}/drive", json={"key": opened.key, "trace": opened.trace, "round": 2})
    assert ok.status_code == 200 and http.get(f"/room/{opened.room}").status_code == 200
    hub.rooms.close(other.room)


def test_a_message_is_gzipped_once_and_reaches_every_follower_as_the_same_bytes(server, http, traces):
    hub, base = server
    trace = traces["code"]
    opened = open_room(hub, trace)
    people = [http.post(f"/room/{opened.room}/join", json={}).json()["follower"] for _ in range(2)]
    since = hub.rooms.view(opened.room).forms_version
    streams = [EventReader(f"{base}/room/{opened.room}/events?follower={f}&since={since}") for f in people]
    for stream in streams:
        stream.wait_version(since)
    body = {"key": opened.key, "trace": opened.trace, "round": 3, "quiz": True}
    version = http.post(f"/room/{opened.room}/drive", json=body).json()["version"]
    first, second = (stream.wire(version) for stream in streams)
    assert first == second and len(first) < 0.3 * len(zlib.decompressobj(-zlib.MAX_WBITS).decompress(first))
    assert all(s.headers["content-encoding"] == "gzip" for s in streams)
    for stream in streams:
        stream.stop()
    hub.rooms.close(opened.room)
    hub.ring(opened.room)


def test_the_page_is_sent_gzipped_and_grows_only_with_what_is_released(server, http, traces):
    hub, _ = server
    trace = traces["paris"]
    opened = open_room(hub, trace)
    raw = httpx.get(f"{server[1]}/room/{opened.room}", headers={"Accept-Encoding": "gzip"})
    start = len(gzip.compress(raw.content))
    for n in range(1, len(trace.rounds) + 1):
        http.post(f"/room/{opened.room}/drive", json={"key": opened.key, "trace": opened.trace, "round": n,
                                                        "quiz": False})
    every = len(gzip.compress(http.get(f"/room/{opened.room}").content))
    # before any release, far smaller: every round released adds at least 1 kB gzipped (about 1.4 kB for paris's 11),
    # so none of them was in the page before
    assert raw.headers["content-encoding"] == "gzip" and start < every - 1000 * len(trace.rounds)


def test_the_panel_says_a_round_shown_with_the_quiz_off_takes_no_answers():
    """Issue 64, item 2, through the hub as the streams send it: a round shown with quiz mode off, then quiz mode on
    over it: the panel says the quiz takes no answers to it; the next round, not shown before, is asked as usual."""
    trace = load_example("paris")
    hub = RoomHub(Rooms(max_rooms=2, max_followers=3, idle_s=3600, clock=Clock()))
    opened = hub.rooms.open(trace.to_json(), quiz_facts(trace))
    hub.rooms.drive(opened.room, opened.key, round_=2, quiz=False, trace=opened.trace)
    hub.rooms.drive(opened.room, opened.key, round_=2, quiz=True, trace=opened.trace)
    assert "round 2 was shown with quiz mode off" in json.loads(hub.state(opened.room).data)["panel"]
    hub.rooms.drive(opened.room, opened.key, round_=3, quiz=True, trace=opened.trace)
    panel = json.loads(hub.state(opened.room).data)["panel"]
    assert "answered round 3" in panel and "quiz mode off" not in panel

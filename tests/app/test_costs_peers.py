"""The Costs tab's last section, "Beside llama.cpp (recorded)" (app/costs_tab.py's peers_view), without a browser:
the shipped recording's notice and table, and where the file is missing or malformed a notice that says so in plain
words, no table, and the tab builds as before."""

import json
from html import escape

from specviz.app.costs_tab import peers_view
from specviz.measure.peer_recording import RECORDED, recorded_peers
from specviz.measure.peer_table import NONE_READ, peer_table

HOSTILE = '<img src=x onerror="alert(1)">'


def test_the_section_opens_on_the_shipped_recording():
    status, table = peers_view(recorded_peers())
    assert 'class="sv-tab-status"' in status and "A recording, not this server: made 2026-12-06" in status
    assert "--record-peers" in status and "xllamacpp 2026.10.11549" in status
    assert table == peer_table(recorded_peers()) and "llama.cpp target alone" in table


def test_a_missing_or_malformed_file_says_so_and_shows_no_table(tmp_path):
    path = tmp_path / "peers.json"
    for text in (None, "not json", json.dumps({"rows": []})):
        if text is not None:
            path.write_text(text)
        status, table = peers_view(recorded_peers(path))
        assert escape(NONE_READ) in status and "could be read" in status and table == ""


def test_a_hostile_machine_in_the_file_is_escaped_in_the_notice(tmp_path):
    data = json.loads(RECORDED.read_text())
    path = tmp_path / "peers.json"
    path.write_text(json.dumps({**data, "machine": HOSTILE, "wheel": HOSTILE}))
    status, table = peers_view(recorded_peers(path))
    assert "<img" not in status and status.count(escape(HOSTILE)) == 2 and "<img" not in table


def test_the_tab_builds_without_a_recording(monkeypatch):
    """The whole tab laid out with no recording to read: its other sections are there, this one says why it is empty."""
    import gradio as gr

    from specviz.app import costs_tab

    monkeypatch.setattr(costs_tab, "recorded_peers", lambda: None)
    with gr.Blocks() as page:
        costs_tab.build_costs(gr.Dropdown(["a pair"], value="a pair"), None)
    by_id = {b.elem_id: b for b in page.blocks.values() if getattr(b, "elem_id", None)}
    assert escape(NONE_READ) in by_id["peers-status"].value and by_id["peers-table"].value == ""
    assert {"cost-measure", "serve-live", "serve-table"} <= set(by_id)

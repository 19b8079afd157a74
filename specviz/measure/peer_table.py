"""llama.cpp beside specviz, as recorded (peer_recording.py) -> the Costs tab's section "Beside llama.cpp (recorded)":
its table, what the table's figures are, and the line that says whose recording it is and how to make it again.
Pure functions of the recording; every text read from the file is escaped here (`peer_table`) or by the notice that
shows it (`peer_words` is plain text, for view/notices.tab_status).
"""

from __future__ import annotations

from html import escape

from specviz.measure.peer_recording import PeerRecording, PeerRow
from specviz.measure.serve_chart import SMALL
from specviz.record.stats import Spread

RUN_NAMES = {"target-only": "specviz target alone"}  # the bench's config names, where they read badly alone
HEAD = ("prompt", "run", "tokens/s, first token's wait included", "× specviz's target alone", "decode tokens/s",
        "first token, s", "draft acceptance")
RATIO_WORDS = ("“× specviz's target alone” is the median over the turns of each turn's own ratio to specviz's "
               "target alone in that turn, so it need not equal the ratio of the two medians printed.")
FIGURE_WORDS = "Decode: the tokens after the first over the time after it; acceptance: drafts kept over drafts proposed."
RECORD_COMMAND = "python -m specviz bench --peers llama.cpp --rules --types {types} --modes greedy --repeats {turns} " \
                 "--max-new-tokens {tokens} --record-peers"
NONE_READ = ("No recording of llama.cpp beside specviz could be read, so there is nothing to show here; "
             "python -m specviz bench --peers llama.cpp --record-peers makes one.")


def peer_table(recording: PeerRecording) -> str:
    """The recording's rows as an HTML table, each figure its median (its range, smaller, where the table gives one:
    tokens/s and the ratio), then in words what the run was and what the figures are (RATIO_WORDS)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEAD)
    rows = "".join(_row(r) for r in recording.rows)
    turns = "–".join(dict.fromkeys(str(r.runs) for r in recording.rows))
    said = (f"{escape(recording.pair)}, greedy, {recording.tokens} new tokens, {recording.threads} threads, the same "
            f"GGUF files; medians over {turns} interleaved turns (least–most). {escape(RATIO_WORDS)} "
            f"{escape(FIGURE_WORDS)}")
    return (f'<div class="sv-peers"><table class="sv-serve-table sv-peers-table"><tr>{head}</tr>{rows}</table>'
            f'<p>{said}</p></div>')


def _row(r: PeerRow) -> str:
    cells = [escape(r.prompt_type), escape(RUN_NAMES.get(r.config, r.config)), r.tokens_per_s.text(2, aside=SMALL),
             r.speedup.text(2, unit="×", aside=SMALL), _median(r.decode_tokens_per_s), _median(r.ttft_s),
             _median(r.alpha)]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _median(s: Spread | None) -> str:
    return "" if s is None else f"{s.median:.2f}"


def record_command(recording: PeerRecording) -> str:
    """The command that makes the recording again, as it was made: its prompt kinds, turns and tokens."""
    types = ",".join(dict.fromkeys(r.prompt_type for r in recording.rows))
    return RECORD_COMMAND.format(types=types, turns=max(r.runs for r in recording.rows), tokens=recording.tokens)


def peer_words(recording: PeerRecording | None) -> str:
    """What the section's notice says (plain text: the notice escapes it): that the table is a recording, not this
    server, of which machine, which day and which llama.cpp, and the command that re-records it; or, where none could
    be read, that, in plain words."""
    if recording is None:
        return NONE_READ
    return (f"A recording, not this server: made {recording.recorded} on {recording.machine}; CPU flags "
            f"{recording.cpu_flags}; llama.cpp from the {recording.wheel} wheel, its CPU build {recording.cpu_build} "
            f"(a llama.cpp built for the machine's own CPU may be faster). To record it again: "
            f"{record_command(recording)}")

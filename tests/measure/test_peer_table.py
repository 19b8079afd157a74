"""measure/peer_table.py: the Costs tab's table of llama.cpp beside specviz holds the shipped recording's figures, says
what its ratio is (the turns' median of their own ratios, not the medians' ratio), escapes every text read from the
file, and its notice names the machine, the date, the wheel and its build, "not this server" and the command that
records it again."""

import dataclasses
import re
from html import escape

from specviz.measure.peer_recording import recorded_peers
from specviz.measure.peer_table import NONE_READ, RATIO_WORDS, RUN_NAMES, peer_table, peer_words, record_command

HOSTILE = '<script>alert("x")</script>'


def cells(html: str) -> list[list[str]]:
    """The table's rows, each its cells' text with the tags (the ranges' <small>) taken out."""
    return [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td>(.*?)</td>", tr)]
            for tr in re.findall(r"<tr>(.*?)</tr>", html) if "<td>" in tr]


def test_the_table_holds_the_shipped_figures():
    shipped = recorded_peers()
    rows = cells(peer_table(shipped))
    assert len(rows) == len(shipped.rows) == 10
    for r, shown in zip(shipped.rows, rows):
        assert shown[:2] == [r.prompt_type, RUN_NAMES.get(r.config, r.config)]
        assert shown[2] == f"{r.tokens_per_s.median:.2f} ({r.tokens_per_s.low:.2f}–{r.tokens_per_s.high:.2f})"
        assert shown[3] == f"{r.speedup.median:.2f}× ({r.speedup.low:.2f}–{r.speedup.high:.2f})"
        for cell, figure in zip(shown[4:], (r.decode_tokens_per_s, r.ttft_s, r.alpha)):
            assert cell == ("" if figure is None else f"{figure.median:.2f}")
    assert ["code", "llama.cpp target alone", "24.38 (21.90–24.68)", "2.03× (1.88–2.24)", "27.99", "0.29", ""] in rows
    assert ["story", "llama.cpp speculative n_max=4", "8.88 (8.70–9.09)", "0.77× (0.76–0.84)", "9.49", "0.45",
            "0.43"] in rows  # the run's report.md, as printed there


def test_the_caption_says_the_ratio_is_the_turns_median_not_the_medians_ratio():
    """On the story, llama.cpp's target alone: 22.68 ÷ 11.25 = 2.02 from the medians; the table's 2.04 is the median of
    the five turns' own ratios, so the caption must say which it is."""
    shipped = recorded_peers()
    html = peer_table(shipped)
    assert escape(RATIO_WORDS) in html and "median over the turns of each turn's own ratio" in RATIO_WORDS
    alone, llama = (next(r for r in shipped.rows if (r.prompt_type, r.config) == ("story", c))
                    for c in ("target-only", "llama.cpp target alone"))
    assert f"{llama.tokens_per_s.median / alone.tokens_per_s.median:.2f}" != f"{llama.speedup.median:.2f}"


def test_every_text_from_the_file_is_escaped():
    shipped = recorded_peers()
    hostile = dataclasses.replace(shipped, machine=HOSTILE, pair=HOSTILE, rows=(
        dataclasses.replace(shipped.rows[0], config=HOSTILE, prompt_type=HOSTILE), *shipped.rows[1:]))
    html = peer_table(hostile)
    assert "<script>" not in html and html.count(escape(HOSTILE)) == 3  # the pair, the kind and the run
    assert HOSTILE in peer_words(hostile)  # plain text: view/notices.tab_status escapes it (tests/app)


def test_the_notice_says_whose_recording_it_is_and_how_to_make_it_again():
    shipped = recorded_peers()
    said = peer_words(shipped)
    assert said.startswith("A recording, not this server: made 2026-12-06 on AMD EPYC")
    for part in (shipped.machine, shipped.cpu_flags, "xllamacpp 2026.10.11549 wheel", "its CPU build AVX2"):
        assert part in said
    assert said.endswith(record_command(shipped)) and record_command(shipped) == (
        "python -m specviz bench --peers llama.cpp --rules --types code,story --modes greedy --repeats 5 "
        "--max-new-tokens 48 --record-peers")  # the run's own command (the briefs' report), and the flag
    assert "nothing to show" in peer_words(None) and peer_words(None) == NONE_READ

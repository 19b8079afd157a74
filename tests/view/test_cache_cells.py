"""cache_cells.py: a round's two caches as cells, checked against the lengths the engine recorded."""

import copy
import re

from specviz.view import cache_cells
from specviz.engine import RunSettings
from specviz.record.trace import BONUS, REPLACEMENT


def cells(html: str, row: str) -> list[str]:
    """The class lists of one row's cells."""
    part = html.split(f'<span class="sv-cache-name">{row}</span>')[1].split("</div>")[0]
    return re.findall(r'<span class="(sv-cell[^"]*)"', part)


def test_rows_show_what_each_round_wrote_and_cropped(trace):
    for i, rnd in enumerate(trace.rounds):
        html = cache_cells.cache_rows(trace, i)
        d, t = rnd.cache.draft, rnd.cache.target
        target = cells(html, "target")
        assert sum("sv-cell-cropped" in c for c in target) == t[2] - t[3]  # struck out: what the rollback dropped
        assert f"the rollback cropped {t[2] - t[3]}" in html and f"{t[3]} kept" in html
        assert sum(f"sv-{f}" in c for c in target for f in ("accepted", "rejected", "discarded")) == rnd.k
        if rnd.k:
            assert f"The draft wrote {d[1] - d[0]} and kept {d[3]}" in html
        elif i == 0:  # round 1: the target's prefill alone
            assert d == [0, 0, 0, 0] and "The draft did not run" in html
    second = cache_cells.cache_rows(trace, 1)  # the draft's cache starts empty: its first step reads the prompt
    assert f"its first step read the prompt and round 1's token ({len(trace.prompt_token_ids) + 1} positions)" in second


def test_a_bonus_leaves_the_draft_one_behind_and_says_why(trace, tiny_pair, tokenizer):
    from specviz.engine import Engine

    target = tiny_pair[1]
    same = Engine(target, target, tokenizer, "target as draft", "target").run(  # every draft accepted
        "def fib(n):", RunSettings(k=3, temperature=0, max_new_tokens=16))
    sweep = same.rounds[1]  # round 1 drafts nothing: the first round with drafts
    assert sweep.next_kind == BONUS and "one behind" in cache_cells.cache_rows(same, 1)
    nxt = same.rounds[2]
    assert nxt.cache.draft[1] - nxt.cache.draft[0] == nxt.k + 1  # fed two tokens, then drafted the rest
    rejected = next(i for i, r in enumerate(trace.rounds) if r.next_kind == REPLACEMENT)
    assert "one behind" not in cache_cells.cache_rows(trace, rejected)


def test_a_run_from_the_templates_opening_says_what_each_pass_read(tiny_pair, tokenizer):
    """engine/opening.py: the caches start holding the chat template's opening; round 1's target and round 2's draft
    read the rest of the prompt, and the sentences' counts add up to the recorded lengths."""
    from specviz.engine import Engine
    from specviz.view.explanation import _first_round_note

    chat = copy.deepcopy(tokenizer)
    chat.chat_template = ("{{ 'You are a helpful assistant.\n' }}{% for m in messages %}{{ 'User: ' + m['content'] }}"
                          "{% endfor %}{% if add_generation_prompt %}\nAssistant:{% endif %}")
    trace = Engine(*tiny_pair, chat).run("def fib(n):", RunSettings(k=3, temperature=0, max_new_tokens=8))
    n, o = len(trace.prompt_token_ids), trace.opening
    assert o > 0 and trace.rounds[0].cache.target[:3] == [o, o, n]
    first, second = cache_cells.cache_rows(trace, 0), cache_cells.cache_rows(trace, 1)
    assert (f"The target's pass wrote {n - o} positions (the prompt's {n - o} tokens after the "
            f"template's {o}-token opening, held from the start, + 0 drafts)") in first
    assert "the draft reads the rest of the prompt in round 2" in first
    d = trace.rounds[1].cache.draft
    assert d[0] == o and (f"The draft's cache held only the chat template's opening ({o} positions, copied in "
                          f"when the run began), so its first step read the rest of the prompt and round 1's "
                          f"token ({n - o + 1} positions)") in second
    assert f"read the prompt's last {n - o} tokens (its first {o}," in _first_round_note(trace, 0)
    assert f"the prompt's {n - o} tokens after the template's opening" in _first_round_note(trace, 1)


def test_round_one_writes_the_prompt_and_long_writes_are_counted(engine):
    trace = engine.run("def fibonacci(n): return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
                       RunSettings(k=4, temperature=0, max_new_tokens=8))
    html = cache_cells.cache_rows(trace, 0)
    n = len(trace.prompt_token_ids)
    assert f"the {n}-token prompt" in html and "sv-cell-more" in html
    assert len(cells(html, "target")) <= cache_cells.WRITTEN + 2


def test_prompt_lookup_has_no_draft_row(lookup_trace):
    html = cache_cells.cache_rows(lookup_trace, 1)
    assert "sv-cache-name\">draft" not in html and "no draft cache" in html


def test_token_text_is_escaped_and_old_traces_say_not_recorded(trace, recorded):
    evil = copy.deepcopy(trace)
    evil.rounds[1].drafts[0].text = "<img src=x onerror=alert(1)>"
    html = cache_cells.cache_rows(evil, 1)
    assert "<img" not in html and "&lt;img" in html
    assert "not recorded" in cache_cells.cache_rows(recorded, 0)  # tests/fixtures: format version 1

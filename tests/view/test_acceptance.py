"""Acceptance by draft position and round sizes (record/stats.py, view/acceptance.py, the CLI's lines): the
counts add up to the summary's, the prediction is E(α, K)'s own, and the page names each formula."""

import re

from specviz.algorithm.theory import round_size_probs
from specviz.view.trace_text import acceptance_lines
from specviz.record.stats import chain_rounds, per_position, round_sizes
from specviz.view.acceptance import acceptance_html
from specviz.view.summary import summary_html


def test_the_counts_add_up_to_the_summarys(trace):
    positions, s = per_position(trace), trace.summary
    assert sum(c.tested for c in positions) == s.n_examined and sum(c.accepted for c in positions) == s.n_accepted
    assert positions[0].tested == len(chain_rounds(trace))  # every chain round tests its first draft
    assert all(c.tested >= later.tested for c, later in zip(positions, positions[1:]))  # fewer get further
    sizes = round_sizes(trace, 4)
    assert 0 < sum(sizes) <= len(chain_rounds(trace)) and len(sizes) == 5


def test_the_page_shows_both_tables_with_their_formulas(trace):
    html = acceptance_html(trace)
    assert html in summary_html(trace)
    alpha = trace.summary.acceptance_rate
    assert f"one α = {alpha:.2f}" in html and "(1 − α)·α<sup>n−1</sup>" in html
    predicted = [f"<td>{p:.3f}</td>" for p in round_size_probs(alpha, 4)]
    assert all(cell in html for cell in predicted)
    for c in per_position(trace):
        assert f"<td>{c.position}</td><td>{c.accepted} of {c.tested}</td>" in html


def test_the_cli_says_the_same(trace):
    lines = acceptance_lines(trace)
    assert lines[0].startswith("acceptance by draft position") and "round sizes" in lines[1]
    counts = re.findall(r"(\d+): (\d+)/(\d+)", lines[0])
    assert [(int(a), int(t)) for _, a, t in counts] == [(c.accepted, c.tested) for c in per_position(trace)]


def test_a_run_without_chains_shows_no_tables(trace):
    import copy

    prefill_only = copy.deepcopy(trace)
    prefill_only.rounds = prefill_only.rounds[:1]  # round 1 drafts nothing
    assert acceptance_html(prefill_only) == "" and acceptance_lines(prefill_only) == []


def test_the_runs_alpha_stands_beside_the_published_ones(trace):
    html = acceptance_html(trace)
    assert f"This run: α = {trace.summary.acceptance_rate:.2f}." in html
    assert "0.53 to 0.89" in html and "0.75 for T5-small drafting for T5-XXL" in html
    assert "does not check that the text is true" in html and "share one tokenizer" in html


def _shipped():
    from specviz.lecture.examples import EXAMPLES, load_example

    return [load_example(name) for name in EXAMPLES]


def test_the_sizes_caption_counts_the_rounds_it_shows_and_those_it_leaves_out(trace):
    """'of the 4 rounds that drafted K = 8 (rounds the run's end cut short left out)' was said where five drafted 8
    and the last was not cut short (issue 33): the caption's counts are the rounds' own, on any honest trace."""
    from specviz.record.stats import cut_short, set_k

    for t in [trace, *_shipped()]:
        html, k = acceptance_html(t), set_k(t)
        said = re.search(r"of the (\d+) rounds? that drafted K = (\d+)(?: \((\d+) more, cut short by the run's end, "
                         r"left out\))?,", html)
        drafted_k = [r for r in chain_rounds(t) if r.k == k]
        if not said:
            assert not [r for r in drafted_k if not cut_short(r)]
            continue
        shown, cut = int(said.group(1)), int(said.group(3) or 0)
        assert int(said.group(2)) == k and shown + cut == len(drafted_k)
        for r in drafted_k:  # cut short: fewer committed than verification gave, which only the run's end does
            assert cut_short(r) == (len(r.committed_ids) < r.n_accepted + 1)
            assert not cut_short(r) or r.stop
        assert f"of the {shown} round that" in html if shown == 1 else f"of the {shown} rounds that" in html


def test_one_round_is_one_round(trace):
    import copy

    from specviz.record.stats import set_k

    one = copy.deepcopy(trace)
    k = set_k(one)
    keep = next(i for i, r in enumerate(one.rounds) if r.k == k and len(r.committed_ids) == r.n_accepted + 1)
    one.rounds = one.rounds[:1] + [one.rounds[keep]]
    assert f"of the 1 round that drafted K = {k}," in acceptance_html(one)


def test_under_adaptive_k_the_tables_say_they_are_a_selection(trace):
    import copy

    adaptive = copy.deepcopy(trace)
    adaptive.settings["adaptive"] = True
    assert "a selection" not in acceptance_html(trace)
    said = acceptance_html(adaptive)
    assert "tested only in the rounds whose rule went on drafting that far" in said
    assert "these are the rounds whose rule drafted all K, a selection" in said

"""A tree round on the page (view/tree.py through the stage): the tree drawn with every node's token, p and q and
fate, the verdicts along the path, the cache sentence, the comparison with a chain by the named formula, one quiz
step whose answers run to the tree's depth, a strip that shows the path alone, and escaped token text."""

from __future__ import annotations

import copy
import re

import pytest

from specviz.engine import Engine, RunSettings
from specviz.app.inputs import settings_from
from specviz.view.stage import round_section, stage_html
from specviz.view.style import num
from specviz.algorithm.theory import expected_tokens_per_pass
from specviz.record.trace import ACCEPTED, DISCARDED, REJECTED
from specviz.record.load import load_trace

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models run on one thread


@pytest.fixture(scope="module", params=[0.0, 1.0], ids=["greedy", "sampled"])
def tree_trace(request, tiny_pair, tokenizer):
    draft, target = tiny_pair
    settings = RunSettings(drafter="tree", tree_widths=(2, 2, 1), temperature=request.param, seed=3,
                           max_new_tokens=24)
    return Engine(draft, target, tokenizer).run("def fib(n):", settings)


def section(trace, number: int) -> str:
    return round_section(trace, number, shown=True)


def test_every_node_is_drawn_with_its_fate_and_numbers(tree_trace):
    for number, rnd in enumerate(tree_trace.rounds[1:], start=2):
        html = section(tree_trace, number)
        for fate in (ACCEPTED, REJECTED, DISCARDED):
            assert html.count(f"sv-tree-node sv-tree-{fate}") == sum(d.fate == fate for d in rnd.drafts)
        assert html.count('class="sv-tree-pq"') == rnd.k and "sv-tree-root" in html
        verdicts = html.split("Verdicts along the path", 1)[1].split("</ol>", 1)[0]
        tested = sum(d.fate != DISCARDED for d in rnd.drafts)
        assert verdicts.count("<li>") == tested + 1  # each tested node, then the last token
        shape = "-".join(map(str, rnd.tree.widths))  # 2-2-1, or shallower near max_new_tokens
        assert f"tree {shape} ({rnd.k} nodes)" in html and "index-select" in html
        t, d = rnd.cache.target, rnd.cache.draft
        assert t[3] == t[0] + len(rnd.committed_ids) and d[3] <= t[3]  # the root and the committed path nodes
        assert f"(target {t[2]} → {t[3]} positions, draft {d[1]} → {d[3]})" in html


def test_the_quiz_asks_for_the_path_length_and_reveals_once(tree_trace):
    html = section(tree_trace, 3)
    assert 'data-k="3"' in html and 'data-steps="1"' in html  # answers 0..depth, one Reveal
    assert "How long a path of this 3-deep tree" in html and 'data-guess="3"' in html and 'data-guess="4"' not in html
    strip = html.split('class="sv-text"', 1)[1].split('class="sv-legend"', 1)[0]
    chips = re.findall(r'class="sv-tok sv-(\w+)', strip.split("▏", 1)[1])
    rnd = tree_trace.rounds[2]
    assert chips == [ACCEPTED] * rnd.n_accepted + [rnd.next_kind]  # the path, then the last token: no siblings


def test_the_chain_comparison_uses_the_named_formula(tree_trace):
    """E from α as printed: a student redoing it from the α on the page gets the figure beside it."""
    rnd, alpha = tree_trace.rounds[2], float(num(tree_trace.summary.acceptance_rate))
    html = section(tree_trace, 3)
    assert f"α = {num(alpha)}" in html
    assert f"{expected_tokens_per_pass(alpha, rnd.k):.2f}" in html
    assert f"{expected_tokens_per_pass(alpha, 3):.2f}" in html and f"<b>{rnd.tokens_this_pass}</b>" in html


def test_token_text_is_escaped(tree_trace):
    evil = copy.deepcopy(tree_trace)
    for r in evil.rounds[1:]:
        r.tree.root_text = "<img src=x onerror=alert(1)>"
        for d in r.drafts:
            d.text = "<script>alert(1)</script>"
    html = stage_html(evil, 2)
    assert "<img" not in html and "<script" not in html and "&lt;script&gt;" in html


def test_a_saved_tree_trace_shows_the_same(tree_trace):
    loaded = load_trace(tree_trace.to_json())
    assert stage_html(loaded, 3) == stage_html(tree_trace, 3)


def page_fields(drafter: str, tree_widths) -> dict:
    """Generate's fields as the page sends them, by name."""
    return dict(k=4, temperature=0.0, top_p=1.0, top_k=0, seed=0, max_new_tokens=16, drafter=drafter, adaptive=False,
                draft_layers=0, tree_widths=tree_widths)


def test_the_pages_fields_make_tree_settings():
    s = settings_from(**page_fields("tree", "3-2-1"))
    assert s.drafter == "tree" and s.tree_widths == (3, 2, 1)
    assert settings_from(**page_fields("model", "2-2-1-1")).tree_widths is None  # the page's default: left alone
    with pytest.raises(ValueError, match="tree_widths applies only with a tree drafter"):  # set: it would do nothing
        settings_from(**page_fields("model", "3-1"))
    assert settings_from(**page_fields("tree", " ")).widths == (2, 2, 1, 1)  # blank: the default
    for bad, message in (("5-1", "width at depth 1"), ("2-x", "whole numbers separated by '-'"),
                         ([2, 1], "tree widths must be text")):
        with pytest.raises(ValueError, match=message):
            settings_from(**page_fields("tree", bad))


def test_the_tokens_per_pass_chart_caps_a_tree_at_its_depth(tree_trace):
    from specviz.view.charts import tokens_per_pass

    figure = tokens_per_pass(tree_trace)
    names = [t.name for t in figure.data]
    assert "a draft tree: at most its depth + 1 per pass" in figure.layout.title.text
    assert not any(n.startswith("expected") for n in names)  # the chain's formula is not a tree's expectation
    assert any(n.startswith("ceiling: mean depth + 1") for n in names)


@pytest.fixture(scope="module", params=[0.0, 1.0], ids=["greedy", "sampled"])
def heads_tree_trace(request, tiny_pair, tokenizer):
    """A Medusa heads tree 2-2-1 on the tiny target, with tiny random heads (tests/helpers.tiny_heads)."""
    from tests.helpers import tiny_heads

    draft, target = tiny_pair
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    engine.use_trained(tiny_heads(target, n=3, scale=0.3))
    settings = RunSettings(drafter="heads-tree", tree_widths=(2, 2, 1), temperature=request.param, seed=3,
                           max_new_tokens=24)
    return engine.run("def fib(n):", settings)


HEAD_SAID = re.compile(r"Proposed by head (\d), from the target&#x27;s own last hidden state")


def test_each_node_of_a_heads_tree_names_the_head_of_its_depth(heads_tree_trace):
    import html as html_module

    trees = [(n, r) for n, r in enumerate(heads_tree_trace.rounds, start=1) if r.tree]
    assert len(trees) > 3
    for number, rnd in trees:
        html = section(heads_tree_trace, number)
        nodes = re.findall(r'<span class="sv-tree-node sv-tree-\w+" data-step="\d+" title="([^"]*)"', html)
        assert len(nodes) == rnd.k  # the root's span has no data-step
        for title in nodes:  # drawn depth-first; each title names its node
            i = int(re.match(r"node (\d+):", title).group(1))
            assert [int(h) for h in HEAD_SAID.findall(title)] == [rnd.tree.depth[i]], title
        key = html.split('sv-tree-key">', 1)[1].split("</div>", 1)[0]
        depths = len(rnd.tree.widths)
        assert [int(h) for h in HEAD_SAID.findall(key)] == list(range(1, depths + 1))
        assert all(f"Depth {d}: Proposed by head {d}," in key for d in range(1, depths + 1))
        verdicts = html.split("Verdicts along the path", 1)[1].split("</ol>", 1)[0]
        tested = re.findall(r"<li>(.*?)</li>", verdicts)[:-1]  # each tested node; the last token comes from the target
        assert [len(re.findall(r"proposed by head \d, from the target", t)) for t in tested] == [1] * len(tested)
        assert "head" not in html_module.unescape(re.findall(r"<li>(.*?)</li>", verdicts)[-1])


def test_what_names_a_head_tells_no_verdict(heads_tree_trace):
    """The quiz hides every outcome until the reveal (data-step); the head's line is not one, and the node and its
    icon keep their reveal step."""
    from specviz.view.style import num, FATES

    html = section(heads_tree_trace, 2)
    key = html.split('sv-tree-key">', 1)[1].split("</div>", 1)[0]
    lines = re.findall(r'<span class="sv-tree-depth">(.*?)</span>', key)
    assert lines and not any(s.label in line or s.icon in line for line in lines for s in FATES.values())
    step = re.search(r'data-steps="(\d+)"', html).group(1)
    nodes = re.findall(r'<span class="sv-tree-node sv-tree-\w+" data-step="(\d+)"', html)
    icons = re.findall(r'<sup class="sv-icon sv-verdict" data-step="(\d+)"', html)
    assert nodes and set(nodes) == set(icons) == {step}


def test_a_draft_model_tree_names_no_head(tree_trace):
    html = section(tree_trace, 2)
    assert "Proposed by" not in html and "proposed by" not in html and "sv-tree-depth" not in html


# --- a node's q: where it was drafted, never the q′ its test used (issue 64, item 3) --------------------------------

NODE = re.compile(r'title="node (\d+):[^"]*">.*?<small class="sv-tree-pq">p [^ ]+ · q ([^<]+)</small>', re.S)


def test_drawn_q_undoes_what_each_sibling_was_tested_against():
    """Against the algorithm's own rule: siblings drawn without replacement are tested one after another against q
    with the earlier ones taken out (algorithm/tree.py's `without`); drawn_q gives back each one's q."""
    import torch

    from specviz.algorithm.tree import without
    from specviz.view.tree import drawn_q

    q = torch.softmax(torch.randn(50, generator=torch.Generator().manual_seed(4), dtype=torch.float64), 0)
    siblings, proposal, tested = [7, 3, 21, 0], q, []
    for x in siblings:
        tested.append(float(proposal[x]))
        proposal = without(proposal, x)
    assert drawn_q(tested) == pytest.approx([float(q[x]) for x in siblings], rel=1e-12)
    assert tested[1] > q[3]  # the negative control: what the test used is not the sibling's q


def test_a_distinct_trees_nodes_print_their_own_q():
    """Story-tree's round 2 printed its root's two children's q as 0.76 and 0.45, adding to 1.21: the second one's
    was q′, what its test compared with after its sibling was rejected. Every node of every round prints its q where
    it was drafted: the children of a node add to at most 1, and a node tested after a rejected sibling prints
    q′ · (1 − q′ of that sibling) on its node and in its tooltip on the strip, while its verdict keeps q′, named."""
    from specviz.lecture.examples import load_example

    trace = load_example("story-tree")
    assert trace.drafter_spec.distinct and not trace.greedy
    later = tipped = 0
    for number, rnd in enumerate(trace.rounds, start=1):
        if rnd.tree is None:
            continue
        html = section(trace, number)
        said = {int(i): q for i, q in NODE.findall(html)}
        tips = re.findall(r'class="sv-tok sv-accepted"[^>]* title="draft (\d+):([^"]*)"', html)  # the path's chips
        printed = {i: float(q) for i, q in said.items()}
        assert sorted(printed) == list(range(1, rnd.k + 1))
        for u in range(len(rnd.tree.parents)):
            kids = [c for c in range(1, len(rnd.tree.parents)) if rnd.tree.parents[c] == u]
            assert sum(printed[c] for c in kids) <= 1.01, (number, u, {c: printed[c] for c in kids})
            first, second = (kids + [None, None])[:2]
            if second and rnd.drafts[second - 1].fate != DISCARDED:  # tested after its rejected elder sibling
                own = rnd.drafts[second - 1].q * (1 - rnd.drafts[first - 1].q)
                assert said[second] == num(own), (number, second)
                for i, tip in tips:  # on the path: its tooltip too, and its verdict names q′
                    if int(i) == second:
                        assert f"q (draft) = {num(own)}" in tip and "q′: q without it, renormalised" in tip, tip
                        tipped += 1
                later += 1
    assert later and tipped, "no node was tested (and accepted) after a rejected sibling: nothing was checked"

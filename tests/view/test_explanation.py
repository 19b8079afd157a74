"""explanation.py's sentences, which a student can take literally (issue 22): a round that drafted nothing has no
bonus, counts read in words that agree with their number ("the one draft", never "all 1 drafts"), adaptive K's
product and a sampled tree's repeated nodes said, "exactly" claimed only for exact arithmetic. With them the same
rules where other sentences state them: the stage's round (stage.py), the baseline report and summary
(summary.py), a quoted token (token_text.py), the strip's line breaks (strip.py), a tree against a chain (tree.py)."""

import re

import pytest

from specviz.engine import Engine, RunSettings
from specviz.lecture.examples import EXAMPLES, load_example
from specviz.record.trace import BONUS, PLAIN, REPLACEMENT
from specviz.view import strip
from specviz.view import token_text
from specviz.view.explanation import explanation
from specviz.view.stage import round_section


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_a_round_that_drafted_nothing_has_no_bonus(name):
    trace = load_example(name)
    first = trace.rounds[0]
    assert first.k == 0 and first.next_kind == BONUS and first.last_kind == PLAIN
    section = round_section(trace, 1, shown=True)
    legend = re.search(r'<div class="sv-legend">.*?</div>', section).group(0)  # the legend names every fate
    assert "bonus" not in section.replace(legend, "").lower()
    assert "nothing drafted + the target's token = 1 token for 1 target pass" in section


def runs(tiny_pair, tokenizer, k: int, seeds=range(40)):
    engine = Engine(*tiny_pair, tokenizer)
    for seed in seeds:
        yield engine.run("def fib(n):", RunSettings(k=k, temperature=1.0, seed=seed, max_new_tokens=16))


def test_one_draft_is_never_all_1(tiny_pair, tokenizer):
    trace = next(t for t in runs(tiny_pair, tokenizer, k=1) if any(r.k == 1 and r.n_accepted == 1
                                                                     for r in t.rounds))
    i = next(i for i, r in enumerate(trace.rounds) if r.k == 1 and r.n_accepted == 1 and r.next_kept)
    text = explanation(trace, i) + round_section(trace, i + 1, shown=True)
    assert "so it was accepted" in text and "the one draft accepted" in text
    assert not re.search(r"\b[Aa]ll 1\b|\b1 drafts\b|first 1\b", text)


def test_one_accepted_and_one_discarded_read_in_the_singular(tiny_pair, tokenizer):
    found = ((t, i) for t in runs(tiny_pair, tokenizer, k=3) for i, r in enumerate(t.rounds)
             if r.k == 3 and r.n_accepted == 1 and r.next_kind == REPLACEMENT)
    trace, i = next(found)
    text = explanation(trace, i)
    assert "The first passed the test (r below min(1, p/q)) and was accepted." in text
    assert "and the one token after it was discarded unseen." in text
    assert not re.search(r"first 1\b|the 1 token", text)


def test_adaptive_k_shows_the_product_its_stop_rule_read(tiny_pair, tokenizer):
    # the rule multiplies the draft's temperature-1 probabilities, not the warped q on the cards: the page says so
    # and prints the factors, whose printed product falls below the threshold as the run's did
    engine = Engine(*tiny_pair, tokenizer)
    trace = engine.run("def fib(n):", RunSettings(k=8, temperature=0.7, seed=1, max_new_tokens=40, adaptive=True,
                                                  confidence=0.5, stop_rule="threshold"))
    stopped = [i for i in range(len(trace.rounds)) if "With adaptive K it stopped" in explanation(trace, i)]
    assert len(stopped) >= 2
    for i in stopped:
        rnd, text = trace.rounds[i], explanation(trace, i)
        assert all(d.confidence is not None and 0 < d.confidence <= 1 for d in rnd.drafts)
        m = re.search(r"at temperature 1 \(not the warped q on the cards\), ([\d.e× …-]+) = ([\d.e-]+), below 0.5",
                      text)
        assert m, text
        factors = [float(f) for f in m.group(1).split(" × ") if f != "…"]
        assert float(m.group(2)) < 0.5 and (len(rnd.drafts) > 6 or eval("*".join(map(str, factors))) < 0.5)


def test_a_sampled_tree_says_why_a_node_repeats(tiny_pair, tokenizer):
    engine = Engine(*tiny_pair, tokenizer)
    trace = engine.run("def fib(n):", RunSettings(temperature=0.7, seed=3, max_new_tokens=24, drafter="tree"))
    notes = [explanation(trace, i) for i in range(len(trace.rounds))]
    with_twins = [n for n in notes if "Some nodes repeat" in n]
    assert with_twins and all("independent draw from q" in n and "fails for certain" in n for n in with_twins)


def test_a_sampled_runs_baseline_says_two_samples_not_a_coincidence(trace):
    import copy

    from specviz.view.summary import baseline_report

    report = baseline_report(trace)
    assert "two samples of the target's distribution" in report and "happen to match" not in report
    same = copy.deepcopy(trace)
    same.baseline.output_token_ids = list(same.output_token_ids)
    assert "that is chance, not the method" in baseline_report(same)


def test_time_to_first_token_is_not_shown_as_a_speedup(trace):
    from specviz.view.summary import summary_html

    html = summary_html(trace)  # round 1 is the target's own prefill: the same pass as the baseline's first step
    assert "the same pass: the gap is noise" in html and not re.search(r"ms \(\d\.\d\d×\)", html)


def test_a_comma_token_reads_as_a_token_in_a_sentence():
    assert token_text.quoted(",") == '<code class="sv-q-tok">“,”</code>'
    assert ",, " not in ", ".join([token_text.quoted(","), token_text.quoted(" I")])


def test_the_strip_wraps_between_words_never_inside_one(trace):
    # a break opportunity before each token that starts a word; none inside "two" made of "t" and "wo"
    html = strip.token_strip(trace, len(trace.rounds) - 1)
    starts = sum(t[:1].isspace() for r in trace.rounds[:-1] for t in strip.committed_texts(r))
    assert html.count("<wbr>") >= starts and "<wbr>" not in token_text.token_html(" two")


def test_a_trees_chain_comparison_names_what_the_chain_pays(tiny_pair, tokenizer):
    from specviz.view.tree import tree_against_chain

    engine = Engine(*tiny_pair, tokenizer)
    trace = engine.run("def fib(n):", RunSettings(temperature=0.7, seed=3, max_new_tokens=16, drafter="tree"))
    said = tree_against_chain(trace, 2)
    assert "but that chain pays" in said and "tokens per pass alone do not say which is faster" in said
    assert "would expect" not in said


def test_exactness_is_claimed_only_for_exact_arithmetic(trace, tiny_pair, tokenizer):
    # bfloat16 numerics do not promise the target's distribution exactly (the greedy check can differ): every
    # "exactly" about the output's distribution says "in exact arithmetic"
    engine = Engine(*tiny_pair, tokenizer)
    tree = engine.run("def fib(n):", RunSettings(temperature=0.7, seed=3, max_new_tokens=16, drafter="tree"))
    for t in (trace, tree):
        for i in range(len(t.rounds)):
            text = explanation(t, i)
            for m in re.finditer(r"exactly", text):
                around = text[max(0, m.start() - 120):m.end() + 60]
                allowed = ("exact arithmetic", "accepted exactly when", "exactly as the target alone")
                assert any(phrase in around for phrase in allowed), around

"""Drafters compared, on the tiny random models: which runs are made, what each row says, and the chart."""

import random
from dataclasses import replace

import pytest

from specviz.lab import compare
from specviz.lab import charts as lab_charts
from specviz.engine import RunSettings

from harness.tiny_models import CHARS

GREEDY = RunSettings(temperature=0.0, max_new_tokens=12, chat=False)


class Counted:
    """Wraps an engine's baseline and counts forward passes of both models."""

    def __init__(self, engine, monkeypatch):
        self.baselines, self.passes = [], 0
        original = engine.baseline

        def baseline(prompt, settings):
            self.baselines.append(original(prompt, settings))
            return self.baselines[-1]

        monkeypatch.setattr(engine, "baseline", baseline)
        self.hooks = [m.register_forward_hook(self._count) for m in (engine.draft, engine.target)]

    def _count(self, *_):
        self.passes += 1

    def remove(self):
        for h in self.hooks:
            h.remove()


@pytest.fixture
def counted(engine, monkeypatch):
    c = Counted(engine, monkeypatch)
    yield c
    c.remove()


def test_a_row_per_drafter_and_k_against_one_baseline_from_the_same_call(engine, counted):
    rows = list(compare.compare_drafters(engine, "def fib(n):", GREEDY, ks=[4, 1, 2]))
    assert [(r.drafter, r.k) for r in rows] == [("target", None), ("model", 1), ("lookup", 1), ("layers", 1),
                                                 ("model", 2), ("lookup", 2), ("layers", 2), ("model", 4),
                                                 ("lookup", 4), ("layers", 4)]
    assert [r.draft_layers for r in rows if r.drafter == "layers"] == [1, 1, 1]  # half of the tiny target's 2
    assert rows[3].label == "the target's first 1 layer"
    assert len(counted.baselines) == 1  # one target-only run, measured in this call
    base = rows[0]
    assert base.tokens_per_s == counted.baselines[0].tokens_per_s
    assert (base.speedup, base.tokens_per_pass, base.acceptance_rate) == (1.0, 1.0, None)
    for r in rows[1:]:
        assert r.speedup == pytest.approx(r.tokens_per_s / base.tokens_per_s)
        assert 0 <= r.acceptance_rate <= 1 and 1 <= r.tokens_per_pass <= r.k + 1
        assert r.n_new_tokens == base.n_new_tokens == 12  # greedy in float32: the same text, only faster or not
        assert r.seconds > 0 and r.tokens_per_s == pytest.approx(r.n_new_tokens / r.seconds)


def test_each_row_is_its_runs_summary(engine):
    rows = list(compare.compare_drafters(engine, "def fib(n):", GREEDY, ks=[2], drafters=["lookup"]))
    assert [(r.drafter, r.k) for r in rows] == [("target", None), ("lookup", 2)]
    again = engine.run("def fib(n):", replace(GREEDY, k=2, drafter="lookup"), details=False).summary
    row = rows[1]  # a seeded greedy run repeats itself exactly, but for its timing
    assert (row.acceptance_rate, row.tokens_per_pass) == (again.acceptance_rate, again.tokens_per_pass)


@pytest.mark.parametrize("prompt, ks, drafters, message", [
    ("   ", [1], compare.CHAINS, "prompt is empty"),
    ("def f():", [], compare.CHAINS, "at least one K"),
    ("def f():", None, compare.CHAINS, "at least one K"),
    ("def f():", [1.5], compare.CHAINS, "whole numbers"),
    ("def f():", [0, 2], compare.CHAINS, "from 1 to 16"),
    ("def f():", [2], ["oracle"], "drafters must be"),
    ("x" * 240, [8], compare.CHAINS, "context"),  # fits at K = 1, not at the largest K asked for
])
def test_bad_input_fails_before_any_model_runs(engine, counted, prompt, ks, drafters, message):
    with pytest.raises(ValueError, match=message):
        next(compare.compare_drafters(engine, prompt, replace(GREEDY, max_new_tokens=8), ks, drafters))
    assert counted.passes == 0 and counted.baselines == []


def test_lookup_accepts_more_where_the_answer_copies_the_prompt(engine):
    """Prompt lookup wins only where the answer repeats text already there. A prompt holding the target's own
    greedy text (random models fall into a loop, so their answer goes on copying it) against prompts of random
    characters of the same length: the same K, tokens and seed; only the prompt differs."""
    start = "def f(x):"
    copied = start + engine.run(start, replace(GREEDY, max_new_tokens=32), details=False).output_text

    def lookup_alpha(prompt):
        rows = compare.compare_drafters(engine, prompt, replace(GREEDY, max_new_tokens=16), [4], ["lookup"])
        return list(rows)[1].acceptance_rate

    randoms = [lookup_alpha("".join(random.Random(s).choices(CHARS, k=len(copied)))) for s in range(5)]
    assert lookup_alpha(copied) > max(0.9, sum(randoms) / len(randoms) + 0.3)


def test_untrained_heads_are_left_out_with_a_sentence_and_compared_once_trained(tiny_pair, tokenizer, tmp_path,
                                                                                 monkeypatch):
    from specviz.engine import Engine
    from specviz.lab.readouts import comparison_status
    from tests.helpers import tiny_eagle, tiny_heads

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))  # no heads trained here
    engine = Engine(*tiny_pair, tokenizer, target_name="tiny-target")
    drafters, notes = compare.runnable(engine)
    assert drafters == ("model", "lookup", "layers") and len(notes) == 2
    assert "train them once with `python -m specviz train-drafters`" in notes[0]
    assert "train it once with `python -m specviz train-drafters --kind eagle`" in notes[1]
    rows = list(compare.compare_drafters(engine, "def f():", replace(GREEDY, max_new_tokens=6), [2]))
    assert [r.drafter for r in rows] == ["target", "model", "lookup", "layers"]
    status = comparison_status(rows, (2,), 1.0, (0,), drafters, tuple(notes))
    assert "4 runs" in status and "Not compared: No Medusa heads are trained for tiny-target" in status
    engine.use_trained(tiny_heads(engine.target))
    engine.use_trained(tiny_eagle(engine.target))
    rows = list(compare.compare_drafters(engine, "def f():", replace(GREEDY, max_new_tokens=6), [2]))
    assert [r.drafter for r in rows][-2:] == ["heads", "eagle"] and compare.runnable(engine) == (tuple(compare.CHAINS),
                                                                                                   [])


def test_check_ks_plan_and_table():
    assert compare.check_ks([8, 1, 4.0, 1]) == (1, 4, 8)
    assert compare.plan((1, 2), ("model", "lookup")) == [("target", None, 0), ("model", 1, 0), ("lookup", 1, 0),
                                                          ("model", 2, 0), ("lookup", 2, 0)]
    assert len(compare.plan(compare.ALL_KS)) == 41  # the baseline + 5 drafters × 8 K values (issue 35: heads, EAGLE)
    assert compare.plan((4,), layers=(7, 14)) == [("target", None, 0), ("model", 4, 0), ("lookup", 4, 0),
                                                  ("layers", 4, 7), ("layers", 4, 14), ("heads", 4, 0),
                                                  ("eagle", 4, 0)]  # a run per N
    rows = [compare.CompareRow("target", None, None, 1.0, 2.5, 1.0, 32, 12.8),
            compare.CompareRow("lookup", 4, 0.834, 2.0, 3.75, 1.5, 32, 8.53)]
    assert compare.cells(rows[1]) == ["prompt lookup", "4", "0.83", "2.00", "3.75", "1.50×"]
    assert compare.markdown_table(rows).splitlines() == [
        "| drafter | K | acceptance α | tokens / target pass | tokens/s | speedup |",
        "|---|---|---|---|---|---|",
        "| target only | – | – | 1.00 | 2.50 | 1.00× |",
        "| prompt lookup | 4 | 0.83 | 2.00 | 3.75 | 1.50× |"]


def row(drafter, k, speedup, per_pass=2.0):
    return compare.CompareRow(drafter, k, 0.5, per_pass, 3.0 * speedup, speedup, 16, 1.0)


def test_chart_a_line_per_drafter_over_the_chosen_ks_with_the_baseline_at_one():
    rows = [compare.CompareRow("target", None, None, 1.0, 3.0, 1.0, 16, 5.3),
            row("model", 1, 1.2, 1.8), row("lookup", 1, 0.9, 1.1), row("model", 4, 1.5, 3.1), row("lookup", 4, 1.1, 1.4)]
    fig = lab_charts.compare_figure(rows)
    lines = {(t.name, t.yaxis): (list(t.customdata), list(t.y)) for t in fig.data}  # customdata: each point's K
    assert lines[("draft model", "y")] == ([1, 4], [1.2, 1.5])  # speedup, left
    assert lines[("prompt lookup", "y")] == ([1, 4], [0.9, 1.1])
    assert lines[("draft model", "y2")] == ([1, 4], [1.8, 3.1])  # tokens per target pass, right
    assert lines[("prompt lookup", "y2")] == ([1, 4], [1.1, 1.4])
    assert [t.showlegend for t in fig.data] == [True, True, False, False]  # one legend entry per drafter
    assert list(fig.layout.xaxis.tickvals) == [1, 4]  # only the K values that ran
    assert [(s.y0, s.y1, s.yref) for s in fig.layout.shapes] == [(1, 1, "y"), (1, 1, "y2")]  # the target alone
    assert "3.00 tokens/s" in fig.layout.title.text
    assert fig.data[0].line.dash != fig.data[1].line.dash  # a cue besides colour
    assert fig.data[0].marker.symbol != fig.data[1].marker.symbol


def test_drafters_at_the_same_k_sit_side_by_side_and_one_k_alone_is_centred():
    rows = [row("model", 4, 1.5), row("lookup", 4, 1.1)]
    fig = lab_charts.compare_figure(rows)
    left = [t for t in fig.data if t.yaxis == "y"]
    xs = [t.x[0] for t in left]
    assert xs[0] < 4 < xs[1] and abs((xs[0] + xs[1]) / 2 - 4) < 1e-9  # apart, around K
    assert [t.customdata[0] for t in left] == [4, 4] and "customdata" in left[0].hovertemplate  # the hover says K
    low, high = fig.layout.xaxis.range
    assert abs((low + high) / 2 - 4) < 1e-9  # one K in the middle, not at the right edge


def test_chart_of_partial_rows():
    assert lab_charts.compare_figure([]).data == ()
    only_baseline = lab_charts.compare_figure([compare.CompareRow("target", None, None, 1.0, 3.0, 1.0, 16, 5.3)])
    assert only_baseline.data == () and "3.00 tokens/s" in only_baseline.layout.title.text
    one_run = lab_charts.compare_figure([row("model", 2, 1.3)])
    assert [t.name for t in one_run.data] == ["draft model", "draft model"]

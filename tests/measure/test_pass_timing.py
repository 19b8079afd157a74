"""pass_timing.py: pass times measured on tiny models, and the batch prediction worked by hand on a made-up profile."""

import dataclasses

import pytest

from specviz.measure import cost_charts, pass_timing
from specviz.record.cost_profile import _interpolate
from specviz.algorithm.theory import expected_tokens_per_pass, speedup


def profile(target_batch, draft_batch, per_token=0.0):
    """A made-up profile: the target's pass costs 1 + per_token·(n − 1) one-token steps over n tokens."""
    tokens = list(range(1, 18)) + list(pass_timing.WIDE)
    return pass_timing.CostProfile("cpu", "float32", "d", "t", 16, tokens, [1 + per_token * (n - 1) for n in tokens],
                             list(pass_timing.BATCHES), target_batch, draft_batch)


def test_at_batch_one_the_prediction_is_the_explorers_formula():
    p = profile([1, 1.1, 1.3, 2, 3.5], [0.2, 0.21, 0.25, 0.3, 0.5], per_token=0.05)
    for k in (1, 4, 8):
        assert p.v(k) == pytest.approx(1 + 0.05 * k)
        assert pass_timing.speedup_at_batch(p, 0.8, k, 1) == pytest.approx(speedup(0.8, k, p.c, p.v(k)))
    assert p.c == pytest.approx(0.2)


def test_memory_bound_passes_make_speculation_pay_at_every_batch():
    free = profile([1] * 5, [0.1] * 5)  # every pass costs one step, however many tokens or sequences
    assert pass_timing.crossover_batch(free, 0.8, 4) is None
    assert pass_timing.speedup_at_batch(free, 0.8, 4, 16) == pytest.approx(expected_tokens_per_pass(0.8, 4) / 1.4)


def test_compute_bound_passes_find_the_crossover():
    # each extra token costs 20 % of a step: verifying 4 drafts for 16 sequences (80 tokens) costs 16.8 steps
    busy = profile([1, 1.2, 1.6, 2.4, 4.0], [0.1, 0.12, 0.16, 0.24, 0.4], per_token=0.2)
    b = pass_timing.crossover_batch(busy, 0.8, 4)
    assert b is not None and 1 < b <= 16
    assert pass_timing.speedup_at_batch(busy, 0.8, 4, b) < 1 <= pass_timing.speedup_at_batch(busy, 0.8, 4, b - 1)


def test_interpolation_is_exact_at_the_points_and_linear_between():
    assert _interpolate([1, 2, 4], [1.0, 2.0, 3.0], 2) == 2.0
    assert _interpolate([1, 2, 4], [1.0, 2.0, 3.0], 3) == 2.5
    assert _interpolate([1, 2, 4], [1.0, 2.0, 3.0], 6) == 4.0  # extended past the last point
    assert _interpolate([1, 2, 4], [1.0, 2.0, 3.0], 0) == 1.0


def test_measuring_tiny_models_times_every_point_and_leaves_caches_as_found(engine):
    seen = []
    p = pass_timing.measure_costs(engine, context=16, tokens=(1, 2, 3, 5, 8), batches=(1, 2, 4), repeats=1,
                            progress=lambda fraction, message: seen.append((fraction, message)))
    assert p.tokens == [1, 2, 3, 5, 8] and len(p.target_s) == 5 and len(p.target_batch_s) == len(p.draft_batch_s) == 3
    assert all(t > 0 for t in p.target_s + p.target_batch_s + p.draft_batch_s)
    assert p.target_batch_s[0] == p.target_s[0] and p.seconds > 0
    assert [f for f, _ in seen] == sorted(f for f, _ in seen) and seen[-1][0] == 1.0
    cache = pass_timing.prefill(engine.target, 16, batch=2)
    pass_timing.pass_time(engine.target, cache, 5, repeats=2)
    assert cache.get_seq_length() == 16 and cache.layers[0].keys.shape[0] == 2


def test_the_batch_one_draft_step_is_timed_with_the_runs_own_draft_pass(engine, monkeypatch):
    """The Costs tab's c and the price the load's short measurement gives the cost-aware rule come from one timer
    (issue 55, item 4): its draft step at batch 1 runs the run's own draft pass (lean.py's, for these Qwen2 models),
    as engine/pass_costs.py's does; a larger batch runs transformers' forward, as a batched run drafts. Before, the tab
    timed transformers' forward at every batch (c = 0.45 beside a price of 0.287 for the same pair)."""
    from specviz.engine import pass_costs
    from specviz.engine.lean import LeanDecoder

    fed, timed, real, timer = [], [], LeanDecoder.__call__, pass_costs.draft_step_times

    def spy(self, tokens, cache, keep):
        fed.append(len(tokens))
        return real(self, tokens, cache, keep)

    def draft_step_times(*args, **kwargs):
        timed.append(args[1])
        return timer(*args, **kwargs)

    monkeypatch.setattr(LeanDecoder, "__call__", spy)
    monkeypatch.setattr(pass_timing, "draft_step_times", draft_step_times)
    p = pass_timing.measure_costs(engine, context=16, tokens=(1, 2), batches=(1, 2), repeats=3)
    assert timed == [engine.draft]  # the load's timer, once: at batch 1
    assert fed == [16, 1, 1, 1, 1]  # the lean pass: the 16-token context, a warm-up step, 3 timed steps; no more
    assert len(p.draft_batch_s) == 2 and all(t > 0 for t in p.draft_batch_s)


def test_the_figures_and_readout_quote_the_profile():
    from specviz.measure import cost_charts

    busy = profile([1, 1.2, 1.6, 2.4, 4.0], [0.1, 0.12, 0.16, 0.24, 0.4], per_token=0.2)
    ratio = cost_charts.ratio_figure(busy)
    assert list(ratio.data[0].y) == pytest.approx([1 + 0.2 * (n - 1) for n in busy.tokens])
    assert list(ratio.data[1].y) == pytest.approx([1, 1.2, 1.6, 2.4, 4.0])
    cross = pass_timing.crossover_batch(busy, 0.8, 4)
    fig = cost_charts.batch_figure(busy, 0.8, 4)
    assert fig.data[1].x[0] == cross and f"stops paying at batch {cross}" in fig.data[1].text[0]
    said = cost_charts.readout(busy, 0.8, 4)
    assert f"v = t(5) / t(1) = <b>{busy.v(4):.2f}</b>" in said and f"batch <b>{cross}</b>" in said
    assert "cpu" in said
    # where each figure of c comes from, said once (issue 55, item 4): this tab's, the rule's price, a run's own
    assert said.count("Three figures of c, each from its own source: this tab's, above (the draft's step at batch 1 "
                      "timed as a run drafts it, on a 16-token cache); the cost-aware rule's price (the short "
                      "measurement taken when the pair loaded: the same timer on a 64-token cache") == 1
    assert "what a run paid (its own timings, beside its price in the summary" in said
    free = profile([1] * 5, [0.1] * 5)
    assert "still pays at batch 16" in cost_charts.readout(free, 0.8, 4)
    assert len(cost_charts.batch_figure(free, 0.8, 4).data) == 1  # no crossover to mark


def test_the_costs_tab_measures_once_per_pair_and_answers_bad_input(engine, monkeypatch):
    pytest.importorskip("gradio")
    from specviz.app import costs_tab as costs_ui
    from specviz.app import serving

    calls, quiet = [], (lambda *args, **kwargs: None)  # calls: the pair each measurement measured

    def get_engine(preset, progress):
        return engine

    real_measure = pass_timing.measure_costs

    def measure_costs(e, progress=None):
        calls.append(e.target_name.removesuffix("-target"))
        return real_measure(e, context=16, tokens=(1, 2, 3, 5, 8), batches=(1, 2), repeats=1, progress=progress)

    monkeypatch.setattr(pass_timing, "measure_costs", measure_costs)
    measure = costs_ui.measure_handler(get_engine, serving.CostCache())
    first, _ = measure("tiny", False, progress=quiet)
    again, said_again = measure("tiny", False, progress=quiet)
    assert isinstance(first, pass_timing.CostProfile) and again is first and calls == ["tiny"]
    assert "Measured earlier" in said_again
    fresh, _ = measure("tiny", True, progress=quiet)
    assert fresh is not first and calls == ["tiny", "tiny"]
    readout, ratio, batch = costs_ui.show_costs(first, 0.8, 4)
    assert "v = t(5) / t(1)" in readout and ratio.data and batch.data
    for alpha, k, said in (("abc", 4, "α must be a number from 0 to 1"), (1.5, 4, "α must be"),
                           (0.8, 0, "K must be a whole number from 1 to 16"), (0.8, None, "K must be")):
        assert said in costs_ui.show_costs(first, alpha, k)[0]
    _, message = costs_ui.measure_handler(None, serving.CostCache())("tiny", False, progress=quiet)
    assert "no models" in message


def test_the_crossover_says_how_sure_it_is():
    # one timing per point made "stops paying at batch 11" read as a fact: the spread of the timings brackets it
    p = profile([1, 1.2, 1.6, 2.4, 4.0], [0.1, 0.12, 0.16, 0.24, 0.4], per_token=0.2)
    assert cost_charts.readout(p, 0.7, 4).count("timed once") == 1  # no spread measured: said so
    low, high = [0.9 * t for t in p.target_s], [1.1 * t for t in p.target_s]
    spread = {"target_s": list(zip(low, high)),
              "target_batch_s": [(0.9 * t, 1.1 * t) for t in p.target_batch_s],
              "draft_batch_s": [(0.9 * t, 1.1 * t) for t in p.draft_batch_s]}
    sure = dataclasses.replace(p, repeats=3, spread=spread)
    worse, better = pass_timing.crossover_range(sure, 0.7, 4)
    cross = pass_timing.crossover_batch(sure, 0.7, 4)
    assert worse is not None and worse <= cross and (better is None or better >= cross)
    said = cost_charts.readout(sure, 0.7, 4)
    assert "least or the most of its 3 timings" in said and f"<b>{cross} (" in said
    assert len(cost_charts.batch_figure(sure, 0.7, 4).data) == len(cost_charts.batch_figure(p, 0.7, 4).data) + 2

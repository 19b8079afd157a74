"""The lab's numbers: the worked examples exactly, the Monte Carlo against verify, and a trace's measured point."""

import random

import pytest
import torch

from specviz.lab import explorer
from specviz.measure import measured
from specviz.lab import playground as lab
from specviz.lab import charts as lab_charts
from specviz.lab import readouts as lab_render
from specviz.algorithm.sampling import residual_distribution, verify
from specviz.algorithm.theory import expected_tokens_per_pass, round_cost, round_size_probs, speedup
from specviz.record.stats import summarize
from specviz.record.trace import Trace
from specviz.record.load import load_trace
from tests.helpers import make_round, make_trace

SEED = lab.SEED_EXAMPLE  # q(" Paris") = 0.9, p(" Paris") = 0.6


def random_pair(seed: int, zeros: bool = False) -> lab.ToyPair:
    rng = random.Random(seed)
    n = rng.randint(lab.MIN_TOKENS, lab.MAX_TOKENS)
    p, q = [rng.random() for _ in range(n)], [rng.random() for _ in range(n)]
    if zeros:  # tokens one model never emits: a zero residual entry and a draft that is never proposed
        p[0], q[1] = 0.0, 0.0
    return lab.pair_from_weights([f"t{i}" for i in range(n)], p, q)


# --- the playground --------------------------------------------------------------------------------------


def test_seed_example_accepts_paris_with_two_thirds():
    pg = lab.playground(SEED)
    paris = pg.rows[0]
    assert (paris.token, paris.q, paris.p) == (" Paris", 0.9, 0.6)
    assert paris.accept_prob == pytest.approx(2 / 3) and round(paris.accept_prob, 3) == 0.667
    assert pg.alpha == pytest.approx(0.7)  # 0.6 + 0.04 + 0.03 + 0.02 + 0.01
    assert paris.from_accepted == pytest.approx(0.6) and paris.from_residual == 0  # p < q: no residual mass


def test_p_095_is_always_accepted():
    pair = lab.TOY_PAIRS["p(Paris) 0.95"]
    assert pair.p[0] == 0.95 and pair.q[0] == 0.9 and sum(pair.p) == pytest.approx(1)
    assert lab.playground(pair).rows[0].accept_prob == 1.0
    # every " Paris" draft is kept, whatever the draw r
    drafts = torch.zeros(10_000, dtype=torch.long)
    p, q = torch.tensor(pair.p), torch.tensor(pair.q)
    _, accepted = lab.first_tokens(lab.accept_table(p, q), drafts, torch.rand(10_000), drafts + 1)
    assert accepted.all()


@pytest.mark.parametrize("pair", [*lab.TOY_PAIRS.values(), *(random_pair(s) for s in range(20)),
                                  random_pair(99, zeros=True)])
def test_stacked_parts_sum_to_p(pair):
    pg = lab.playground(pair)
    for r in pg.rows:
        assert r.from_accepted + r.from_residual == pytest.approx(r.p, abs=1e-12)
        assert r.from_accepted == pytest.approx(min(r.p, r.q), abs=1e-15)
    assert sum(r.from_accepted for r in pg.rows) == pytest.approx(pg.alpha)
    assert sum(r.from_residual for r in pg.rows) == pytest.approx(1 - pg.alpha)


def test_set_probability_keeps_the_typed_value():
    assert lab.set_probability([0.6, 0.3, 0.1], 0, 0.9) == pytest.approx([0.9, 0.075, 0.025])
    assert lab.set_probability([1.0, 0.0, 0.0], 0, 0.4) == pytest.approx([0.4, 0.3, 0.3])  # shared equally
    assert lab.set_probability([0.5, 0.5], 1, 1) == [0.0, 1]
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="between 0 and 1"):
            lab.set_probability([0.5, 0.5], 0, bad)


def test_edit_pair_and_table_validation():
    renamed = lab.edit_pair(SEED, "token", 1, "<b>Lyon")
    assert renamed.tokens[1] == "<b>Lyon" and renamed.p == SEED.p
    with pytest.raises(ValueError, match="differ"):
        lab.edit_pair(SEED, "token", 1, " Paris")
    edited = lab.edit_pair(SEED, "q", 0, 0.5)
    assert edited.q[0] == 0.5 and sum(edited.q) == pytest.approx(1) and edited.p == SEED.p
    whole = lab.pair_from_weights(["a", "", "c", "d"], [3, 1, 0, 0], [1, 1, 1, 1])
    assert whole.tokens[1] == "token 2" and whole.p == (0.75, 0.25, 0, 0) and whole.q == (0.25,) * 4
    with pytest.raises(ValueError, match="4 to 8"):
        lab.pair_from_weights(["a", "b", "c"], [1, 1, 1], [1, 1, 1])
    with pytest.raises(ValueError, match="positive"):
        lab.pair_from_weights(["a", "b", "c", "d"], [0, 0, 0, 0], [1, 1, 1, 1])
    with pytest.raises(ValueError, match="negative"):
        lab.pair_from_weights(["a", "b", "c", "d"], [-1, 1, 1, 1], [1, 1, 1, 1])


# --- Monte Carlo -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pair", [SEED, lab.TOY_PAIRS["they disagree"], random_pair(5, zeros=True)])
def test_vectorised_rule_matches_verify_draw_by_draw(pair):
    """Run verify itself (K = 1) on 3000 seeded rounds, then give first_tokens verify's own draws: every accept
    decision and every token must agree, and the residual must be the row verify sampled from."""
    p, q = torch.tensor(pair.p, dtype=torch.float32), torch.tensor(pair.q, dtype=torch.float32)
    gen = torch.Generator().manual_seed(1234)
    drafts = torch.multinomial(q, 3000, replacement=True, generator=gen)
    verdicts = [verify(torch.stack([p, p]), q[None], x, gen) for x in drafts[:, None].unbind(0)]
    uniforms = torch.tensor([v.uniforms[0] for v in verdicts])
    replacements = torch.tensor([v.next_token if v.rejected else -1 for v in verdicts])
    tokens, accepted = lab.first_tokens(lab.accept_table(p, q), drafts, uniforms, replacements)

    assert accepted.tolist() == [v.n_accepted == 1 for v in verdicts]
    assert tokens.tolist() == [int(x) if v.n_accepted else v.next_token for x, v in zip(drafts, verdicts)]
    assert 0 < accepted.sum() < 3000 or pair.p == pair.q
    residual = residual_distribution(p, q)
    assert all(torch.equal(v.residual, residual) for v in verdicts if v.rejected)


def test_a_draw_equal_to_the_acceptance_is_a_rejection():
    # verify accepts iff r < min(1, p/q) (it rejects when r >= a); with p/q = 0.5 exactly, r = 0.5 rejects
    accept = lab.accept_table(torch.tensor([0.25, 0.75]), torch.tensor([0.5, 0.5]))
    assert accept.tolist() == [0.5, 1.0]
    tokens, accepted = lab.first_tokens(accept, torch.tensor([0, 0]), torch.tensor([0.5, 0.4999]),
                                        torch.tensor([1, 1]))
    assert accepted.tolist() == [False, True] and tokens.tolist() == [1, 0]


def test_correct_sampler_converges_to_p():
    mc = lab.monte_carlo(SEED, 50_000, "correct", seed=0)
    assert mc.faithful and mc.exact_tv < 1e-9
    assert sum(mc.accepted_counts) + sum(mc.replaced_counts) == 50_000
    assert mc.tv < 0.01 and mc.tv < 3 * mc.noise  # noise at N = 50 000 is about 0.003
    # the two routes converge to their exact parts: min(p, q) and (1 − α)·residual
    for r, a, b in zip(lab.playground(SEED).rows, mc.accepted_counts, mc.replaced_counts):
        assert a / mc.n == pytest.approx(r.from_accepted, abs=0.01)
        assert b / mc.n == pytest.approx(r.from_residual, abs=0.01)
    again = lab.monte_carlo(SEED, 50_000, "correct", seed=0)  # seeded: the same counts every time
    assert (again.accepted_counts, again.replaced_counts) == (mc.accepted_counts, mc.replaced_counts)


@pytest.mark.parametrize("sampler", ["resample_from_p", "always_accept", "swapped_ratio"])
def test_each_wrong_sampler_drifts_away_from_p(sampler):
    mc = lab.monte_carlo(SEED, 50_000, sampler, seed=0)
    assert not mc.faithful
    assert mc.tv > 0.15 > 20 * mc.noise  # far beyond sampling noise
    assert mc.tv == pytest.approx(mc.exact_tv, abs=0.01)  # and exactly where its own formula says
    assert mc.tv == pytest.approx(lab.total_variation(lab.output_distribution(sampler, SEED), SEED.p), abs=0.01)


def test_wrong_samplers_are_wrong_only_when_p_differs_from_q():
    same = lab.TOY_PAIRS["draft = target"]
    for sampler in set(lab.SAMPLER_LABELS) - {"typical"}:  # typical acceptance: below, wrong even then
        assert lab.total_variation(lab.output_distribution(sampler, same), same.p) < 1e-9


def test_typical_acceptance_changes_the_output_even_with_a_perfect_draft():
    """Medusa's typical acceptance (issue 35's contrast): threshold min(0.09, 0.3·e^−H(p)); on the seed pair
    (H = 1.2 nats, 0.3·e^−1.2 = 0.0905) it is 0.09, so every token but " Madrid" (0.05) is kept when drafted, and the
    output follows q there: 0.906 on " Paris" where p says 0.6. With q = p it still moves mass from " Madrid" (0.05 ->
    0.05 × 0.05 = 0.0025), since a drafted " Madrid" is never kept and a fresh draw from p rarely gives it."""
    p = torch.tensor(SEED.p)
    assert lab.typical_threshold(p) == pytest.approx(0.09) and lab.typical_accept(p).tolist() == [1, 1, 1, 1, 0]
    out = lab.output_distribution("typical", SEED)
    assert out[0] == pytest.approx(0.9 + 0.01 * 0.6) and lab.total_variation(out, SEED.p) == pytest.approx(0.306)
    mc = lab.monte_carlo(SEED, 50_000, "typical", seed=0)
    assert not mc.faithful and mc.tv == pytest.approx(mc.exact_tv, abs=0.01) and mc.tv > 20 * mc.noise
    same = lab.TOY_PAIRS["draft = target"]
    assert lab.output_distribution("typical", same)[4] == pytest.approx(0.05 * 0.05)
    assert lab.total_variation(lab.output_distribution("correct", same), same.p) < 1e-9  # the exact rule: p
    greedy = torch.tensor([1.0, 0, 0, 0, 0])  # temperature 0: only the argmax clears the threshold
    assert lab.typical_accept(greedy).tolist() == [1, 0, 0, 0, 0]


def test_verify_itself_gives_the_same_histogram():
    mc = lab.monte_carlo(SEED, 4_000, "verify", seed=3)
    assert mc.faithful and mc.tv < 0.03  # noise at N = 4 000 is about 0.01
    with pytest.raises(ValueError, match="20,000"):
        lab.monte_carlo(SEED, lab.MAX_VERIFY_SAMPLES + 1, "verify")


def test_monte_carlo_100k_is_fast_and_checks_its_input():
    mc = lab.monte_carlo(SEED, lab.MAX_SAMPLES, "correct", seed=1)
    assert mc.seconds < 2.0  # ~20-100 ms here; verify itself would take 5-8 s
    for bad in (0, lab.MAX_SAMPLES + 1, 1.5, True):
        with pytest.raises(ValueError, match="N must"):
            lab.monte_carlo(SEED, bad)
    with pytest.raises(ValueError, match="sampler"):
        lab.monte_carlo(SEED, 10, "nope")


def test_noise_level_matches_repeated_runs():
    tvs = [lab.monte_carlo(SEED, 2_000, "correct", seed=s).tv for s in range(40)]
    assert sum(tvs) / len(tvs) == pytest.approx(lab.noise_tv(SEED.p, 2_000), rel=0.25)


# --- the explorer ------------------------------------------------------------------------------------------


def test_quiz_alpha_07_k4():
    ex = explorer.explore(0.7, 4, 0.05)
    assert round(ex.expected_at_k, 2) == 2.77  # (1 − 0.7^5) / 0.3 = 2.7731
    assert ex.speedup_at_k == pytest.approx(2.7731 / 1.2, abs=1e-4) and round(ex.speedup_at_k, 1) == 2.3


def test_best_k():
    # α = 0.8, c = 0.1: E / (1 + 0.1 K) = 2.40 (K=4), 2.46 (5), 2.47 (6), 2.45 (7): best K = 6
    ex = explorer.explore(0.8, 4, 0.1)
    assert ex.best_k == 6 and ex.best_speedup == pytest.approx(3.9514 / 1.6, abs=1e-4)
    for alpha, c in [(0.5, 0.2), (0.9, 0.02), (0.3, 0.5), (0.95, 0.01)]:
        ex = explorer.explore(alpha, 1, c)
        assert ex.best_k == max(ex.ks, key=lambda k: speedup(alpha, k, c))
    assert explorer.explore(0.0, 3, 0.1).best_k == 1  # nothing is ever accepted: draft as little as possible
    assert explorer.explore(0.9, 3, 0.0).best_k == explorer.MAX_K  # free drafts: draft as much as the axis allows
    with pytest.raises(ValueError):
        explorer.explore(1.2, 4, 0.1)


@pytest.mark.parametrize("alpha,k", [(0.0, 1), (0.5, 2), (0.7, 4), (0.9, 16), (1.0, 3)])
def test_tokens_per_round_is_a_distribution_with_mean_e(alpha, k):
    probs = round_size_probs(alpha, k)
    assert len(probs) == k + 1 and sum(probs) == pytest.approx(1)
    assert sum((j + 1) * pr for j, pr in enumerate(probs)) == pytest.approx(explorer.explore(alpha, k, 0).expected_at_k)
    assert round_size_probs(0.5, 2) == [0.5, 0.25, 0.25]


# --- a trace's measured point -------------------------------------------------------------------------------


def test_measured_point_from_a_trace():
    point = measured.measured_point(make_trace())
    assert point.k == 4 and point.n_rounds == 2
    assert point.alpha == pytest.approx(5 / 6)  # 5 accepted of 6 examined drafts (the bonus never counts)
    # round 1's passes also encode the prompt, so costs come from the later round: 0.12 s over 4 drafts
    assert point.draft_s_per_token == pytest.approx(0.03)
    assert point.verify_s_per_round == pytest.approx(0.10)
    step = (1.0 - 0.05) / 6  # the baseline's steps after its first (a version-1 baseline: their mean)
    assert point.c == pytest.approx(0.03 / step) and point.v == pytest.approx(0.10 / step)
    assert point.steady.alpha == pytest.approx(1 / 2) and point.steady.k == 4  # the rounds after the first
    assert point.tokens_per_pass == pytest.approx(3.5)
    assert point.round_probs == [0, 0.5, 0, 0, 0.5]
    assert point.speedup == pytest.approx(2.0)  # 14 tokens/s against 7
    assert measured.measured_point(load_trace(make_trace().to_json())) == point  # the uploaded form measures the same


def test_measured_point_without_baseline_rounds_or_trace():
    alone = measured.measured_point(make_trace(baseline=False))
    assert alone.speedup is None and alone.v is None
    assert alone.c == pytest.approx(0.3)  # no one-token step to measure against: a draft step over a verify pass
    unsummarized = make_trace()
    unsummarized.summary = None  # the α then comes from the rounds themselves
    assert measured.measured_point(unsummarized).alpha == pytest.approx(5 / 6)
    assert measured.measured_point(None) is None
    empty = make_trace()
    empty.rounds = []
    assert measured.measured_point(empty) is None


# --- figures and handlers ------------------------------------------------------------------------------------


def test_figures_stack_to_p_and_show_the_measured_point():
    pg = lab.playground(SEED)
    fig = lab_charts.playground_figure(pg)
    accepted, residual, outline = fig.data[1], fig.data[2], fig.data[3]
    for a, r, p in zip(accepted.y, residual.y, outline.y):
        assert a + r == pytest.approx(p)
    assert list(residual.base) == list(accepted.y)  # the residual bar sits on top of the accepted one
    mc = lab.monte_carlo(SEED, 1_000, "always_accept")
    assert "✗" in lab_charts.histogram_figure(SEED, mc).layout.title.text
    ex = explorer.explore(0.7, 4, 0.05)
    names = [t.name for t in lab_charts.explorer_figure(ex, measured.measured_point(make_trace())).data]
    assert lab_charts.MEASURED_NAME in names and "best K" in names
    assert len(lab_charts.rounds_figure(ex).data[0].x) == 4  # 1..K tokens end with a replacement, K+1 is the bonus
    marked_up = lab.edit_pair(SEED, "token", 1, "<b>x")
    assert list(lab_charts.histogram_figure(marked_up, None).data[0].x)[:2] == ["·Paris", "&lt;b&gt;x"]


def test_ui_handlers_escape_keep_edits_and_report_bad_files():
    lab_ui = pytest.importorskip("specviz.app.lab_tab")
    import gradio as gr

    out = lab_ui.on_cell_edit(lab_ui._table(SEED), SEED, 1000, "correct", 0,
                              gr.EditData(None, {"index": [0, 2], "value": "0.95", "previous_value": "0.6"}))
    table, pair = out[0], out[1]
    assert pair.p[0] == 0.95 and table[0][2] == 0.95 and sum(pair.p) == pytest.approx(1)
    out = lab_ui.on_cell_edit(table, pair, 1000, "correct", 0,
                              gr.EditData(None, {"index": [1, 0], "value": "<script>", "previous_value": "x"}))
    assert "<script>" not in out[3] and "&lt;script&gt;" in out[3]
    out = lab_ui.on_cell_edit(table, pair, 1000, "correct", 0,
                              gr.EditData(None, {"index": [1, 1], "value": "abc", "previous_value": "0.04"}))
    assert out[1] == pair and "not a number" in out[2]  # the last good pair stays
    assert lab_ui.on_upload(b"{not json")[1].count("not a specviz trace") == 1
    trace, message = lab_ui.on_upload(make_trace().to_json().encode())
    assert message == "" and isinstance(trace, Trace)
    from specviz.lab.readouts import trace_html

    html = trace_html(trace, measured.measured_point(trace))
    point = measured.measured_point(trace)
    assert "&lt;i&gt;draft&lt;/i&gt;" in html and "2.00×" in html and f"c = <b>{point.c:.3f}</b>" in html
    assert f"v = <b>{point.v:.2f}</b>" in html and f"E / (K̄·c + v) = <b>{point.steady.speedup:.2f}×</b>" in html


def test_build_lab_inside_an_app_tab_takes_the_apps_trace():
    lab_ui = pytest.importorskip("specviz.app.lab_tab")
    import gradio as gr

    with gr.Blocks():
        state = gr.State(make_trace())
        with gr.Tab("Lab"):
            parts = lab_ui.build_lab(state)
    assert measured.measured_point(parts.trace.value) == measured.measured_point(state.value)
    assert (parts.alpha.value, parts.k.value, parts.c.value) == (0.7, 4, 0.05)  # the worked quiz


def test_compare_handler_streams_rows_and_says_what_went_wrong(engine, monkeypatch):
    lab_ui = pytest.importorskip("specviz.app.lab_tab")
    assert "no models" in next(lab_ui.compare_handler(None)("def f(x):", [1], 8, 0, None))[0]
    run = lab_ui.compare_handler(lambda preset, progress: engine)
    assert "prompt is empty" in next(run(" ", [1], 8, 0, "tiny"))[0]
    assert "at least one K" in next(run("def f(x):", [], 8, 0, "tiny"))[0]
    frames = list(run("def f(x):", [1], 8, 0, "tiny"))
    assert [len(table) for _, table, _ in frames] == [1, 2, 3, 4]  # the baseline, then a row per finished run
    assert "1 of 4 runs done" in frames[0][0] and "next: draft model at K = 1" in frames[0][0]
    assert "next: the target&#x27;s first 1 layer at K = 1" in frames[2][0]  # half of the tiny target's 2 layers
    assert "✓ 4 runs" in frames[-1][0] and len(frames[-1][2].data) == 6  # a line per drafter, on both charts

    def broken(*args, **kwargs):
        raise RuntimeError("<b>out of luck</b>")

    monkeypatch.setattr(engine, "run", broken)  # a model failure after the baseline: its row stays
    frames = list(run("def f(x):", [1], 8, 0, "tiny"))
    assert len(frames[0][1]) == 1
    assert "stopped after 1 run: RuntimeError: &lt;b&gt;out of luck" in frames[-1][0]


def test_the_labs_theory_is_the_benchmarks_prediction():
    """For a trace with known step times, the explorer's point and the benchmark compute one number."""
    from specviz.measure import bench

    trace = make_trace()
    trace.rounds.append(make_round(2, 4, 2, 0.08, 0.12))
    trace.output_token_ids += trace.rounds[-1].committed_ids
    trace.summary = summarize(trace.rounds, total_time_s=0.7)
    trace.baseline.step_times_s = [0.3, 0.1, 0.1, 0.12, 0.1, 0.1, 0.1]  # a one-token step: 0.1 s (median)
    point = measured.measured_point(trace)
    figures = bench.trace_figures(trace, target_step=0.1)
    assert figures["predicted"] == pytest.approx(point.steady.speedup)
    assert (figures["c"], figures["v"]) == (pytest.approx(point.c), pytest.approx(point.v))
    # worked by hand: rounds 2 and 3 accept 1 and 2 of 3 examined drafts each, draft 0.20 s over 8 drafts
    alpha, k, c, v = 3 / 5, 4, (0.12 + 0.08) / 8 / 0.1, (0.10 + 0.12) / 2 / 0.1
    assert point.steady.speedup == pytest.approx(speedup(alpha, k, c, v))


def test_the_explorer_takes_v():
    ideal, busy = explorer.explore(0.8, 4, 0.1), explorer.explore(0.8, 4, 0.1, v=1.5)
    assert ideal.speedup_at_k == pytest.approx(speedup(0.8, 4, 0.1, 1.0))
    assert busy.speedup_at_k == pytest.approx(speedup(0.8, 4, 0.1, 1.5))
    assert busy.speedup_at_k < ideal.speedup_at_k
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="v must be"):
            explorer.explore(0.8, 4, 0.1, v=bad)


# --- the "test yourself" card -------------------------------------------------------------------------------


def in_order(text: str, parts: list[str]) -> bool:
    """Whether every part occurs in text, each after the one before."""
    at = 0
    for part in parts:
        at = text.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


def card_numbers(q: explorer.Question) -> list[list[str]]:
    """What each step must show, from theory.py: P(n) for each n; E; E − 1; K·c + v; the speedup; tokens/s."""
    e, gain = expected_tokens_per_pass(q.alpha, q.k), speedup(q.alpha, q.k, q.c)
    return [[f"{pr:.3f}" for pr in round_size_probs(q.alpha, q.k)], [f"{e:.2f}"], [f"{e - 1:.2f}"],
            [f"{round_cost(q.k, q.c):.2f}"], [f"{gain:.2f}×"],
            [f"{q.target_tokens_per_s * round(gain, 2):#.3g} tokens/s"]]  # speeds to 3 figures, from the printed gain


def test_the_card_works_the_question_one_step_at_a_time():
    q = explorer.QUESTION
    assert (q.alpha, q.k, q.c, q.target_tokens_per_s) == (0.7, 4, 0.05, 30)
    # worked by hand: 0.3·0.7^j for j < 4 and 0.7^4; (1 − 0.7^5) / 0.3 = 2.7731; 1 + 4 × 0.05; 2.7731 / 1.2 = 2.3109
    assert card_numbers(q) == [["0.300", "0.210", "0.147", "0.103", "0.240"], ["2.77"], ["1.77"], ["1.20"],
                               ["2.31×"], ["69.3 tokens/s"]]
    steps = lab_render.card_steps(q)
    assert len(steps) == 6
    formulas = ["(1 − α)·α<sup>n−1</sup>", "(1 − α<sup>K+1</sup>) / (1 − α)", "E − 1", "K·c + v", "E / (K·c + v)",
                "tokens/s ×"]
    for (title, text), formula, numbers in zip(steps, formulas, card_numbers(q)):
        assert formula in text and in_order(text, numbers), (title, text)
    for shown in range(7):
        html = lab_render.card_html(q, shown)
        assert html.count('<li id="lab-card-step-') == shown
        assert in_order(html, [n for step in card_numbers(q)[:shown] for n in step])
        hidden = [n for step in card_numbers(q)[shown:] for n in step]
        assert not any(n in html for n in hidden), shown  # the steps to come stay off the card
        assert "30.0 tokens/s" in html and "assumed" in html  # the question's speed is not a measurement
    assert "Work it out first" in lab_render.card_html(q, 0) and "2 of 6 steps shown" in lab_render.card_html(q, 2)
    assert "All 6 steps shown" in lab_render.card_html(q, 6)


def test_the_card_follows_its_question():
    """Another α, K, c and speed: every number moves with it (none is fixed on the card)."""
    q = explorer.Question(alpha=0.8, k=3, c=0.1, target_tokens_per_s=20)
    # by hand: 0.2·0.8^j for j < 3 and 0.8^3; (1 − 0.8^4) / 0.2 = 2.952; 1 + 3 × 0.1; 2.952 / 1.3 = 2.2708
    assert card_numbers(q) == [["0.200", "0.160", "0.128", "0.512"], ["2.95"], ["1.95"], ["1.30"], ["2.27×"],
                               ["45.4 tokens/s"]]
    html = lab_render.card_html(q, 6)
    assert in_order(html, [n for step in card_numbers(q) for n in step])
    assert "α = 0.80" in html and "K = 3" in html and "20.0 tokens/s" in html and "for n = 1 … 4" in html
    assert not any(old in html for old in ("0.300", "2.77", "2.31×", "69.3 tokens/s"))
    for bad in (dict(alpha=1.0), dict(alpha=-0.1), dict(k=0), dict(c=-0.5), dict(target_tokens_per_s=0)):
        with pytest.raises(ValueError, match="not a question"):
            explorer.Question(**{**dict(alpha=0.7, k=4, c=0.05, target_tokens_per_s=30), **bad})


def test_a_reveal_past_the_last_step_and_start_over():
    lab_ui = pytest.importorskip("specviz.app.lab_tab")
    assert lab_ui.CARD_STEPS == len(lab_render.card_steps(explorer.QUESTION)) == 6
    shown, seen = 0, []
    for _ in range(8):  # two presses more than there are steps
        shown, html, revealed = lab_ui.on_reveal(shown)
        seen.append((shown, revealed, html.count('<li id="lab-card-step-')))
    assert seen == [(1, False, 1), (2, False, 2), (3, False, 3), (4, False, 4), (5, False, 5), (6, True, 6),
                    (7, True, 6), (7, True, 6)]
    assert "fully revealed" in html and "Start over" in html and "69.3 tokens/s" in html
    assert "fully revealed" in lab_render.card_html(explorer.QUESTION, 99)
    assert lab_render.card_html(explorer.QUESTION, -3) == lab_render.card_html(explorer.QUESTION, 0)
    shown, html, revealed = lab_ui.on_restart()
    assert (shown, revealed) == (0, False) and "<li" not in html and "Work it out first" in html
    assert lab_ui.on_reveal(None)[0] == 1  # a session without the state yet starts at the first step


def test_the_explorer_keeps_the_cards_answer_covered():
    lab_ui = pytest.importorskip("specviz.app.lab_tab")
    q = explorer.QUESTION
    readout, curves, rounds, _ = lab_ui.on_explore(q.alpha, q.k, q.c, 1.0, None, False)
    assert "covered" in readout and "2.77" not in readout and "2.31" not in readout
    for fig in (curves, rounds):  # no curve, no bar, no title with a number: only the note
        assert not fig.data and lab_ui.COVERED in fig.layout.annotations[0].text
    readout, curves, rounds, _ = lab_ui.on_explore(q.alpha, q.k, q.c, 1.0, None, True)  # the card revealed
    assert ">2.77<" in readout and ">2.31×<" in readout and rounds.data
    readout, _, _, _ = lab_ui.on_explore(0.71, q.k, q.c, 1.0, None, False)  # a slider moved
    assert ">2.83<" in readout  # (1 − 0.71^5) / 0.29 = 2.8261
    readout, _, _, _ = lab_ui.on_explore(q.alpha, q.k, q.c, 1.5, None, False)  # v moved
    assert ">1.63×<" in readout
    assert "α must be" in lab_ui.on_explore(2, q.k, q.c, 1.0, None, False)[0]  # bad input still says so


def test_round_cost():
    assert round_cost(4, 0.05) == pytest.approx(1.2) and round_cost(3, 0.1, v=1.5) == pytest.approx(1.8)
    assert speedup(0.7, 4, 0.05, 1.3) == pytest.approx(expected_tokens_per_pass(0.7, 4) / round_cost(4, 0.05, 1.3))


def test_the_noise_limit_holds_the_correct_samplers_runs():
    # the page's default N read "TV 0.0098, noise 0.0066" for the correct sampler: an expectation, which half of
    # exact runs exceed; the limit is what 99 of 100 stay below, and a correct sampler's runs do
    pair, n = lab.SEED_EXAMPLE, 10_000
    runs = [lab.monte_carlo(pair, n, "correct", seed) for seed in range(60)]
    limit = runs[0].noise_99
    assert runs[0].noise < limit < 3 * runs[0].noise
    assert sum(mc.tv > runs[0].noise for mc in runs) >= 10  # the expectation alone would call these failures
    assert sum(mc.tv > limit for mc in runs) <= 3  # about 1 in 100 expected
    wrong = lab.monte_carlo(pair, n, "resample_from_p", 0)
    assert wrong.tv > 5 * wrong.noise_99


def test_the_explorer_at_alpha_one_gives_the_limit_not_zero_over_zero():
    from specviz.lab.readouts import explorer_html

    said = explorer.explore(1.0, 4, 0.1, 1.0)
    html = explorer_html(said)
    assert "(1 − 1.00" not in html and "its limit is E = K + 1 = 4 + 1" in html and ">5.00<" in html


def test_the_identity_lines_name_two_different_tokens():
    from specviz.lab.readouts import exactness_html

    html = exactness_html(lab.playground(lab.TOY_PAIRS["p(Paris) 0.95"]))
    lines = html.split("token by token: ")[1]
    first, second = lines.split("; ")
    assert first.split(":")[0] != second.split(":")[0]  # not "·Paris" twice

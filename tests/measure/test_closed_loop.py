"""measure/closed_loop.py and `python -m specviz serve-bench` on the tiny pair: closed-loop users served by one batch,
the figures a serving benchmark reports, every rule's greedy tokens the target alone's, the cost-aware rule's choice
in numbers, and a plan out of bounds refused before anything loads."""

import json

import pytest

from specviz.engine import Engine
from specviz.engine.batched import Batch, Request
from specviz.algorithm.sampling import SamplingSettings
from specviz.measure import pass_timing, closed_loop
from specviz.measure.closed_loop import Plan, serve_users

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def engine(tiny_pair, tokenizer):
    engine = Engine(*tiny_pair, tokenizer, "tiny-draft", "tiny-target")
    engine.eos_ids = set()
    return engine


@pytest.fixture(scope="module")
def profile(engine):
    return pass_timing.measure_costs(engine, context=16, tokens=(1, 2, 5, 9, 17, 32), batches=(1, 2, 4), repeats=1)


def test_closed_loop_users_each_send_their_next_request_when_the_last_ends(engine):
    greedy = SamplingSettings(temperature=0)
    asked = [[Request((5, 6, 7), greedy, seed=u * 10 + r, max_new_tokens=4 + 3 * u) for r in range(3)]
             for u in range(3)]
    done = serve_users(Batch(engine.target, engine.draft, engine.vocab, set(), 2), asked, seconds=600)
    assert sorted(u for u, _ in done) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    for u in range(3):
        mine = [s for who, s in done if who == u]
        assert [len(s.output_ids) for s in mine] == [4 + 3 * u] * 3
        for earlier, later in zip(mine, mine[1:]):  # asked when the one before ended, never before
            assert later.asked_s >= earlier.finished_s and later.first_token_s >= later.asked_s


def test_no_request_is_sent_after_the_time_bound(engine):
    asked = [[Request((5, 6), SamplingSettings(temperature=0), seed=r, max_new_tokens=3) for r in range(5)]]
    assert len(serve_users(Batch(engine.target, None, engine.vocab, set(), 0), asked, seconds=1e-9)) == 1


def test_a_serve_bench_reports_every_user_and_the_same_greedy_tokens_under_every_rule(engine, profile):
    plan = Plan(users=(1, 3), rules=("target", "k2", "cost"), kinds=("code", "story"), max_new_tokens=8, turns=2)
    runs = closed_loop.serve_runs(engine, plan, profile)
    assert [(r.turn, r.users, r.rule) for r in runs][:6] == [(0, 1, "target"), (0, 1, "k2"), (0, 1, "cost"),
                                                            (0, 3, "target"), (0, 3, "k2"), (0, 3, "cost")]
    for run in runs:
        assert len(run.users_detail) == run.users and run.aggregate_tokens_per_s > 0
        for d in run.users_detail:
            assert len(d["output_token_ids"]) == 8 and d["ttft_s"] > 0 and d["tokens_per_s"] > 0
    assert closed_loop.greedy_same(runs)
    cost = [r for r in runs if r.rule == "cost"]
    assert all(r.why and r.why[0].startswith(f"B = {r.users}, c = ") and "→ K = " in r.why[0] for r in cost)
    text = closed_loop.report(runs, plan, "this machine", closed_loop.predicted_crossovers(runs, profile))
    assert "serve-bench on this machine: 2 interleaved turns" in text
    assert "greedy: every rule gave every prompt the same tokens" in text
    assert "k2: drafting's aggregate first falls below the target alone's (beyond what the turns vary) at " in text
    data = closed_loop.as_json(runs, plan, "this machine")
    assert {"users", "rule", "turn", "aggregate_tokens_per_s", "users_detail"} <= set(data["runs"][0])
    assert {"prompt", "ttft_s", "tokens_per_s", "output_token_ids"} <= set(data["runs"][0]["users_detail"][0])


def test_a_wrong_token_under_one_rule_is_reported():
    """The greedy check compares the rules' tokens prompt by prompt: a run that differs is caught."""
    same = closed_loop.Run(1, "target", 0, 1.0, 1.0, 1.0, 0.0, [dict(prompt="p", output_token_ids=[1, 2])])
    other = closed_loop.Run(1, "k4", 0, 1.0, 1.0, 1.0, 0.0, [dict(prompt="p", output_token_ids=[1, 3])])
    assert closed_loop.greedy_same([same, same]) and not closed_loop.greedy_same([same, other])


@pytest.mark.parametrize("args, words", [
    (["--users", "0"], "users must be whole numbers from 1 to 16, got 0"),
    (["--users", "17"], "users must be whole numbers from 1 to 16, got 17"),
    (["--users", "a,b"], "a comma-separated list of whole numbers"),
    (["--rules", "k0"], "unknown rule 'k0': the rules are target, kN (N drafts a round, 1-16), cost"),
    (["--rules", "fast"], "unknown rule 'fast'"),
    (["--prompt-kinds", "poems"], "unknown prompt kind 'poems'"),
    (["--turns", "0"], "turns must be 1-20"),
    (["--temperature", "-1"], "temperature"),
])
def test_a_plan_out_of_bounds_is_refused_before_anything_loads(args, words, capsys, monkeypatch):
    from specviz import cli as specviz_cli
    from specviz.models import pairs

    monkeypatch.setattr(pairs, "load_pair", lambda *a, **k: pytest.fail("the pair was loaded before the refusal"))
    try:
        code = specviz_cli.main(["serve-bench", *args])
    except SystemExit as e:
        code = e.code
    assert code == 2 and words in capsys.readouterr().err


def test_the_command_prints_the_table_and_writes_the_json(tiny_pair, tokenizer, tmp_path, capsys, monkeypatch):
    from types import SimpleNamespace

    from specviz import cli as specviz_cli
    from specviz.models import pairs

    pair = SimpleNamespace(draft=tiny_pair[0], target=tiny_pair[1], tokenizer=tokenizer, draft_name="tiny-draft",
                           target_name="tiny-target", dtype="float32", dtype_why="")
    monkeypatch.setattr(pairs, "load_pair", lambda *a, **k: pair)
    real = pass_timing.measure_costs
    monkeypatch.setattr(pass_timing, "measure_costs", lambda e, progress=None: real(
        e, context=16, tokens=(1, 2, 5, 9), batches=(1, 2), repeats=1, progress=progress))
    path = tmp_path / "serve.json"
    code = specviz_cli.main(["serve-bench", "--users", "1,2", "--rules", "target,k3,cost", "--turns", "1",
                             "--max-new-tokens", "6", "--json", str(path)])
    out = capsys.readouterr().out
    assert code == 0 and "aggregate tokens/s" in out and "time to first token s" in out
    runs = json.loads(path.read_text())["runs"]
    assert sorted((r["users"], r["rule"]) for r in runs) == [(1, "cost"), (1, "k3"), (1, "target"), (2, "cost"),
                                                           (2, "k3"), (2, "target")]


def test_no_longer_pass_is_priced_cheaper_than_a_shorter_one():
    """One slow point (t(8) timed while the machine was busy) must not make every longer pass look free."""
    from specviz.record.cost_profile import CostProfile

    slow = CostProfile("cpu", "float32", "d", "t", 64, [1, 2, 8, 16, 32], [1.0, 1.1, 9.0, 1.6, 2.4], [1, 2, 4],
                       [1.0, 5.0, 1.4], [0.3, 0.35, 0.5])
    steady = slow.steady()
    assert steady.target_s == [1.0, 1.1, 1.6, 1.6, 2.4] and steady.target_batch_s == [1.0, 1.4, 1.4]
    assert steady.t(16) / steady.t(8) == 1.0 and slow.t(16) / slow.t(8) < 0.2


def test_a_fixed_k_s_crossover_is_predicted_from_what_its_rounds_gave_a_sequence():
    """α = 0.9 promises E(0.9, 4) = 4.1 tokens a round; rounds that gave each sequence 2.0 cross over at fewer users.
    The negative control: the same runs without the measured figure predict by α, later. The cost rule, whose K
    varies, keeps E(α, K)."""
    from specviz.record.cost_profile import CostProfile

    tokens = [1, 2, 5, 10, 20, 40, 80]
    profile = CostProfile("cpu", "float32", "d", "t", 64, tokens, [1 + 0.2 * (n - 1) for n in tokens], [1, 2, 4, 8, 16],
                          [1 + 0.2 * (b - 1) for b in (1, 2, 4, 8, 16)], [0.1] * 5)
    measured = [closed_loop.Run(u, rule, 0, 1.0, 1.0, 2.0, 0.9, [], [], 2.0) for u in (1, 2) for rule in ("k4", "cost")]
    unmeasured = [closed_loop.Run(u, "k4", 0, 1.0, 1.0, 2.0, 0.9, []) for u in (1, 2)]
    by_rounds = closed_loop.predicted_crossovers(measured, profile)
    by_alpha = closed_loop.predicted_crossovers(unmeasured, profile)
    assert by_rounds["k4"] == pass_timing.crossover_batch(profile.steady(), 0.9, 4, tokens=2.0)
    assert by_rounds["k4"] < by_alpha["k4"] == pass_timing.crossover_batch(profile.steady(), 0.9, 4)
    assert by_rounds["cost"] == by_alpha["k4"]

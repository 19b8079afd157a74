"""The benchmark runs end to end and writes well-formed output (speed goals live in the report, not here)."""

import json
import subprocess
import sys

import pytest
import torch


@pytest.mark.slow  # the benchmark end to end in a subprocess
def test_quick_bench_writes_report(tmp_path):
    out = tmp_path / "bench"
    r = subprocess.run([sys.executable, "-m", "specviz", "bench", "--quick", "--tiny", "--out", str(out)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads((out / "results.json").read_text())
    configs = {row["config"] for row in data["rows"]}
    assert {"target-only", "specviz K=1", "specviz K=4", "specviz lookup K=4",
            "transformers assisted K=4", "transformers prompt lookup", "specviz tree 2-1", "specviz layers N=1 K=4"} <= configs
    for row in data["rows"]:
        assert row["tokens_per_s"] > 0 and row["speedup"] > 0
        if row["config"].startswith(("specviz K=", "specviz layers")):  # the draft model, and the target's layers
            assert 0 <= row["alpha"] <= 1 and row["c"] > 0 and row["predicted"] > 0
            assert row["decode_speedup"] > 0
        if row["config"] == "specviz tree 2-1":  # --quick adds a small tree; the chain's cost model is left out
            assert 0 <= row["alpha"] <= 1 and row["tokens_per_pass"] >= 1 and 1 <= row["k"] <= 4
            assert row["c"] is None and row["predicted"] is None
    report = (out / "report.md").read_text()
    assert "| code | greedy |" in report.split("| prompt | mode | config |")[0]  # the peer summary comes first
    assert report.count("\n| ") >= len(data["rows"]) and "Tracing overhead" in report
    assert "plotly" in (out / "chart.html").read_text()[:100000].lower()


def test_gpu_projection_runs_on_tiny_architectures(tmp_path):
    from specviz.measure.projection import measure, projected_speedup, projection_report

    m = measure("tiny-draft", "tiny-target", "cpu", torch.float32, max_new=9)
    assert m["t_draft_s"] > 0 and len(m["t_target_s"]) == 9 and m["c"] > 0
    # with free drafting and a flat target cost, the projection is exactly E(α, K)
    flat = {**m, "t_draft_s": 0.0, "t_target_s": {n: 1.0 for n in range(1, 10)}}
    assert projected_speedup(0.7, 4, flat) == pytest.approx(2.77, abs=0.01)
    assert "| code | 0.90 |" in projection_report(m, {"code": 0.9})


def test_configurations_take_turns_per_prompt_and_repeat():
    """A B C A B C …: every configuration runs once before any runs again, prompt by prompt."""
    from specviz.measure.bench import interleaved

    calls = []
    configs = {name: (lambda prompt, seed, name=name: calls.append((prompt, seed, name)) or len(calls))
               for name in "ABC"}
    results = interleaved(configs, ["p1", "p2"], repeats=2)
    assert calls == [(p, seed, c) for p in ("p1", "p2") for seed in range(2) for c in "ABC"]  # a seed per turn
    assert results == {"A": [1, 4, 7, 10], "B": [2, 5, 8, 11], "C": [3, 6, 9, 12]}  # each in its call order


def test_every_median_has_its_spread_and_speedups_pair_runs_of_one_turn():
    from specviz.measure.bench import _row
    from specviz.measure.bench_report import Row, _m

    # target-only ran at 2 then 4 tok/s (a slow minute, then a fast one); the config at 3 then 6 in the same turns
    row = _row("code", "greedy", "specviz K=4", 4, {"tps": [3.0, 6.0], "ttft": [0.5, 0.7]}, [2.0, 4.0])
    assert row.speedup == 1.5 and row.spreads["speedup"] == [1.5, 1.5]  # paired: the slow minute cancels
    assert row.tokens_per_s == 4.5 and row.spreads["tps"] == [3.0, 6.0] and row.spreads["ttft"] == [0.5, 0.7]
    assert _m(row, "tps", row.tokens_per_s) == "4.50 (3.00–6.00)" and row.runs == 2
    assert _m(Row("code", "x", "greedy", None, 1.0, 1.0), "alpha", None) == ""


def test_the_tracing_overhead_is_each_sides_median_with_its_range():
    from specviz.measure.bench_report import tracing_line

    figures = {"traced_tokens_per_s": 9.5, "untraced_tokens_per_s": 10.0, "overhead": 0.05, "traced_spread": [9.0, 9.8],
               "untraced_spread": [9.7, 10.4], "runs": 8}
    assert tracing_line(figures).endswith("traced 9.50 tok/s (9.00–9.80), minimal trace 10.00 tok/s (9.70–10.40) "
                                          "→ 5.0 %")


def test_the_drafters_side_by_side_with_acceptance_by_position(tiny_pair, tokenizer, tmp_path, monkeypatch):
    """`bench --drafters`: the target alone, the draft model, self-speculation, Medusa heads and the EAGLE layer,
    each at K = 4 (the heads' chain capped at its 3 heads), interleaved; every chain row's acceptance by position is
    its distinct runs' tested and accepted drafts added up (a greedy repeat once), printed as accepted ÷ tested."""
    from specviz.engine import Engine
    from specviz.measure.bench import DRAFTERS_TREES, drafters_ks, run_bench, tree_config
    from specviz.settings.defaults import TREE_BUDGET
    from specviz.measure.bench_report import markdown_report
    from specviz.record.stats import per_position
    from tests.helpers import tiny_eagle, tiny_heads

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    draft, target = tiny_pair
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    with pytest.raises(ValueError, match=r"No Medusa heads are trained for tiny-target.*train-drafters"):
        drafters_ks(engine, [])  # refused before any run: nothing trained for this target
    engine.use_trained(tiny_heads(target, n=3, scale=0.3))
    engine.use_trained(tiny_eagle(target, steps=4, scale=0.3))
    runs = []
    monkeypatch.setattr(Engine, "run", lambda self, *a, _run=Engine.run, **k: runs.append(_run(self, *a, **k))
                        or runs[-1])
    rows = run_bench(engine, drafters_ks(engine, []), ["greedy"], ["json"], 1, 2, 12, 1.0, peer=False)
    trees = [tree_config(key) for key in DRAFTERS_TREES]
    assert trees == ["specviz tree 2-2-1-1", "specviz heads-tree 3-2-1", f"specviz shaped ≤{TREE_BUDGET} nodes",
                     f"specviz heads-shaped ≤{TREE_BUDGET} nodes", f"specviz eagle-shaped ≤{TREE_BUDGET} nodes"]
    assert [r.config for r in rows] == ["target-only", "specviz K=4", "specviz layers N=1 K=4", "specviz heads K=3",
                                        "specviz eagle K=4", *trees]
    drafted = len(rows) - 1
    for row, (first, second) in zip(rows[1:5], [runs[i::drafted] for i in range(4)]):  # interleaved: every run
        assert first.output_token_ids == second.output_token_ids  # greedy: the repeat drafted and decided the same
        want = [[c.tested, c.accepted] for c in per_position(first)]
        assert row.by_position == want and sum(t for t, _ in row.by_position) > 0  # counted once, not twice
        assert len(row.by_position) <= row.k  # no place past K was drafted
    report = markdown_report(rows, None, {"draft": "d", "target": "t", "device": "cpu", "dtype": "float32",
                                          "torch": "x", "transformers": "y", "threads": 1, "max_new_tokens": 12,
                                          "repeats": 2, "date": "today", "drafters": True})
    tested, accepted = rows[3].by_position[0]
    assert f"| json | greedy | specviz heads K=3 | {accepted / tested:.2f} ({accepted}/{tested}) |" in report
    assert "cost-aware rule" not in report and "transformers default" not in report  # no stop rules, no peers


def test_each_bench_need_names_the_benchs_own_flags():
    import argparse

    from specviz.measure.bench_flags import BENCH_NEEDS, add_bench_args
    p = argparse.ArgumentParser()
    add_bench_args(p)
    dests = {a.dest for a in p._actions}
    assert all(n.setting in dests and n.other in dests for n in BENCH_NEEDS)

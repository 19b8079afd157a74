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
    assert _m(row, "tps", row.tokens_per_s) == "4.50 (3.00–6.00)"
    assert _m(Row("code", "x", "greedy", None, 1.0, 1.0), "alpha", None) == ""

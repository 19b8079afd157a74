"""The benchmark runs end to end and writes well-formed output (speed goals live in the report, not here)."""

import json
import subprocess
import sys

import pytest
import torch


def test_quick_bench_writes_report(tmp_path):
    out = tmp_path / "bench"
    r = subprocess.run([sys.executable, "-m", "specviz", "bench", "--quick", "--tiny", "--out", str(out)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads((out / "results.json").read_text())
    configs = {row["config"] for row in data["rows"]}
    assert {"target-only", "specviz K=1", "specviz K=4", "specviz lookup K=4",
            "transformers assisted K=4", "transformers prompt lookup"} <= configs
    for row in data["rows"]:
        assert row["tokens_per_s"] > 0 and row["speedup"] > 0
        if row["config"].startswith("specviz K="):
            assert 0 <= row["alpha"] <= 1 and row["c"] > 0 and row["predicted"] > 0
            assert row["decode_speedup"] > 0
    report = (out / "report.md").read_text()
    assert "| code | greedy |" in report.split("| prompt | mode | config |")[0]  # the peer summary comes first
    assert report.count("\n| ") >= len(data["rows"]) and "Tracing overhead" in report
    assert "plotly" in (out / "chart.html").read_text()[:100000].lower()


def test_gpu_projection_runs_on_tiny_architectures(tmp_path):
    from specviz.projection import measure, projected_speedup, projection_report

    m = measure("tiny-draft", "tiny-target", "cpu", torch.float32, max_new=9)
    assert m["t_draft_s"] > 0 and len(m["t_target_s"]) == 9 and m["c"] > 0
    # with free drafting and a flat target cost, the projection is exactly E(α, K)
    flat = {**m, "t_draft_s": 0.0, "t_target_s": {n: 1.0 for n in range(1, 10)}}
    assert projected_speedup(0.7, 4, flat) == pytest.approx(2.77, abs=0.01)
    assert "| code | 0.90 |" in projection_report(m, {"code": 0.9})

"""The benchmark runs end to end and writes well-formed output (speed goals live in the report, not here)."""

import json
import subprocess
import sys


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
    report = (out / "report.md").read_text()
    assert report.count("\n| ") >= len(data["rows"]) and "Tracing overhead" in report
    assert "plotly" in (out / "chart.html").read_text()[:100000].lower()

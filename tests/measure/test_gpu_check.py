"""tools/gpu_check.sh --dry-run: the GPU check's every step, on CPU with tiny models, into one report."""

import subprocess
import sys

import pytest

from tests.helpers import ROOT
from harness import gpu_steps


@pytest.mark.slow  # every step of the check, each in a subprocess
def test_the_dry_run_writes_a_report_with_every_step(tmp_path):
    report = tmp_path / "report.md"
    done = subprocess.run(["bash", str(ROOT / "tools" / "gpu_check.sh"), "--dry-run", "--out", str(report)],
                          capture_output=True, text=True, timeout=600, env={**__import__("os").environ,
                                                                              "PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-3000:]
    text = report.read_text()
    titles = [step.title for step in gpu_steps.steps(True, tmp_path)]
    assert len(titles) == 7
    for title in titles:
        assert f"\n## {title}\n" in text and f"| {title} |" in text  # a section and a summary row each
    assert text.count("| passed |") == 5 and text.count("| skipped |") == 2  # the two real-pair steps
    assert "auto dtype: float32" in text or "auto dtype: bfloat16" in text  # the machine step's figure
    assert "| code | 0.90 |" in text  # the projection's table (default α, tiny shapes)
    assert "transformers" in text and "| prompt | mode |" in text  # the side-by-side report
    assert "passed" in text.split("## Lossless tests on cpu")[1].split("## ")[0]  # pytest's own summary line
    assert (tmp_path / "projection" / "projection.json").exists() and (tmp_path / "peer" / "results.json").exists()


def test_on_a_gpu_every_step_runs_on_cuda(tmp_path):
    steps = gpu_steps.steps(False, tmp_path)
    assert not any(step.skipped for step in steps)
    assert all(step.env.get("SPECVIZ_TEST_DEVICE") == "cuda" for step in steps if "pytest" in step.command)
    assert "--tiny" not in steps[5].command and "--gpu-projection" in steps[5].command
    assert sum(step.limit_s for step in steps) >= gpu_steps.BUDGET_S  # each limited; the whole by BUDGET_S

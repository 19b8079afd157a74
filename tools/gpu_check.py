"""The GPU check: every CUDA path of specviz, run once on a machine with a GPU, with one report file.

    tools/gpu_check.sh                     # on a GPU machine: about 5 minutes, no network (the pair is packaged)
    tools/gpu_check.sh --dry-run           # the same steps on CPU with tiny random-weight models (~2 minutes)
    tools/gpu_check.sh --out report.md     # where the report goes (default gpu-check/report.md)

Steps, each a command of its own with a time limit (the whole stays under 8 minutes): the machine and the dtype
auto picks there; the packaged pair prepared (a no-op once cached); the lossless tests on the device; the
real-pair tests on the device in its auto dtype and in float16; the engine's float32 greedy identity; the GPU
projection (random-weight Qwen2.5-0.5B/7B shapes); a short side by side against transformers' assisted
generation. The report holds every command, its exit status, its time and its figures. --dry-run swaps in the
tiny-model variant of each step (the lossless step shortened to the sampler's own tests: the engine's take
minutes on a busy 2-core CPU) and skips those that need the real pair, saying so. The steps are listed in
harness/gpu_steps.py (its tests read them there); this script runs them and writes the report.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.gpu_steps import BUDGET_S, DRY_SLACK, Step, steps

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Outcome:
    step: Step
    status: str  # "passed", "FAILED (exit n)", "TIMED OUT", "NOT RUN (…)", "skipped"
    seconds: float
    output: str


def run(step: Step, left_s: float) -> Outcome:
    """Run one step for at most left_s seconds (its limit, or what the budget has left if less)."""
    if step.skipped:
        return Outcome(step, "skipped", 0.0, step.skipped)
    if left_s < 1:
        return Outcome(step, "NOT RUN (the budget was spent)", 0.0, f"the steps before took all {BUDGET_S} s")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False",
           "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT), **step.env}
    started = time.perf_counter()
    try:
        done = subprocess.run(step.command, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=left_s)
    except subprocess.TimeoutExpired as e:
        output = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return Outcome(step, "TIMED OUT", time.perf_counter() - started, output)
    status = "passed" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
    return Outcome(step, status, time.perf_counter() - started, done.stdout + done.stderr)


def figures(outcome: Outcome, out: Path) -> str:
    """What the report shows of a step: its own summary file where it writes one, else its output's tail."""
    title = outcome.step.title
    if outcome.status == "passed" and title.startswith("GPU projection"):
        return (out / "projection" / "projection.md").read_text()
    if outcome.status == "passed" and title.startswith("Side by side"):
        return (out / "peer" / "report.md").read_text()
    lines = [line for line in outcome.output.splitlines() if "Loading weights" not in line and line.strip()]
    return "```\n" + "\n".join(lines[-25:]) + "\n```\n"


def report(outcomes: list[Outcome], dry: bool, total_s: float) -> str:
    mode = "dry run: CPU, tiny random-weight models" if dry else "GPU"
    lines = [f"# specviz GPU check ({mode})", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · {total_s:.0f} s in all (budget {BUDGET_S} s) · "
             f"written by `tools/gpu_check.sh{' --dry-run' if dry else ''}`", "",
             "| step | status | seconds |", "|---|---|---|"]
    lines += [f"| {o.step.title} | {o.status} | {o.seconds:.1f} |" for o in outcomes]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="specviz's GPU check (see the module docstring)")
    parser.add_argument("--dry-run", action="store_true", help="CPU and tiny models: proves the script works")
    parser.add_argument("--out", default="gpu-check/report.md", help="the report file (its folder gets the rest)")
    a = parser.parse_args(argv)
    report_path = Path(a.out).resolve()
    out = report_path.parent
    out.mkdir(parents=True, exist_ok=True)
    started, outcomes = time.perf_counter(), []
    for step in steps(a.dry_run, out):
        print(f"[gpu_check] {step.title} …", file=sys.stderr, flush=True)
        # The budget is the GPU machine's; a dry run on a shared CPU may take longer, and only proves the steps.
        left = (DRY_SLACK * step.limit_s if a.dry_run else
                min(step.limit_s, BUDGET_S - (time.perf_counter() - started)))
        outcomes.append(run(step, left))
        print(f"[gpu_check]   {outcomes[-1].status} in {outcomes[-1].seconds:.1f} s", file=sys.stderr, flush=True)
    text = report(outcomes, a.dry_run, time.perf_counter() - started)
    for o in outcomes:
        text += f"\n## {o.step.title}\n\n{o.status} in {o.seconds:.1f} s.\n\n"
        text += "```\n" + " ".join(f"{k}={v}" for k, v in o.step.env.items()) + (" " if o.step.env else "")
        text += " ".join(_shown(part) for part in o.step.command) + "\n```\n\n" + figures(o, out)
    report_path.write_text(text)
    print(f"[gpu_check] report: {report_path}", file=sys.stderr)
    return 0 if all(o.status in ("passed", "skipped") for o in outcomes) else 1


def _shown(part: str) -> str:
    """A command's word as a shell reads it; the interpreter as `python`."""
    if part == sys.executable:
        return "python"
    return f'"{part}"' if any(c in part for c in " ;()'") else part


if __name__ == "__main__":
    sys.exit(main())

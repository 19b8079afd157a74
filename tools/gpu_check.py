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
minutes on a busy 2-core CPU) and skips those that need the real pair, saying so.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_S = 480  # the whole check must fit in 8 minutes
DRY_SLACK = 3  # a dry run's steps get 3x their limits and no overall budget
MACHINE = ("import torch, platform; from specviz.engine.pairs import pick_device, auto_dtype; d = pick_device(); "
           "print('device:', d, '·', torch.cuda.get_device_name() if d.startswith('cuda') else platform.processor() "
           "or platform.machine()); print('torch:', torch.__version__, '· CUDA', torch.version.cuda); "
           "print('capability:', torch.cuda.get_device_capability() if d.startswith('cuda') else '-'); "
           "print('auto dtype: %s (%s)' % auto_dtype(d))")
PREPARE = ("from specviz.engine.pairs import PACKAGED, prepare_packaged; "
           "[print(prepare_packaged(name)) for name in PACKAGED]")


@dataclass
class Step:
    title: str
    command: list[str]
    env: dict[str, str]
    limit_s: int
    skipped: str = ""  # why the step does not run in this mode


@dataclass
class Outcome:
    step: Step
    status: str  # "passed", "FAILED (exit n)", "TIMED OUT", "NOT RUN (…)", "skipped"
    seconds: float
    output: str


def pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *args]


def steps(dry: bool, out: Path) -> list[Step]:
    """What runs, in order. dry: CPU and tiny models; the real pair's steps are skipped."""
    device = "cpu" if dry else "cuda"
    on = {"SPECVIZ_TEST_DEVICE": device}
    real = "needs the packaged pair on a GPU: skipped in --dry-run" if dry else ""
    # dry: the rule's own tests; on the GPU: the rule through the whole engine
    lossless = (pytest("tests/algorithm/test_sampling.py", "-k", "preserves_p or negative_control") if dry else
                pytest("tests/engine/test_lossless.py", "-k", "engine_output and not int8 and not int4"))
    identity = (pytest("tests/engine/test_engine.py", "-k", "greedy_equals_target_only") if dry else
                pytest("-m", "real", "tests/engine/test_real_pair.py", "-k", "fp32"))
    peer = [sys.executable, "-m", "specviz", "bench", "--out", str(out / "peer"), "--modes", "greedy", "--ks", "4",
            "--lookup-ks", "4", "--adaptive-k", "8"]  # greedy, K = 4: like for like with transformers' K = 4
    peer += (["--tiny", "--types", "code", "--repeats", "1", "--max-new-tokens", "12"] if dry else
             ["--types", "code,factual,story", "--repeats", "2", "--max-new-tokens", "48"])
    projection = [sys.executable, "-m", "specviz", "bench", "--gpu-projection", "--out", str(out / "projection")]
    return [
        Step("Machine and auto dtype", [sys.executable, "-c", MACHINE], {}, 60),
        Step("Packaged pair prepared", [sys.executable, "-c", PREPARE], {}, 240, real),
        Step(f"Lossless tests on {device}" + (" (the sampler's only)" if dry else ""), lossless, on, 120),
        Step(f"Real-pair tests on {device}, auto dtype and float16",
             pytest("-m", "real", "tests/engine/test_real_pair.py", "-k", "not fp32"), on, 150, real),
        Step(f"Float32 greedy identity on {device}" + (" (tiny models)" if dry else ""), identity, on, 120),
        Step("GPU projection" + (" (tiny shapes on CPU)" if dry else " (random-weight Qwen2.5-0.5B → 7B)"),
             projection + (["--tiny"] if dry else []), {}, 120),
        Step("Side by side with transformers' assisted generation" + (" (tiny models)" if dry else ""),
             peer, {}, 180),
    ]


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

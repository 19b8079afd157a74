"""Every drafter's greedy output equal to the target alone's on each path that computes from a GGUF file's blocks
(gguf-int4, gguf-ort), the target a tiny model with blocks of its own (harness/tiny_models.py); the packaged target's
own blocks: tests/engine/test_real_pair.py."""

import pytest

from harness.tiny_models import char_tokenizer, noisy_copy, on_gguf_int4, on_gguf_ort, tiny_model
from specviz.drafters import REGISTRY
from specviz.engine import Engine, RunSettings
from specviz.models import kernels
from specviz.models.kernels import GGUF_INT4, GGUF_ORT, apply_path

pytestmark = pytest.mark.usefixtures("one_thread")
ON_PATH = {GGUF_INT4: on_gguf_int4, GGUF_ORT: on_gguf_ort}


@pytest.fixture(scope="module", params=list(ON_PATH))
def gguf_engine(request):
    """The tiny pair with the target on a GGUF path, computing from blocks of its own."""
    if kernels.available(request.param) is not None:
        pytest.skip(kernels.available(request.param))
    target = tiny_model(0)
    draft = noisy_copy(target, 0.3)
    return Engine(apply_path(draft, request.param), ON_PATH[request.param](target), char_tokenizer(), "draft",
                  "tiny-target", dtype="float32", kernels=request.param)


@pytest.mark.parametrize("drafter", [key for key, d in REGISTRY.items() if not d.trained])
def test_greedy_on_a_gguf_path_equals_the_target_alone_on_it(gguf_engine, drafter):
    trace = gguf_engine.run("def fib(n):", RunSettings(drafter=drafter, temperature=0, max_new_tokens=24),
                            baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids and len(trace.output_token_ids) == 24

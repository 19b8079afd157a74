"""The real embedded pair (Qwen2.5-Coder 0.5B -> 1.5B from the packaged GGUF chunks). Slow: marked `real`.

The first run on a machine prepares the safetensors cache (~3 minutes); later runs load in seconds.
"""

import pytest

from specviz.engine import Engine, RunSettings
from specviz.models import load_pair

pytestmark = pytest.mark.real

PROMPTS = ["Write a Python function that returns the n-th Fibonacci number.",
           "What is the capital of France? Answer in one sentence.",
           "Write the opening of a short story about a lighthouse keeper."]


@pytest.fixture(scope="module")
def fp32_engine():
    return Engine.from_pair(load_pair(dtype="float32"))


@pytest.mark.parametrize("prompt", PROMPTS)
def test_fp32_greedy_equals_target_only(fp32_engine, prompt):
    trace = fp32_engine.run(prompt, RunSettings(k=4, temperature=0, max_new_tokens=16), baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids
    assert len(trace.output_token_ids) >= 8
    assert trace.summary.n_rounds < len(trace.output_token_ids)  # several tokens per target pass


def test_sampled_run_has_sane_acceptance(fp32_engine):
    trace = fp32_engine.run(PROMPTS[0], RunSettings(k=4, temperature=0.7, seed=0, max_new_tokens=24))
    s = trace.summary
    assert 0.3 <= s.acceptance_rate <= 1.0 and s.tokens_per_pass > 1.5
    assert 0.3 <= s.mean_overlap <= 1.0
    for r in trace.rounds:
        for d in r.drafts:
            assert 0 <= d.p <= 1 and 0 < d.q <= 1
            assert d.candidates and any(c.token_id == d.token_id for c in d.candidates)
    assert trace.output_text.strip()

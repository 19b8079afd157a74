"""Per-round cost of everything but the forward passes: the engine with `forward` replaced by a lookup of
precomputed logits (vocabulary 151,936 as the packaged pair; no model work at all). Best of N runs.

    python -m tools.measure_loop    # from the root of the checkout whose specviz it measures
"""
import statistics, time
import torch
import specviz.engine.engine as em
from specviz.measure.bench import _tiny_engine
from specviz.engine.engine import RunSettings
from specviz.settings.bounds import CODE_PROMPT
e = _tiny_engine()
V = 151936
gen = torch.Generator().manual_seed(0)
pool = torch.randn(64, V, generator=gen) * 3
pool[:, 100] += 12  # a clear favourite in most rows: greedy drafts are often accepted
calls = [0]
def fake_forward(model, tokens, cache, keep):
    calls[0] += 1
    i = calls[0] % 50
    return pool[i:i + keep].clone()
em.forward = fake_forward
def per_round(temp, details):
    c0 = time.perf_counter()
    t = e.run(CODE_PROMPT, RunSettings(k=4, temperature=temp, max_new_tokens=48, seed=1), details=details)
    return (time.perf_counter() - c0) / t.summary.n_rounds * 1000
for temp in (0.0, 0.7):
    for details in (True, False):
        xs = [per_round(temp, details) for _ in range(7)]
        print(f"temperature {temp} trace {'full' if details else 'minimal'}: {min(xs):.1f} ms/round best of 7 (median {statistics.median(xs):.1f})", flush=True)

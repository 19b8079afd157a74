"""Losslessness through the whole engine (caches, warping, rollback), not only the sampler.

With tiny models the exact target distribution of the first two generated tokens is computable, so the
empirical distribution of many seeded speculative runs can be compared with it; a wrong sampler patched into
the same engine must fail the same bound (negative control).
"""

import copy

import pytest
import torch

from specviz import engine as engine_module
from specviz.engine import RunSettings
from specviz.quant import quantize_linears
from specviz.sampling import SamplingSettings, sample, verify, warp

from conftest import TEST_DEVICE

DEVICE = TEST_DEVICE or "cpu"
PROMPT = "def f"
N_RUNS = 600  # seeds 0..599: deterministic; right-sampler TV ~0.04, wrong-sampler TV ~0.17 here


def exact_second_token(engine, ids, sampling):
    """p(y2) = sum over x of p(x | prompt) * p(y | prompt, x), from the target alone."""
    with torch.inference_mode():
        p1 = warp(engine.target(torch.tensor([ids], device=DEVICE)).logits[0, -1:], sampling)[0]
        batch = torch.tensor([ids + [x] for x in range(p1.shape[0])], device=DEVICE)
        p2_given = warp(engine.target(batch).logits[:, -1], sampling)
    return p1.cpu(), (p1 @ p2_given).cpu()


def empirical(engine, settings, n):
    counts = None
    for seed in range(n):
        run = engine.start(PROMPT, RunSettings(**{**settings.__dict__, "seed": seed}))
        for _ in run:
            pass
        out = run.ids[len(run.prompt_ids):]
        if counts is None:
            counts = torch.zeros(2, engine.vocab)
        counts[0, out[0]] += 1
        counts[1, out[1]] += 1
    return counts / n


def tv(a, b):
    return 0.5 * (a - b).abs().sum().item()


def _wrong_verify(p, q, drafts, generator=None):
    """Resample from p instead of the residual after a rejection (a bug shipped elsewhere)."""
    v = verify(p, q, drafts, generator)
    if v.rejected:
        v.next_token = int(sample(p[v.n_accepted][None], generator)[0])
    return v


def make_setup(draft, target, tokenizer):
    from specviz.engine import Engine

    eng = Engine(draft, target, tokenizer)
    eng.eos_ids = set()  # the test counts exactly two tokens per run
    settings = RunSettings(k=2, temperature=1.0, max_new_tokens=2, chat=False)
    ids = eng.encode(PROMPT, settings)
    p1, p2 = exact_second_token(eng, ids, SamplingSettings(temperature=1.0))
    return eng, settings, p1, p2


@pytest.fixture(scope="module")
def setup(tiny_pair, tokenizer):
    """On DEVICE (SPECVIZ_TEST_DEVICE): the same models, copied there."""
    draft, target = tiny_pair
    if DEVICE != "cpu":
        draft, target = copy.deepcopy(draft).to(DEVICE), copy.deepcopy(target).to(DEVICE)
    return make_setup(draft, target, tokenizer)


@pytest.fixture(scope="module")
def setup_int8(tiny_pair, tokenizer):
    """Any draft must give the target's output: also the int8 draft the app uses on CPU."""
    if DEVICE != "cpu":
        pytest.skip("int8 draft weights are CPU-only")
    draft, target = tiny_pair
    return make_setup(quantize_linears(copy.deepcopy(draft)), target, tokenizer)


@pytest.mark.parametrize("which", ["setup", "setup_int8"])
def test_engine_output_follows_the_target(which, request):
    eng, settings, p1, p2 = request.getfixturevalue(which)
    freq = empirical(eng, settings, N_RUNS)
    assert tv(freq[0], p1) < 0.08 and tv(freq[1], p2) < 0.08


def test_negative_control_wrong_sampler_in_the_engine(setup, monkeypatch):
    eng, settings, p1, p2 = setup
    monkeypatch.setattr(engine_module, "verify", _wrong_verify)
    freq = empirical(eng, settings, N_RUNS)
    assert max(tv(freq[0], p1), tv(freq[1], p2)) > 0.12  # the bound that passes the real engine fails this

"""engine/readout.py: a drafter from the target's state that drafts over part of the vocabulary (FR-Spec) keeps the
output exact: its drafts stay in the subset, its q is 0 outside it, greedy output equals the target alone's, sampled
output follows the target (chi-squared over two tokens), and a planted bug (drafting over the subset but verifying
against the full vocabulary's q) fails the same test. The subset is saved with the weights and drafts again after a
load, on the fast kernels too."""

from __future__ import annotations

import pytest
import torch

from harness.tiny_models import char_tokenizer, noisy_copy, tiny_model
from specviz.algorithm.sampling import SamplingSettings, warp
from specviz.drafters import EAGLE, HEADS, HEADS_TREE
from specviz.engine import Engine, RunSettings, chain, heads_draft
from specviz.models.fingerprint import fingerprint
from specviz.models.kernels import FP16_FBGEMM, apply_path, available
from specviz.engine.trained import Provenance, load_trained, save_trained
from tests.engine.test_heads_run import two_token_chi_square
from tests.helpers import tiny_eagle, tiny_heads

pytestmark = pytest.mark.usefixtures("one_thread")
SUBSET = torch.tensor([0, 2, 5, 7])  # of an 8-token vocabulary
RUNS, CONTROL_RUNS = 3000, 2000


def small_engine(subset: torch.Tensor | None) -> tuple[Engine, torch.nn.Module]:
    target = tiny_model(seed=3, layers=2, vocab=8)
    with torch.no_grad():
        target.lm_head.weight.mul_(0.1)
    engine = Engine(noisy_copy(target, 1.0, seed=1), target, char_tokenizer())
    heads, eagle = tiny_heads(target, n=2, scale=3.0, seed=1), tiny_eagle(target, steps=2, scale=3.0, seed=1)
    if subset is not None:
        heads.use_vocab(subset)
        eagle.use_vocab(subset)
    engine.use_trained(heads)
    engine.use_trained(eagle)
    engine.eos_ids = set()
    return engine, target


def chi_square(drafter: str, subset: torch.Tensor | None, runs: int = RUNS) -> float:
    """Tokens 2 and 3 of `runs` seeded runs against the target alone's p(y2, y3) (test_heads_run.py's test)."""
    return two_token_chi_square(drafter, runs=runs, subset=subset)[1]


def test_drafts_stay_in_the_subset_and_q_is_zero_outside_it():
    engine, _ = small_engine(SUBSET)
    trace = engine.run("abc", RunSettings(drafter=HEADS.key, k=2, temperature=1.0, max_new_tokens=12, chat=False))
    drafted = [d for r in trace.rounds for d in r.drafts]
    assert drafted and all(d.token_id in SUBSET.tolist() for d in drafted)
    heads = engine.trained_for(HEADS)
    q = warp(heads(torch.randn(engine.target.config.hidden_size)).float(), SamplingSettings(temperature=1.0))
    outside = torch.ones(8, dtype=torch.bool)
    outside[SUBSET] = False
    assert torch.all(q[:, outside] == 0) and torch.allclose(q.sum(-1), torch.ones(2))


@pytest.mark.parametrize("drafter", [HEADS.key, HEADS_TREE.key, EAGLE.key])
def test_greedy_with_a_subset_equals_the_target_alone(drafter):
    engine, _ = small_engine(SUBSET)
    widths = (2, 2) if drafter == HEADS_TREE.key else None  # one depth per head: two heads
    trace = engine.run("abc", RunSettings(drafter=drafter, temperature=0, max_new_tokens=16, chat=False,
                                          tree_widths=widths), baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids


@pytest.mark.parametrize("drafter", [HEADS.key, EAGLE.key])
def test_sampled_with_a_subset_follows_the_target(drafter):
    assert chi_square(drafter, SUBSET) > 1e-3


@pytest.mark.control
def test_negative_control_verifying_against_the_full_vocabularys_q_fails(monkeypatch):
    """The bug FR-Spec warns of: drafts drawn over the subset, but tested against q over every token."""
    def wrong_chain(heads, hidden, k, sampling, vocab, generator):
        drafts, q, logits = real_chain(heads, hidden, k, sampling, vocab, generator)
        full = warp(heads.full_head(torch.stack([b(hidden.to(heads.dtype)) for b in heads.blocks][:k])).float()
                    [:, :vocab], sampling)
        return drafts, full, logits
    real_chain = heads_draft.heads_chain
    monkeypatch.setattr(chain, "heads_chain", wrong_chain)
    assert chi_square(HEADS.key, SUBSET, CONTROL_RUNS) < 1e-6


def test_the_subset_is_saved_and_drafts_again_after_a_load(tmp_path):
    _, target = small_engine(None)
    heads = tiny_heads(target, n=2, scale=3.0, seed=1)
    heads.use_vocab(SUBSET)
    provenance = Provenance("medusa", "tiny", fingerprint(target), 2, 64, "", 0, 0, 0, 0.0, draft_vocab=4)
    folder = save_trained(heads, provenance, tmp_path)
    paths = [""] + ([FP16_FBGEMM] if available(FP16_FBGEMM) is None else [])
    for path in paths:
        model = apply_path(target, path) if path else target
        loaded = load_trained(folder, model, "tiny", path=path)
        assert torch.equal(loaded.vocab_ids, SUBSET)
        hidden = torch.randn(64)
        assert torch.isinf(loaded(hidden)[:, 1]).all() and torch.isfinite(loaded(hidden)[:, SUBSET]).all()

"""Trees shaped per round through the engine (algorithm/shaped.py; the draft model's, the Medusa heads' and the EAGLE
layer's), on tiny models: greedy output equals the target alone's in float32 and on the fast CPU kernels, sampled
output follows the target (chi-squared over tokens 2 and 3), and the bias the shaping must not have (drawing several
children and keeping the best-scoring one) fails the same test. Each round records its shaped tree: its nodes within
the budget, its depth within the bound."""

from __future__ import annotations

import copy

import pytest
import torch

from specviz.algorithm import shaped
from specviz.drafters import EAGLE_SHAPED, HEADS_SHAPED, SHAPED
from specviz.engine import Engine, RunSettings
from specviz.models.kernels import FP16_FBGEMM, apply_path, available
from tests.engine.test_heads_run import two_token_chi_square
from tests.helpers import tiny_eagle, tiny_heads

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models run on one thread

PROMPT = "def fib(n):"
DRAFTERS = [SHAPED.key, HEADS_SHAPED.key, EAGLE_SHAPED.key]
# budget, most depth (0: the drafter's default; the tiny heads and EAGLE layer have 3)
EAGLE_SCALE = 0.3  # an EAGLE layer whose q is spread, so that which child is kept can matter (at 3.0 it is one-hot)
SHAPES = [dict(), dict(tree_budget=1), dict(tree_budget=4, tree_depth=2), dict(tree_budget=32, tree_depth=3)]


def shaped_engine(draft, target, tokenizer) -> Engine:
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    engine.use_trained(tiny_heads(target, n=3, scale=0.3))
    engine.use_trained(tiny_eagle(target, steps=3, scale=0.3))
    return engine


@pytest.fixture(scope="module")
def engine(tiny_pair, tokenizer):
    return shaped_engine(*tiny_pair, tokenizer)


@pytest.mark.parametrize("drafter", DRAFTERS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()) or "default")
def test_greedy_shaped_trees_equal_the_target_alone_in_float32(engine, drafter, shape):
    settings = RunSettings(drafter=drafter, temperature=0, max_new_tokens=40, **shape)
    trace = engine.run(PROMPT, settings, baseline=True)
    assert trace.dtype == "float32" and trace.output_token_ids == trace.baseline.output_token_ids
    assert trace.summary.n_accepted > 0  # the drafts were used
    trees = [r.tree for r in trace.rounds if r.tree is not None]  # not the prefill's round, nor a last plain step
    assert trees and all(t.budget == settings.tree_budget and not t.widths for t in trees)
    assert all(1 <= len(t.parents) - 1 <= settings.tree_budget and max(t.depth) <= settings.depth for t in trees)


@pytest.mark.skipif(available(FP16_FBGEMM) is not None, reason="fbgemm does not run on this machine")
@pytest.mark.parametrize("drafter", DRAFTERS)
def test_greedy_shaped_trees_equal_the_target_alone_on_the_fast_kernels(tiny_pair, tokenizer, drafter):
    draft, target = (apply_path(copy.deepcopy(m), FP16_FBGEMM) for m in tiny_pair)  # the shared pair untouched
    trace = shaped_engine(draft, target, tokenizer).run(PROMPT, RunSettings(drafter=drafter, temperature=0,
                                                                            max_new_tokens=40), baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids and trace.summary.n_accepted > 0


@pytest.mark.parametrize("drafter", DRAFTERS)
def test_sampled_shaped_trees_follow_the_target(drafter):
    dof, pval = two_token_chi_square(drafter, eagle_scale=EAGLE_SCALE)
    assert dof >= 30 and pval > 1e-3


def keep_the_best_of_three(left: torch.Tensor, greedy: bool, generator: torch.Generator | None) -> int:
    """The bias algorithm/shaped.py's docstring forbids: draw three children, keep the one the draft scores highest."""
    draws = [real_draw_child(left, greedy, generator) for _ in range(3)]
    return max(draws, key=lambda x: float(left[x]))


real_draw_child = shaped.draw_child


@pytest.mark.control
@pytest.mark.parametrize("drafter", DRAFTERS)
def test_negative_control_keeping_the_best_of_several_draws_fails_the_chi_square(monkeypatch, drafter):
    _, pval = two_token_chi_square(drafter, monkeypatch, (shaped, "draw_child", keep_the_best_of_three), 1500,
                                   EAGLE_SCALE)
    assert pval < 1e-6

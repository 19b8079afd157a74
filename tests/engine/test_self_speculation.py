"""self_speculation.py: the target's first N layers + its final norm and LM head as a draft, sharing every weight."""

import pytest
import torch
from transformers import DynamicCache

from harness.tiny_models import tiny_model
from specviz.engine import self_speculation
from specviz.engine import Engine, RunSettings


@pytest.fixture(scope="module")
def target():
    return tiny_model(seed=5, layers=4)


def exit_logits(target, ids: list[int], n: int) -> torch.Tensor:
    """The reference: the full target's hidden state after layer n, through its final norm and LM head."""
    with torch.no_grad():
        hidden = target(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states[n]
        return target.lm_head(target.model.norm(hidden))[0]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_the_view_computes_the_targets_early_exit(target, n):
    ids = [5, 9, 14, 3, 22, 7]
    view = self_speculation.early_exit(target, n)
    with torch.no_grad():
        got = view(input_ids=torch.tensor([ids])).logits[0]
    assert torch.allclose(got, exit_logits(target, ids, n), atol=1e-5)
    if n < 3:  # and it is not the full model: another N gives other logits
        assert not torch.allclose(got, exit_logits(target, ids, n + 1), atol=1e-3)


def test_the_view_shares_every_weight_and_keeps_its_own_cache(target):
    view = self_speculation.early_exit(target, 2)
    mine = {t.data_ptr() for t in target.parameters()}
    assert all(p.data_ptr() in mine for p in view.parameters())  # nothing copied: one model in memory
    assert len(view.model.layers) == 2 and view.model.layers[1] is target.model.layers[1]
    cache = DynamicCache()
    with torch.no_grad():
        view(input_ids=torch.tensor([[5, 9, 14]]), cache=cache, use_cache=True)
        step = view(input_ids=torch.tensor([[3]]), cache=cache, use_cache=True).logits[0, -1]
    assert cache.get_seq_length() == 4 and len(cache.layers) == 2  # its own cache, two layers deep
    assert torch.allclose(step, exit_logits(target, [5, 9, 14, 3], 2)[-1], atol=1e-5)


@pytest.mark.parametrize("n", [0, 4, 9, -1, 2.5, True, "2"])
def test_a_bad_layer_count_says_what_is_allowed(target, n):
    with pytest.raises(ValueError, match=r"draft layers must be a whole number from 1 to 3 \(the target has 4"):
        self_speculation.early_exit(target, n)


def test_a_model_of_another_shape_is_refused():
    with pytest.raises(ValueError, match="self-speculation needs a decoder"):
        self_speculation.layer_count(torch.nn.Linear(2, 2))


def test_greedy_self_speculation_equals_the_target_alone(target, tokenizer):
    engine = Engine(self_speculation.early_exit(target, 2), target, tokenizer, "layers 0-1", "tiny-target")
    settings = RunSettings(k=4, temperature=0, max_new_tokens=32)
    trace = engine.run("def fib(n):", settings)
    assert trace.output_token_ids == engine.baseline("def fib(n):", settings).output_token_ids
    assert any(r.n_accepted for r in trace.rounds)  # the early exit agrees with the target sometimes


def test_the_engine_drafts_with_the_targets_first_layers(tiny_pair, tokenizer):
    from specviz.view.explanation import explanation

    draft, target = tiny_pair  # a 2-layer target: N = 1 is the only early exit
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    settings = RunSettings(k=4, temperature=0, max_new_tokens=24, drafter="layers")  # N = 0: half the layers
    trace = engine.run("def fib(n):", settings)
    assert trace.draft_model == "tiny-target, its first 1 of 2 layers" and trace.settings["draft_layers"] == 1
    assert trace.output_token_ids == engine.baseline("def fib(n):", settings).output_token_ids
    i = next(r.index for r in trace.rounds if r.k)
    assert "self-speculation" in explanation(trace, i) and "first 1 of 2 layers" in explanation(trace, i)
    assert engine.draft_for(settings)[0] is engine.draft_for(settings)[0]  # one view per N, kept
    with pytest.raises(ValueError, match="draft layers must be a whole number from 1 to 1"):
        engine.run("def fib(n):", RunSettings(drafter="layers", draft_layers=2))

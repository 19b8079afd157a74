"""The lean draft pass (lean.py) gives transformers' logits for the same model, through a run's feeds: a prompt,
single steps, two tokens after a clean sweep, rollbacks, and a cache that outgrows its first capacity. Drafts of
another shape fall back to transformers' forward."""

import copy

import pytest
import torch
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from specviz.engine.decoding import forward
from specviz.engine import Engine, RunSettings
from specviz.engine.lean import LeanCache, LeanDecoder
from specviz.models.quant import quantize_weights

SHAPE = dict(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=1024)


def model(kind: str, dtype=torch.float32, **changes):
    torch.manual_seed(7)
    config = (Qwen2Config if kind == "qwen2" else LlamaConfig)(**{**SHAPE, **changes})
    return (Qwen2ForCausalLM if kind == "qwen2" else LlamaForCausalLM)(config).eval().to(dtype)


def feeds():
    """A run's feeds into a draft cache: (tokens, how many to crop after), as the engine makes them."""
    yield list(range(3, 43)), 0  # the prompt
    for step in range(6):
        yield [10 + step], 0  # drafting, one token at a time
    yield [], 3  # a rejection: the last three drafts rolled back
    yield [50, 51], 0  # after a clean sweep: the last draft and the bonus
    for step in range(300):  # past the first capacity (256 positions)
        yield [(step * 7) % 90 + 2], 1 if step % 5 == 4 else 0


# heads of 64: q, k and v of 128, 64 and 64 rows, whole blocks of torch's int4 packing, so an int4 draft's lean pass
# joins them into one call (lean.side_by_side) as it joins gate and up in either shape
JOINED_QKV = dict(hidden_size=128, num_attention_heads=2, num_key_value_heads=1)


@pytest.mark.parametrize("kind", ["qwen2", "llama"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("weights", ["full", "int4", "int4, q/k/v joined"])
def test_the_lean_pass_gives_transformers_logits_bit_for_bit(kind, dtype, weights):
    m = model(kind, dtype, **(JOINED_QKV if "joined" in weights else {}))
    joined = "joined" in weights
    weights = weights.split(",")[0]
    if weights != "full":
        m = quantize_weights(m, weights)
    decoder = LeanDecoder(m)
    # gate/up joined in every int4 layer, q/k/v too where their rows are whole blocks of the packing
    assert decoder.joined == (0 if weights == "full" else SHAPE["num_hidden_layers"] * (2 if joined else 1))
    theirs, ours = DynamicCache(), decoder.new_cache()
    with torch.inference_mode():
        for tokens, crop in feeds():
            if tokens:
                keep = len(tokens) if len(tokens) < 3 else 1
                want, got = forward(m, tokens, theirs, keep), forward(m, tokens, ours, keep)
                assert got.shape == want.shape == (keep, SHAPE["vocab_size"]) and got.dtype == torch.float32
                assert torch.equal(got, want), (kind, dtype, weights, theirs.get_seq_length())
            if crop:
                theirs.crop(-crop)
                ours.crop(-crop)
            assert ours.get_seq_length() == theirs.get_seq_length()
    assert ours.keys.shape[3] == 512  # it grew, by doubling, and kept what it held


def test_crop_keeps_or_drops_as_dynamic_cache_does():
    cache = LeanDecoder(model("qwen2")).new_cache()
    cache.length = 10
    cache.crop(-3)
    assert cache.get_seq_length() == 7
    cache.crop(5)  # a non-negative n keeps the first n
    assert cache.get_seq_length() == 5
    cache.crop(-9)
    assert cache.get_seq_length() == 0


@pytest.mark.parametrize("changes", [dict(use_sliding_window=True, sliding_window=16, max_window_layers=0),
                                     dict(rope_parameters={"rope_type": "linear", "factor": 2.0,
                                                           "rope_theta": 10000.0}),
                                     dict(hidden_act="gelu")])
def test_other_shapes_are_left_to_transformers(changes):
    m = model("qwen2", **changes)
    assert not LeanDecoder.supports(m)
    with pytest.raises(ValueError, match="lean forward pass covers"):
        LeanDecoder(m)
    assert LeanDecoder.supports(model("qwen2")) and LeanDecoder.supports(model("llama"))


@pytest.mark.usefixtures("one_thread")  # bit for bit: one thread sums in one order (two differed by 1e-7 under load)
def test_the_engine_drafts_with_it_and_its_runs_are_unchanged(tiny_pair, tokenizer):
    """Same rounds, to the last probability, with the lean pass and with transformers' (the target is never lean)."""
    draft, target = tiny_pair
    lean, plain = Engine(draft, target, tokenizer), Engine(draft, target, tokenizer, lean_draft=False)
    for settings in (RunSettings(k=4, temperature=0, max_new_tokens=20, chat=False),
                     RunSettings(k=3, temperature=1.0, seed=5, max_new_tokens=20, chat=False, adaptive=True,
                                 stop_rule="threshold")):
        run = lean.start("def fib(n):", settings)
        assert isinstance(run.draft_cache, LeanCache) and isinstance(run.target_cache, DynamicCache)
        for _ in run:
            pass
        a, b = run.trace(), plain.run("def fib(n):", settings)
        assert a.output_token_ids == b.output_token_ids
        assert [(r.k, r.n_accepted, [d.q for d in r.drafts]) for r in a.rounds] == \
               [(r.k, r.n_accepted, [d.q for d in r.drafts]) for r in b.rounds]
    tree = lean.start("def fib(n):", RunSettings(drafter="tree", tree_widths=(2, 1), max_new_tokens=8, chat=False))
    assert isinstance(tree.draft_cache, DynamicCache)  # a tree is drafted with transformers' 4D-mask pass


def test_a_draft_it_does_not_cover_drafts_with_transformers(tiny_pair, tokenizer):
    draft, target = tiny_pair
    other = copy.deepcopy(draft)
    other.config.hidden_act = "gelu"  # not the decoder lean.py writes out
    engine = Engine(other, target, tokenizer)
    run = engine.start("def fib(n):", RunSettings(k=2, temperature=0, max_new_tokens=6, chat=False))
    assert isinstance(run.draft_cache, DynamicCache)
    assert run.trace().rounds == [] and len(list(run)) >= 2

"""The draft's memory, measured on the loaded models (models/memory.py): its own weights as stored, what it shares
with the target, its KV cache per token; recorded in the trace and shown in the summary."""

import pytest

from specviz.engine import Engine, RunSettings
from specviz.models.memory import draft_memory
from specviz.models.quant import INT8, quantize_weights
from specviz.record.load import load_trace
from specviz.view.summary import summary_html


def _bytes(model) -> int:
    return sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])


def test_a_draft_models_weights_and_cache(tiny_pair):
    draft, target = tiny_pair
    m = draft_memory(draft, target)
    c = draft.config
    assert m.weights_bytes == _bytes(draft) and m.shared_bytes == 0
    head_dim = c.hidden_size // c.num_attention_heads
    assert m.kv_bytes_per_token == 2 * c.num_hidden_layers * c.num_key_value_heads * head_dim * 4  # float32
    assert draft_memory(None, target) is None  # prompt lookup runs no draft model


def test_quantized_weights_count_at_their_stored_size(tiny_pair):
    import copy

    draft, target = tiny_pair
    int8 = quantize_weights(copy.deepcopy(draft), INT8)
    assert draft_memory(int8, target).weights_bytes < draft_memory(draft, target).weights_bytes


def test_self_speculation_shares_every_weight_and_the_trace_says_so(tiny_pair, tokenizer):
    draft, target = tiny_pair
    engine = Engine(draft, target, tokenizer)
    trace = engine.run("def fib(n):", RunSettings(drafter="layers", draft_layers=1, max_new_tokens=6))
    m = trace.draft_memory
    assert m.weights_bytes == 0 and m.shared_bytes > 0  # the target's own first layer, norm and LM head
    assert load_trace(trace.to_json()).draft_memory == m
    html = summary_html(trace)
    assert "draft&#x27;s memory" in html or "draft's memory" in html
    assert "shares with the target cost nothing more" in html
    lookup = engine.run("def fib(n):", RunSettings(drafter="lookup", max_new_tokens=6))
    assert lookup.draft_memory is None and "draft's memory" not in summary_html(lookup)


def test_a_load_asks_glibc_to_keep_large_blocks_apart_before_it_reads_a_model(monkeypatch):
    """What a load frees must go back to the system (4.0 GiB resident after loading the packaged pair by default, 2.6
    with large blocks mapped apart: models/memory.keep_large_blocks_apart): glibc agrees here, and load_pair asks
    before it resolves either model."""
    import platform

    from specviz.models import memory, pairs

    if platform.libc_ver()[0] == "glibc":
        assert memory.keep_large_blocks_apart() is True
    order = []
    monkeypatch.setattr(pairs, "keep_large_blocks_apart", lambda: order.append("asked"))

    def resolve(model_id, progress=None):
        order.append("resolve")
        raise ValueError("stop here: no model is read")
    monkeypatch.setattr(pairs, "resolve_model", resolve)
    with pytest.raises(ValueError, match="stop here"):
        pairs.load_pair()
    assert order == ["asked", "resolve"]

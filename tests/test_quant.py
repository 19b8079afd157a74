"""The int8 draft (quant.py): close to the layer it replaces, and the engine stays exact with it."""

import copy

import pytest
import torch
from torch import nn

from specviz.engine import Engine, RunSettings
from specviz.quant import Int8Linear, quantize_linears, use_int8

from conftest import tiny_model


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("bias", [True, False])
def test_int8_linear_matches_the_linear_it_replaces(dtype, bias):
    torch.manual_seed(0)
    linear = nn.Linear(96, 40, bias=bias).to(dtype)
    x = torch.randn(2, 3, 96, dtype=dtype)
    want, got = linear(x).float(), Int8Linear(linear)(x).float()
    assert got.shape == want.shape
    # int8 rounding of the weights: error well under 2 % of the output's scale (bf16 adds its own rounding)
    assert (got - want).abs().max() < 0.02 * want.abs().max()


def test_quantize_replaces_every_linear_and_keeps_the_model_close():
    model = tiny_model(seed=3)
    quantized = quantize_linears(copy.deepcopy(model))
    assert not any(type(m) is nn.Linear for m in quantized.modules())
    ids = torch.tensor([[5, 9, 12, 7, 30]])
    with torch.inference_mode():
        p, q = model(ids).logits.softmax(-1), quantized(ids).logits.softmax(-1)
    assert torch.minimum(p, q).sum(-1).min() > 0.9  # the two distributions overlap almost entirely


def test_engine_with_an_int8_draft_still_gives_the_target_greedy_output(tiny_pair, tokenizer):
    draft, target = tiny_pair
    engine = Engine(quantize_linears(copy.deepcopy(draft)), target, tokenizer)
    settings = RunSettings(k=4, temperature=0.0, max_new_tokens=24, chat=False)
    trace = engine.run("def fib(n):", settings, baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids


def test_draft_weights_setting():
    assert not use_int8("auto", "cuda") and use_int8("int8", "cpu")
    assert not use_int8("full", "cpu")
    with pytest.raises(ValueError, match="draft weights"):
        use_int8("int4", "cpu")


def test_auto_takes_int8_only_where_this_cpus_kernel_is_faster(monkeypatch):
    from specviz import quant

    for full, packed, expected in ((1.0, 0.5, True), (1.0, 2.8, False), (1.0, 0.95, False)):
        monkeypatch.setattr(quant, "_PAYS", {})
        monkeypatch.setattr(quant, "_time", lambda layer, x, f=full, p=packed: p if isinstance(layer, Int8Linear) else f)
        assert quant.use_int8("auto", "cpu") is expected
    monkeypatch.setattr(quant, "_PAYS", {})
    measured = quant.int8_pays(torch.float32, shape=(64, 128))  # the real measurement runs, on a small layer
    assert isinstance(measured, bool) and quant._PAYS == {torch.float32: measured}

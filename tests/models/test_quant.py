"""The int8 and int4 drafts (quant.py): close to the layer they replace, the engine stays exact with them, and
`auto` takes the kind this CPU runs fastest."""

import copy

import pytest
import torch
from torch import nn

from specviz.engine import Engine, RunSettings
from specviz.models.layers import Int4Groups, Int4Linear, Int4RescoredHead, Int8Embedding, Int8Linear, largest
from specviz.models.quant import INT4, INT8, pick_weights, quantize_weights

from harness.tiny_models import tiny_model


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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("bias", [True, False])
def test_int4_linear_matches_its_own_groups_and_stays_close_to_the_linear(dtype, bias):
    torch.manual_seed(0)
    linear = nn.Linear(96, 48, bias=bias).to(dtype)
    packed = Int4Linear(linear)
    x = torch.randn(2, 3, 96, dtype=dtype)
    # the kernel computes exactly with the dequantized weights: each group of 32 is code * step + its minimum
    w = linear.weight.detach().float().reshape(48, 3, 32)
    low, step = w.amin(-1, keepdim=True), (w.amax(-1, keepdim=True) - w.amin(-1, keepdim=True)) / 15
    dequantized = (((w - low) / step).round() * step + low).reshape(48, 96)
    want = x.float() @ dequantized.T + (linear.bias.float() if bias else 0)
    got = packed(x).float()
    assert got.shape == (2, 3, 48)
    assert (got - want).abs().max() < (1e-4 if dtype == torch.float32 else 0.01) * want.abs().max()
    # and 4-bit rounding moves the output by a few per cent of its scale at most
    assert (got - linear(x).float()).abs().max() < 0.1 * want.abs().max()


@pytest.mark.parametrize("bias", [True, False])
def test_rescored_head_reads_its_largest_logits_at_8_bits_and_the_rest_at_4(bias):
    torch.manual_seed(0)
    linear = nn.Linear(64, 160, bias=bias).to(torch.bfloat16)
    head = Int4RescoredHead(linear)
    x = torch.randn(3, 2, 64, dtype=torch.bfloat16)
    got, coarse, fine = head(x).float(), head.coarse(x).float(), Int8Linear(linear)(x).float()
    assert got.shape == (3, 2, 160)
    top = coarse.topk(Int4RescoredHead.TOP, dim=-1).indices
    again = torch.zeros_like(got, dtype=torch.bool).scatter(-1, top, True)
    assert torch.equal(got[~again], coarse[~again])  # the rest: the 4-bit logits themselves
    # the largest: int8's (bmm and the fused int8 kernel round the bfloat16 sums apiece)
    assert (got[again] - fine[again]).abs().max() < 0.01 * fine.abs().max()
    assert (coarse[again] - fine[again]).abs().max() > (got[again] - fine[again]).abs().max()  # 4 bits were further
    assert head(x[0, :1]).argmax(-1).item() == fine[0, :1].argmax(-1).item()


@pytest.mark.parametrize("width", [20_000, 20_000 + 77])  # whole chunks, and a part chunk at the end
def test_largest_finds_the_k_largest_logits_as_topk_does_up_to_ties(width):
    torch.manual_seed(0)
    rows = (torch.randn(3, width) * 2).to(torch.bfloat16)  # bfloat16: many logits tie, as a real row's do
    rows[1, -5:] = 50  # the largest in the part chunk
    got = largest(rows, 64)
    assert got.shape == (3, 64) and all(len(set(r.tolist())) == 64 for r in got)
    want = rows.topk(64, dim=-1).values.float().sort(-1).values
    assert torch.equal(rows.gather(1, got).float().sort(-1).values, want)  # the same 64 values, ties and all
    assert {width - 5 + i for i in range(5)} <= set(got[1].tolist())
    few = rows[:, :100]  # fewer logits than 64 chunks hold: torch's own topk
    assert torch.equal(largest(few, 8, ordered=True), few.topk(8, dim=-1).indices)
    probs = torch.softmax(rows.float(), -1)[0]  # a row alone, largest first: the cards' candidates
    first = largest(probs, 10, ordered=True)
    assert first.shape == (10,) and torch.equal(probs[first], probs.topk(10).values)


@pytest.mark.parametrize("weights", [INT4, INT8])
def test_a_drafts_head_shares_the_embeddings_int8_rows_where_their_table_is_one(weights):
    tied = tiny_model(seed=3, vocab=96)
    tied.lm_head.weight = tied.get_input_embeddings().weight  # one table, as Qwen2.5's small models keep it
    x = torch.randn(1, tied.config.hidden_size)
    own = Int8Linear(tied.lm_head)(x) if weights == INT8 else None  # the head with rows of its own, to compare
    tied = quantize_weights(tied, weights)
    assert tied.lm_head.weight_int8.data_ptr() == tied.get_input_embeddings().weight_int8.data_ptr()
    if own is not None:  # the same rows: the same logits
        assert torch.equal(tied.lm_head(x), own)
    untied = quantize_weights(tiny_model(seed=3, vocab=96), weights)  # two tables: the head keeps rows of its own
    assert untied.lm_head.weight_int8.data_ptr() != untied.get_input_embeddings().weight_int8.data_ptr()
    small = Int4RescoredHead(nn.Linear(32, 16).to(torch.bfloat16))  # fewer outputs than TOP: every one read again
    assert small(torch.randn(1, 32, dtype=torch.bfloat16)).shape == (1, 16)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_int8_embedding_gives_each_row_within_half_a_step_in_half_the_bytes(dtype):
    torch.manual_seed(0)
    embedding = nn.Embedding(300, 64).to(dtype)
    packed = Int8Embedding(embedding)
    ids = torch.tensor([[3, 299, 0], [7, 7, 150]])
    want, got = embedding(ids).float(), packed(ids)
    assert got.dtype == dtype and got.shape == (2, 3, 64)
    step = embedding.weight.detach().float().abs().amax(1)[ids].unsqueeze(-1) / 127  # each row's own step
    # bfloat16 rounds the scale and the product, each by at most 2^-8 of the value
    rounding = 1e-6 * want.abs() if dtype == torch.float32 else 2 ** -7 * (want.abs() + step)
    assert ((got.float() - want).abs() <= step / 2 + rounding + 1e-7).all()
    assert ((got.float() - want).abs() > 0).any()  # it did round: not the table itself
    table = embedding.weight.numel() * embedding.weight.element_size()
    kept = sum(b.numel() * b.element_size() for b in packed.buffers())
    assert kept == table // embedding.weight.element_size() + 300 * embedding.weight.element_size()  # a byte a value


@pytest.mark.parametrize("bias", [True, False])
def test_int4_layers_joined_give_their_parts_outputs_to_the_bit(bias):
    torch.manual_seed(0)
    parts = [Int4Linear(nn.Linear(96, rows, bias=bias).to(torch.bfloat16)) for rows in (128, 64, 64)]
    joined = Int4Groups.joined(parts)
    assert joined.out_features == 256 and joined.in_features == 96
    for rows in (1, 2, 5, 41):  # a draft step, after a clean sweep, a verify-sized pass, a prompt
        x = torch.randn(rows, 96, dtype=torch.bfloat16)
        assert torch.equal(joined(x), torch.cat([part(x) for part in parts], -1))


def test_int4_layers_join_only_whole_blocks_of_the_packing_of_one_input():
    torch.manual_seed(0)
    layer = lambda inputs, rows: Int4Linear(nn.Linear(inputs, rows).to(torch.bfloat16))
    # 96 + 32 rows is 128, but torch's packing interleaves rows in blocks of 64: a 32-row part would come out wrong
    assert Int4Groups.joined([layer(64, 96), layer(64, 32)]) is None
    assert Int4Groups.joined([layer(64, 64), layer(96, 64)]) is None  # another input
    assert Int4Groups.joined([layer(64, 64), Int8Linear(nn.Linear(64, 64))]) is None  # not a 4-bit layer
    assert Int4Groups.joined([layer(64, 64), layer(64, 128)]) is not None


def test_int4_takes_only_the_shapes_its_kernel_can():
    assert Int4Linear.fits(nn.Linear(64, 32)) and not Int4Linear.fits(nn.Linear(48, 32))  # whole groups of 32 inputs
    assert not Int4Linear.fits(nn.Linear(64, 40))  # outputs in multiples of 16
    model = quantize_weights(nn.Sequential(nn.Linear(64, 32), nn.Linear(32, 40)), INT4)
    assert [type(m) for m in model] == [Int4Linear, Int8Linear]  # the other layer gets int8, not left full


@pytest.mark.parametrize("weights, kind", [(INT8, Int8Linear), (INT4, Int4Linear)])
def test_quantize_replaces_every_linear_and_keeps_the_model_close(weights, kind):
    model = tiny_model(seed=3)
    quantized = quantize_weights(copy.deepcopy(model), weights)
    assert not any(type(m) in (nn.Linear, nn.Embedding) for m in quantized.modules())
    assert type(quantized.get_input_embeddings()) is Int8Embedding
    assert all(type(m) is kind for m in quantized.model.layers.modules() if isinstance(m, (Int8Linear, Int4Linear)))
    # an LM head int4's kernel can take (96 outputs): int8 on the int8 draft, 4 bits read again at 8 on int4
    head = quantize_weights(tiny_model(seed=3, vocab=96), weights).lm_head
    assert type(head) is (Int8Linear if weights == INT8 else Int4RescoredHead)
    ids = torch.tensor([[5, 9, 12, 7, 30]])
    with torch.inference_mode():
        p, q = model(ids).logits.softmax(-1), quantized(ids).logits.softmax(-1)
    overlap = torch.minimum(p, q).sum(-1)  # per position: 1 where the two distributions are the same
    if weights == INT8:
        assert overlap.min() > 0.9
    else:  # 4 bits move a random-weight model's sharp distributions more (the real draft: 0.89, docs/engine.md)
        assert overlap.mean() > 0.8


@pytest.mark.parametrize("weights", [INT8, INT4])
def test_engine_with_a_quantized_draft_still_gives_the_target_greedy_output(tiny_pair, tokenizer, weights):
    draft, target = tiny_pair
    engine = Engine(quantize_weights(copy.deepcopy(draft), weights), target, tokenizer)
    settings = RunSettings(k=4, temperature=0.0, max_new_tokens=24, chat=False)
    trace = engine.run("def fib(n):", settings, baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids


def test_draft_weights_setting():
    assert pick_weights("auto", "cuda") == "full" and pick_weights("int8", "cpu") == INT8
    assert pick_weights("int4", "cpu") == INT4 and pick_weights("full", "cpu") == "full"
    with pytest.raises(ValueError, match="draft weights must be one of auto, int4, int8, full"):
        pick_weights("int2", "cpu")
    with pytest.raises(ValueError, match="quantize to int8 or int4"):
        quantize_weights(tiny_model(seed=0), "full")


def test_auto_takes_the_kind_this_cpu_runs_fastest(monkeypatch):
    """The choice weighs a typical run: 48 one-row steps and one 32-row prompt per kind (faked timings here)."""
    from specviz.models import quant

    def fake(times):  # kind -> (seconds for one row, for 32 rows)
        def timer(stack, x, repeats=5):
            kind = {Int8Linear: INT8, Int4Linear: INT4}.get(type(stack[0]), "full")
            return times[kind][0 if x.shape[0] == 1 else 1]
        return timer

    for times, expected in (
            ({"full": (1.0, 2.0), INT8: (0.4, 5.0), INT4: (0.25, 6.0)}, INT4),  # int4 wins the steps by enough
            ({"full": (1.0, 2.0), INT8: (0.4, 5.0), INT4: (0.39, 30.0)}, INT8),  # int4's prompt costs too much
            ({"full": (1.0, 2.0), INT8: (3.0, None), INT4: (4.0, None)}, "full")):  # an AVX2-only CPU: both slower
        # (None: a kind no faster at one row is not timed on 32 rows, which could take seconds there)
        monkeypatch.setattr(quant, "_FASTEST", {})
        monkeypatch.setattr(quant, "stack_time", fake(times))
        assert quant.pick_weights("auto", "cpu") == expected
    monkeypatch.undo()
    monkeypatch.setattr(quant, "_FASTEST", {})
    measured = quant.fastest_weights(torch.float32, shape=(64, 128), layers=2)  # the real measurement, small layers
    assert measured in ("full", INT8, INT4) and quant._FASTEST == {(torch.float32, "float32"): measured}

"""The gguf-ort path (kernels.py, ort_blocks.py, ort_linear.py): a GGUF file's Q4_K and Q6_K blocks repacked to exactly
the weights the file defines, computed by onnxruntime's MatMulNBits with rows independent of their batch-mates, a
group's fused call equal to its layers called alone, the kept file mapped to the same numbers (tiny models with blocks
of their own; every drafter's greedy output equal to the target alone's on it: test_gguf_greedy.py); and that auto
never takes it."""

import copy
import json

import numpy as np
import pytest
import torch

from harness.tiny_models import gguf_ort_weights, on_gguf_ort, q6k_rounded, tiny_model
from specviz.models import kernel_choice, kernels
from specviz.models.gguf_blocks import Q4K_BYTES, decode_q4k
from specviz.models.kernel_choice import check_rows
from specviz.models.kernel_choice import auto_paths, choose_path
from specviz.models.kernels import GGUF_ORT, KERNELS, Fp16Linear, apply_path, path_of
from specviz.models.ort_blocks import (Q6K_BYTES, blocks_of, groups_of, nbits_of, part_of, parts_of, read_blocks, UntakeableBlocks,
                                       write_blocks)
from specviz.models.layers import Int4Embedding
from specviz.models.ort_linear import OrtGroup, OrtLinear, layers_of

pytestmark = [pytest.mark.usefixtures("one_thread"),
              pytest.mark.skipif(kernels.available(GGUF_ORT) is not None, reason=str(kernels.available(GGUF_ORT)))]
BYTES = {"Q4_K": Q4K_BYTES, "Q6_K": Q6K_BYTES}


def _blocks(kind: str, rows: int, cols: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random blocks of `kind` (rows, cols/256 super-blocks), and the weights gguf's own reference decoder makes of
    them. The float16 scales are set small and finite (random bytes could be inf or nan)."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(rows, cols // 256 * BYTES[kind]), dtype=np.uint8)
    blocks = raw.reshape(-1, BYTES[kind])
    where = slice(0, 4) if kind == "Q4_K" else slice(208, 210)  # Q4_K's d and dmin; Q6_K's d
    halves = blocks[:, where].copy().view(np.float16)
    halves[:] = rng.uniform(1e-4, 1e-2, size=halves.shape).astype(np.float16) / (1 if kind == "Q4_K" else 30)
    blocks[:, where] = halves.view(np.uint8)
    return raw, dequantize(raw, getattr(GGMLQuantizationType, kind)).reshape(rows, cols)


@pytest.mark.parametrize("kind", ["Q4_K", "Q6_K"])
def test_blocks_give_the_weights_the_file_defines(kind):
    raw, want = _blocks(kind, 32, 512)
    weight = nbits_of("blk.0.ffn_up.weight", kind, raw, 32, 512)
    assert weight.kind.name == kind and int(weight.codes.max()) <= (15 if kind == "Q4_K" else 63)
    assert np.array_equal(weight.weights(), want)  # bit for bit
    with np.errstate(invalid="ignore", over="ignore"):  # bytes out of order: other weights (a scale may be inf)
        wrong = nbits_of("blk.0.ffn_up.weight", kind, raw[:, ::-1].copy(), 32, 512).weights()
    assert not np.array_equal(wrong, want)


@pytest.mark.parametrize("kind", ["Q4_K", "Q6_K"])
def test_the_session_computes_the_files_weights(kind):
    raw, want = _blocks(kind, 48, 512, seed=1)
    part = part_of([("layer", nbits_of("layer", kind, raw, 48, 512))])
    x = torch.randn(5, 512)
    exact = (x.double() @ torch.from_numpy(want).double().T).float()
    in_float = OrtGroup([part], [None], accuracy=1).run(x)[0]  # float32 inputs: the layout alone is tested
    assert (in_float - exact).abs().max() < 1e-5 * exact.abs().max()
    in_int8 = OrtGroup([part], [None]).run(x)[0]  # the path's own: inputs rounded to int8 per block
    assert (in_int8 - exact).abs().max() < 0.02 * exact.abs().max()


def _qkv(seed: int = 0) -> list[tuple[str, object]]:
    """A block's q and k as Q4_K and its v as Q6_K, from random file bytes (as half the packaged target's layers)."""
    names = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")
    rows = (64, 32, 32)
    kinds = ("Q4_K", "Q4_K", "Q6_K")
    return [(f"model.layers.0.{n}", nbits_of(n, kind, _blocks(kind, r, 256, seed + i)[0], r, 256))
            for i, (n, r, kind) in enumerate(zip(names, rows, kinds))]


def test_rows_computed_together_equal_rows_alone():
    parts = parts_of(_qkv())
    biases = [np.linspace(-1, 1, sum(p.outs)).astype(np.float32) for p in parts]
    group = OrtGroup(parts, biases)
    x = torch.randn(8, 256, generator=torch.Generator().manual_seed(3))
    for rows in (1, 4, 5, 8):
        together = group.run(x[:rows])
        alone = [group.run(x[i:i + 1]) for i in range(rows)]
        for j, out in enumerate(together):
            assert torch.equal(out, torch.cat([a[j] for a in alone])), (rows, j)  # bit for bit


def test_a_fused_call_equals_its_layers_alone():
    qkv = _qkv(seed=5)
    fused = OrtGroup(parts_of(qkv), [None, None])
    assert len(fused.widths) == 2  # q and k in one Q4_K node, v in a Q6_K node: one session, one run
    alone = {name: OrtGroup([part_of([(name, w)])], [None]) for name, w in qkv}
    x = torch.randn(2, 3, 256)
    layers = {name: OrtLinear(fused, name) for name, _ in qkv}
    for name in ("model.layers.0.self_attn.v_proj", "model.layers.0.self_attn.q_proj",
                 "model.layers.0.self_attn.k_proj"):  # any order: the first to ask runs the group
        got = layers[name](x)
        assert got.shape == (2, 3, alone[name].widths[0])
        assert torch.equal(got, alone[name].run(x.reshape(-1, 256))[0].reshape(got.shape))
    assert fused._input is None  # every member served: the input is not held


def test_groups_fuse_a_blocks_layers_that_read_one_input():
    names = ["model.layers.1.self_attn.k_proj", "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.v_proj",
             "model.layers.1.mlp.up_proj", "model.layers.1.mlp.gate_proj", "model.layers.1.mlp.down_proj",
             "model.layers.2.mlp.up_proj", "lm_head"]
    assert groups_of(names) == [
        ("model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.k_proj", "model.layers.1.self_attn.v_proj"),
        ("model.layers.1.mlp.gate_proj", "model.layers.1.mlp.up_proj"), ("model.layers.1.mlp.down_proj",),
        ("model.layers.2.mlp.up_proj",), ("lm_head",)]  # layer 2's gate is missing: its up runs alone


def _gguf(path, tensors: dict[str, tuple[str, int, int]]) -> dict[str, np.ndarray]:
    """A GGUF file of random blocks, {name: (type, rows, cols)}; the weights each tensor defines."""
    from gguf import GGMLQuantizationType, GGUFWriter

    writer, want = GGUFWriter(str(path), "qwen2"), {}
    for i, (name, (kind, rows, cols)) in enumerate(tensors.items()):
        raw, want[name] = _blocks(kind, rows, cols, seed=10 + i) if kind in BYTES else (
            np.random.default_rng(i).integers(0, 256, (rows, cols // 32 * 34), dtype=np.uint8), None)
        writer.add_tensor(name, raw, raw_dtype=getattr(GGMLQuantizationType, kind))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return want


def test_the_kept_file_holds_the_same_blocks_and_onnxruntime_maps_them(tmp_path):
    want = _gguf(tmp_path / "model.gguf", {
        "token_embd.weight": ("Q4_K", 16, 256), "blk.0.attn_q.weight": ("Q4_K", 64, 256),
        "blk.0.attn_k.weight": ("Q4_K", 32, 256), "blk.0.attn_v.weight": ("Q6_K", 32, 256),
        "blk.0.ffn_down.weight": ("Q6_K", 256, 512), "output.weight": ("Q6_K", 48, 256)})
    write_blocks(tmp_path / "model.gguf", tmp_path / "blocks")
    kept = read_blocks(tmp_path / "blocks")
    assert [[p.members for p in parts] for parts in kept.groups] == [
        [("model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj"), ("model.layers.0.self_attn.v_proj",)],
        [("model.layers.0.mlp.down_proj",)], [("lm_head",)]]
    assert torch.equal(kept.embedding.weights(), torch.from_numpy(want["token_embd.weight"]))
    x = torch.randn(3, 256)
    for parts in kept.groups[::2]:  # q, k, v and the output layer: mapped from the file against built in memory
        in_memory = [part_of([(m, nbits_of(m, p.kind.name, *_raw(tmp_path, m))) for m in p.members]) for p in parts]
        for mapped, built in zip(parts, in_memory):
            assert all(np.array_equal(mapped.array(t), built.array(t)) for t in built.tensors)
        got, expected = OrtGroup(parts, [None] * len(parts)).run(x), OrtGroup(in_memory, [None] * len(parts)).run(x)
        assert all(torch.equal(a, b) for a, b in zip(got, expected))


def _raw(folder, module: str):
    """The raw bytes, rows and columns of a module's tensor in the test's GGUF file."""
    from gguf import GGUFReader

    from specviz.models.ort_blocks import module_name

    tensor = next(t for t in GGUFReader(folder / "model.gguf").tensors if module_name(t.name) == module)
    return tensor.data, int(tensor.shape[1]), int(tensor.shape[0])


def test_a_block_type_the_path_cannot_take_is_refused(tmp_path):
    with pytest.raises(ValueError, match="blk.0.ffn_up.weight is stored as Q5_K: the gguf-ort path takes Q4_K and "
                                         "Q6_K blocks only"):
        nbits_of("blk.0.ffn_up.weight", "Q5_K", np.zeros((4, 176), np.uint8), 4, 256)
    _gguf(tmp_path / "model.gguf", {"blk.0.ffn_up.weight": ("Q4_K", 32, 256),
                                    "blk.0.ffn_gate.weight": ("Q8_0", 32, 256)})
    with pytest.raises(UntakeableBlocks, match=r"this file stores blk.0.ffn_gate.weight \(Q8_0\)"):
        write_blocks(tmp_path / "model.gguf", tmp_path / "blocks")
    assert not (tmp_path / "blocks").exists()
    _gguf(tmp_path / "other.gguf", {"token_embd.weight": ("Q8_0", 16, 256), "blk.0.ffn_up.weight": ("Q4_K", 32, 256)})
    write_blocks(tmp_path / "other.gguf", tmp_path / "blocks")  # an embedding of another type: read elsewhere
    kept = read_blocks(tmp_path / "blocks")
    assert kept.embedding is None and kept.modules() == {"model.layers.0.mlp.up_proj"}


def test_the_path_puts_layers_with_blocks_on_onnxruntime_and_the_rest_on_float16():
    target = tiny_model(0)
    fast = on_gguf_ort(target)
    assert path_of(fast) == GGUF_ORT and isinstance(fast.lm_head, OrtLinear)
    attention = fast.model.layers[0].self_attn
    assert attention.q_proj.group is attention.v_proj.group and len(attention.q_proj.group.widths) == 2
    assert isinstance(fast.get_input_embeddings(), Int4Embedding)
    assert check_rows(fast).exact
    said = KERNELS[GGUF_ORT].file.layers_said(fast)
    assert said.startswith("15 linear layers computed from the GGUF file's Q4_K and Q6_K blocks by onnxruntime's "
                           "MatMulNBits in 9 calls a step")
    reference = _with_weights(target, *gguf_ort_weights(target))  # float32, the blocks' own weights
    ids = torch.arange(1, 20)[None]
    with torch.inference_mode():
        expected, got = reference(input_ids=ids).logits, fast(input_ids=ids).logits
    assert (got - expected).abs().max() < 0.03 * expected.abs().max()  # the int8 inputs' rounding only
    plain = apply_path(copy.deepcopy(target), GGUF_ORT)  # no blocks (a draft, a hub model): float16 throughout
    assert isinstance(plain.lm_head, Fp16Linear) and path_of(plain) == kernels.FP16_FBGEMM


def _with_weights(model, weights: dict, embedding):
    """A float32 copy of the model computing with exactly these weights."""
    model = copy.deepcopy(model)
    modules = dict(model.named_modules())
    with torch.no_grad():
        for name, weight in weights.items():
            modules[name].weight.copy_(torch.from_numpy(weight.weights()))
        model.get_input_embeddings().weight.copy_(embedding.weights())
    return model


def test_a_file_the_path_cannot_take_keeps_the_path_auto_takes_and_says_why(monkeypatch):
    """Issue 62: a GGUF whose blocks gguf-ort cannot take keeps today's path (auto's), and the reason the page's model
    line and the CLI print says what was asked, why it could not run, and what runs instead."""
    from specviz.models import pairs

    refusal = "the gguf-ort path takes Q4_K and Q6_K blocks only; this file stores blk.0.ffn_gate.weight (Q8_0)"

    def read(model_id, choice, progress=None):
        if choice.path == GGUF_ORT:
            raise UntakeableBlocks(refusal)
        return {"blocks of": choice.path}

    auto = kernel_choice.Choice("gguf-int4", "float32", "the fastest exact path measured here")
    monkeypatch.setattr(pairs, "blocks_for", read)
    monkeypatch.setattr(pairs, "choose_kernels", lambda path, device, dtype, kernels, gguf=False: auto)
    asked = kernel_choice.Choice(GGUF_ORT, "float32", "asked for by name")
    choice, blocks = pairs.blocks_or_fallback("packaged:x", "folder", asked, "cpu", None)
    assert choice.path == "gguf-int4" and blocks == {"blocks of": "gguf-int4"}
    assert choice.why == (f"--kernels gguf-ort was asked, but {refusal}; so the pair runs on gguf-int4, the path auto "
                          f"takes: the fastest exact path measured here")
    kept = kernel_choice.Choice("gguf-int4", "float32", "auto")
    assert pairs.blocks_or_fallback("packaged:x", "folder", kept, "cpu", None) == (kept, {"blocks of": "gguf-int4"})


def test_blocks_of_another_model_are_refused():
    wrong = blocks_of({"model.layers.0.mlp.up_proj": q6k_rounded(torch.randn(32, 64))})
    with pytest.raises(ValueError, match="they are not this model's"):
        apply_path(copy.deepcopy(tiny_model(0)), GGUF_ORT, blocks=layers_of(wrong))


# --- opt-in only ----------------------------------------------------------------------------------------------------

def test_auto_never_chooses_gguf_ort(tmp_path, monkeypatch):
    """Even where it would time fastest, auto neither measures nor takes gguf-ort (KernelPath.why_not_auto), nor
    trusts a remembered choice of it; asked for by name, it runs and says why auto would not take it."""
    assert not KERNELS[GGUF_ORT].auto and GGUF_ORT not in auto_paths(gguf=True)
    timed = []

    def fastest_is_ort(hidden, inner, paths):
        timed.extend(paths)
        return [kernel_choice.Timing(p, 1e-6 if p == GGUF_ORT else 1.0, 2.0) for p in paths]  # gguf-ort fastest

    monkeypatch.setattr(kernel_choice, "time_paths", fastest_is_ort)
    choice = choose_path(64, 128, "cpu", None, "auto", tmp_path, gguf=True)
    assert choice.path != GGUF_ORT and timed and GGUF_ORT not in timed
    key = kernel_choice.machine_key(64, 128, gguf=True)
    (tmp_path / kernel_choice.CACHE_FILE).write_text(json.dumps({key: {"path": GGUF_ORT, "why": "remembered"}}))
    assert choose_path(64, 128, "cpu", None, "auto", tmp_path, gguf=True).path != GGUF_ORT
    asked = choose_path(64, 128, "cpu", None, GGUF_ORT, gguf=True)
    assert asked.path == GGUF_ORT and KERNELS[GGUF_ORT].why_not_auto in asked.why
    with pytest.raises(ValueError, match="--kernels gguf-ort computes from a GGUF file's blocks, and this target"):
        choose_path(64, 128, "cpu", None, GGUF_ORT, gguf=False)

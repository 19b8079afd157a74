"""models/kernels.py and models/kernel_choice.py: the CPU paths, which are exact (a row's output does not depend on
the rows computed with it), the one chosen by measurement and remembered, the refusals that name what this machine
offers, and every drafter's greedy identity against the target alone on the fast path (tiny models; the packaged
pair: tests/engine/test_real_pair.py)."""

import copy
import json
import subprocess
import sys
import warnings

import pytest
import torch

from harness.tiny_models import char_tokenizer, noisy_copy, tiny_model
from specviz.drafters import REGISTRY
from specviz.engine import Engine, RunSettings
from specviz.models import kernel_choice, kernels, layers
from specviz.models.fingerprint import fingerprint
from specviz.models.kernel_choice import ROW_COUNTS, ROW_TOLERANCE, Choice, check_rows, choose_path
from specviz.models.kernels import (BFLOAT16, FLOAT32, FP16_FBGEMM, GGUF_INT4, GGUF_ORT, INT8_DYNAMIC, PATHS,
                                    apply_path)
from specviz.models.layers import Fp16Linear
from specviz.settings.bounds import MAX_BATCH, MAX_K, MAX_TREE_NODES
from specviz.models.memory import draft_memory
from tests.helpers import ROOT

pytestmark = pytest.mark.usefixtures("one_thread")
FAST = pytest.mark.skipif(kernels.available(FP16_FBGEMM) is not None, reason="no fbgemm in this torch build")


@pytest.mark.parametrize("path", PATHS)
def test_a_path_is_offered_exactly_where_its_rows_measure_independent_here(path):
    """On the packaged target's MLP shapes (1536 × 8960 and back, random weights), every pass size a run makes: rows
    together against one at a time, measured on this CPU. float32 differs by rounding (its small-matrix kernel sums
    in another order), float16-fbgemm not at all, int8-dynamic scales a row by its batch-mates (the negative control:
    the measurement must catch it); bfloat16 measures either way by CPU, and the choice follows the measurement."""
    if kernels.available(path) is not None:
        pytest.skip(kernels.available(path))
    rows = kernel_choice.rows_here(path)
    assert rows.rows in ROW_COUNTS and rows.exact == (rows.difference <= ROW_TOLERANCE)
    if path in (FLOAT32, FP16_FBGEMM):
        assert rows.exact, rows
    if path == INT8_DYNAMIC:
        assert not rows.exact and rows.difference > 1e-3, rows
    gguf = kernels.KERNELS[path].file is not None  # offered only to a model with a GGUF file's blocks
    if rows.exact:
        assert choose_path(1536, 8960, "cpu", None, path, gguf=gguf).path == path
        assert path in kernel_choice.offered_here(gguf=gguf).split(" (")[0].split(", ")
    else:
        with pytest.raises(ValueError, match=f"--kernels {path} is not exact on this machine, so specviz refuses it: "
                                             f"{rows.rows} rows computed together differ"):
            choose_path(1536, 8960, "cpu", None, path, gguf=gguf)
        assert f"{path}, {rows.rows} rows differ by {rows.difference:.1e}" in kernel_choice.offered_here(gguf=gguf)


def test_a_path_is_one_row_of_the_table_that_the_loader_and_the_choice_read():
    """Each row says what its path computes in, loads in, reads of a GGUF file, and gives the stand-in layer whose rows
    are checked and whose stack is timed: a layer of the shape asked, taking the path's activations."""
    assert PATHS == tuple(row.name for row in kernels.TABLE) and len(set(PATHS)) == len(PATHS)
    assert kernels.PACKS_FP16 == (FP16_FBGEMM, GGUF_INT4, GGUF_ORT)  # all store the layers without blocks for
    #                                                                     fbgemm
    for row in kernels.TABLE:
        assert Choice(row.name, row.activations, "").load_dtype == ("float16" if row.packs_fp16 else row.activations)
        assert (row.name in kernel_choice.paths_for(gguf=False)) == (row.file is None)
        assert row.name in kernel_choice.paths_for(gguf=True)
        if row.lacking() is None:
            layer = row.layer(torch.nn.Linear(64, 32, bias=False))
            with torch.inference_mode():
                assert layer(torch.randn(3, 64).to(row.inputs)).shape == (3, 32) and layer.out_features == 32


def test_every_path_says_its_weights_type():
    """The model line's words for the weights (issue 64, item 10), one per row; a name the table lacks says nothing."""
    said = {path: kernels.weights_said(path) for path in PATHS}
    assert all(said.values()) and len(set(said.values())) == len(PATHS), said
    assert said[FP16_FBGEMM] == "float16" and said[GGUF_INT4].startswith("4-bit") and kernels.weights_said("x") == ""


def test_a_path_whose_need_is_not_met_here_says_which(monkeypatch):
    monkeypatch.setattr(kernels, "native_bf16", lambda: False)
    for path in (BFLOAT16, GGUF_INT4):
        assert "this CPU has no native bfloat16 (no avx512_bf16 or AMX)" in kernels.available(path)
        assert path not in kernel_choice.offered_here("cpu", 64, 128, gguf=True)
    assert kernels.available(FLOAT32) is None and kernels.available(FP16_FBGEMM, "cuda").endswith(
        "is a CPU path; on cuda the dtype alone chooses the kernels")


def test_every_path_computes_without_a_warning_in_a_fresh_process():
    """A first start measures every path's rows (kernel_choice.rows_here), and int8-dynamic's layer, built on
    `torch.ao`'s quantized tensors, printed torch's "quantize_per_tensor … deprecated" (issue 64, item 17). torch warns
    of it once a process, so the layers are built and run in a process of their own, every warning an error."""
    script = ("import torch\nfrom specviz.models import kernel_choice, kernels\n"
              "for row in kernels.TABLE:\n"
              "    if row.lacking() is None:\n"
              "        layer = kernel_choice.stack_of(row.name, 64, 128, layers=1)[0]\n"
              "        with torch.inference_mode():\n"
              "            layer(torch.randn(3, 64).to(row.inputs))\n")
    done = subprocess.run([sys.executable, "-W", "error", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]


def test_int8_dynamic_computes_what_fbgemms_dynamic_linear_did():
    """Int8DynamicLinear, plain tensor ops now, against the `torch.ao` layer it replaces (while torch still has it):
    the same codes and scales, outputs alike up to the last float rounding, on both MLP shapes and a full batch."""
    dynamic = pytest.importorskip("torch.ao.nn.quantized.dynamic")
    for rows, inputs, outputs in ((1, 64, 32), (5, 1536, 8960), (MAX_BATCH * (MAX_K + 1), 8960, 1536)):
        linear = torch.nn.Linear(inputs, outputs)
        with torch.no_grad():
            linear.weight.copy_(torch.randn(outputs, inputs, generator=torch.Generator().manual_seed(rows)) /
                                inputs ** 0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its deprecation: what the new layer is for
            old = dynamic.Linear(inputs, outputs, dtype=torch.qint8)
            old.set_weight_bias(torch.quantize_per_tensor_dynamic(linear.weight.detach(), torch.qint8, False),
                                linear.bias.detach())
            quantized = old.weight()
        new = layers.Int8DynamicLinear(linear)
        assert torch.equal(new.weight_int8.to(torch.int32), quantized.int_repr().to(torch.int32))
        assert (float(new.weight_scale), new.weight_zero) == (quantized.q_scale(), quantized.q_zero_point())
        x = torch.randn(rows, inputs)
        with torch.inference_mode():
            expected, got = old(x), new(x)
        assert float((got - expected).abs().max() / expected.abs().max()) < 1e-6


class _RowsAlikeUpTo(torch.nn.Module):
    """A linear layer whose rows stay independent in passes up to `most` rows and not past it (a kernel switched by
    size, as oneDNN's bfloat16 one is on an AMX Xeon: alike at 17 rows, not at 33)."""

    def __init__(self, most: int):
        super().__init__()
        self.inner, self.most = torch.nn.Linear(64, 128, bias=False), most
        self.out_features = 128

    def forward(self, x):
        y = self.inner(x)
        return y + 1e-3 * y.mean(0, keepdim=True) if len(x) > self.most else y


def test_the_row_test_covers_every_pass_size_a_run_makes():
    """A path alike at the default verify pass but not at a full tree's or a full batch's is not exact: the test runs
    every size."""
    assert {MAX_K + 1, MAX_TREE_NODES + 1, MAX_BATCH * (MAX_K + 1)} <= set(ROW_COUNTS)
    alike = kernel_choice.row_test(FLOAT32, [(_RowsAlikeUpTo(10 ** 6), 64)])
    assert alike.exact and alike.difference <= 1e-6
    switched = kernel_choice.row_test(FLOAT32, [(_RowsAlikeUpTo(MAX_K + 1), 64)])
    assert not switched.exact and switched.rows > MAX_K + 1 and switched.shape == "64 × 128"


@FAST
def test_the_fast_path_keeps_the_model_and_its_fingerprint():
    target = tiny_model(0)
    fast = apply_path(copy.deepcopy(target), FP16_FBGEMM)
    assert isinstance(fast.lm_head, Fp16Linear) and fast.lm_head.weight is None  # a run never reads its rows
    rows = apply_path(copy.deepcopy(target), FP16_FBGEMM, keep_output_rows=True).lm_head.weight  # training does
    assert rows.dtype == torch.float16 and torch.equal(rows, target.lm_head.weight.detach().half())
    assert not any(isinstance(m, torch.nn.Linear) for m in fast.modules())
    assert all(p.dtype == torch.float32 for p in fast.parameters())  # norms: the activations' dtype
    assert fingerprint(fast) == fingerprint(target)  # heads trained on either load on both
    ids = torch.tensor([[3, 5, 8, 13, 21]])
    with torch.inference_mode():
        same = torch.softmax(target(input_ids=ids).logits, -1), torch.softmax(fast(input_ids=ids).logits, -1)
    assert 0.5 * (same[0] - same[1]).abs().sum(-1).max() < 1e-2  # float16 storage rounds each weight a little
    assert check_rows(fast).exact and check_rows(target).exact
    loaded_half = apply_path(copy.deepcopy(target).to(torch.float16), FP16_FBGEMM)  # as load_pair loads it
    assert all(p.dtype == torch.float32 for p in loaded_half.parameters()) and check_rows(loaded_half).exact


@FAST
def test_packed_weights_count_in_a_drafts_memory():
    target, draft = tiny_model(0), tiny_model(1)
    full = draft_memory(draft, target)
    fast = draft_memory(apply_path(copy.deepcopy(draft), FP16_FBGEMM), target)
    linears = sum(m.weight.numel() for m in draft.modules() if isinstance(m, torch.nn.Linear))
    assert fast.weights_bytes < full.weights_bytes and fast.weights_bytes >= 2 * linears  # 2 bytes a weight


@pytest.fixture(scope="module")
def fast_engine():
    target = tiny_model(0)
    draft = noisy_copy(target, 0.3)
    path = FP16_FBGEMM if kernels.available(FP16_FBGEMM) is None else FLOAT32
    return Engine(apply_path(draft, path), apply_path(target, path), char_tokenizer(), "draft", "tiny-target",
                  dtype="float32", kernels=path)


@pytest.mark.parametrize("drafter", [key for key, d in REGISTRY.items() if not d.trained])
def test_greedy_on_the_fast_path_equals_the_target_alone_on_it(fast_engine, drafter):
    """Every drafter that needs no training (the trained ones: test_heads_run.py, the same rule) makes the target
    alone's greedy tokens on the same path, and the trace names the path."""
    trace = fast_engine.run("def fib(n):", RunSettings(drafter=drafter, temperature=0, max_new_tokens=24),
                            baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids and len(trace.output_token_ids) == 24
    assert trace.kernels == ("" if fast_engine.kernels == FLOAT32 else FP16_FBGEMM)


# --- the choice and its refusals -----------------------------------------------------------------------------------

@pytest.mark.parametrize("asked, words", [
    ("nope", "--kernels must be auto or one of float32, bfloat16, float16-fbgemm, gguf-int4, gguf-ort, int8-dynamic, "
             "got 'nope'; here: "),
    (GGUF_INT4, "--kernels gguf-int4 computes from a GGUF file's 4-bit blocks, and this target was not loaded from "
                "one"),
    (GGUF_ORT, "--kernels gguf-ort computes from a GGUF file's blocks, and this target was not loaded from one"),
    (INT8_DYNAMIC, "--kernels int8-dynamic is not exact on this machine, so specviz refuses it: "),
    (3, "--kernels must be auto or one of"),
])
def test_a_path_that_cannot_run_or_is_not_exact_is_refused_naming_what_runs_here(asked, words):
    with pytest.raises(ValueError) as refused:
        choose_path(64, 128, "cpu", None, asked)
    assert words in str(refused.value) and "float32" in str(refused.value).split(words)[-1] + str(refused.value)


@FAST
def test_a_path_disagreeing_with_the_dtype_asked_is_refused():
    with pytest.raises(ValueError, match="--kernels float16-fbgemm computes in float32, but --dtype bfloat16 was "
                                         "asked: leave --dtype out"):
        choose_path(64, 128, "cpu", "bfloat16", FP16_FBGEMM)
    with pytest.raises(ValueError, match="float16-fbgemm is a CPU path"):
        choose_path(64, 128, "cuda", "float16", FP16_FBGEMM)


def test_a_dtype_asked_runs_its_own_kernels_and_says_whether_they_are_exact():
    assert choose_path(64, 128, "cpu", "float32", None).path == FLOAT32
    bf16 = choose_path(64, 128, "cpu", "bfloat16", "auto")
    measured = kernel_choice.rows_here(BFLOAT16, 64, 128)
    assert bf16.path == BFLOAT16 and not bf16.exact  # as asked: the load reports it, never refuses it
    assert ("its rows measured independent on this machine" if measured.exact else str(measured)) in bf16.why

def test_auto_measures_once_and_remembers_per_machine(tmp_path):
    first = choose_path(64, 128, "cpu", None, None, tmp_path)
    assert first.exact and first.timings and "measured at load" in first.why
    assert kernel_choice.rows_here(first.path, 64, 128).exact and {t.path for t in first.timings} == {
        t.path for t in first.rows if t.exact}  # only paths exact here are timed
    written = json.loads((tmp_path / kernel_choice.CACHE_FILE).read_text())[kernel_choice.machine_key(64, 128)]
    assert {r["path"]: r["exact"] for r in written["rows"]} == {t.path: t.exact for t in first.rows}
    assert written["rows"] and not {r["path"]: r["exact"] for r in written["rows"]}.get(INT8_DYNAMIC, False)
    assert all(t.one_s > 0 and t.rows_s > 0 for t in first.timings)
    again = choose_path(64, 128, "cpu", "auto", "auto", tmp_path)
    assert again.path == first.path and "remembered beside the model cache" in again.why and not again.timings
    (tmp_path / kernel_choice.CACHE_FILE).write_text("not json")  # a broken file is measured again, not trusted
    assert choose_path(64, 128, "cpu", None, None, tmp_path).timings

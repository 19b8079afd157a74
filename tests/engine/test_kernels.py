"""engine/kernels.py: the CPU paths, which are exact (a row's output does not depend on the rows computed with it),
the one chosen by measurement and remembered, the refusals that name what this machine offers, and every drafter's
greedy identity against the target alone on the fast path (tiny models; the packaged pair: test_real_pair.py)."""

import copy

import pytest
import torch

from harness.tiny_models import char_tokenizer, noisy_copy, tiny_model
from specviz.drafters import REGISTRY
from specviz.engine import Engine, RunSettings
from specviz.engine import kernels
from specviz.engine.fingerprint import fingerprint
from specviz.engine.kernels import (BFLOAT16, FLOAT32, FP16_FBGEMM, INT8_DYNAMIC, ROW_TOLERANCE, Fp16Linear,
                                    apply_path, check_rows, choose_path)
from specviz.engine.memory import draft_memory

pytestmark = pytest.mark.usefixtures("one_thread")
FAST = pytest.mark.skipif(kernels.available(FP16_FBGEMM) is not None, reason="no fbgemm in this torch build")


@pytest.mark.parametrize("path, exact", [(FLOAT32, True), (FP16_FBGEMM, True), (BFLOAT16, False),
                                         (INT8_DYNAMIC, False)])
def test_a_paths_rows_are_independent_exactly_where_it_is_called_exact(path, exact):
    """On the packaged target's MLP shape (1536 × 8960, random weights): five rows together against one at a time.
    float32 differs by rounding (its small-matrix kernel sums in another order), float16-fbgemm not at all;
    bfloat16 rounds rows differently beside others, int8-dynamic scales a row by its batch-mates."""
    if kernels.available(path) is not None and path != BFLOAT16:
        pytest.skip(kernels.available(path))
    difference = kernels.measured_difference(path)
    assert (difference <= ROW_TOLERANCE) == exact, difference
    assert (path in kernels.EXACT) == exact


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
    ("nope", "--kernels must be auto or one of float32, bfloat16, float16-fbgemm, int8-dynamic, got 'nope'; here: "),
    (INT8_DYNAMIC, "--kernels int8-dynamic is not exact, so specviz refuses it: 5 rows computed together differ"),
    (BFLOAT16, "--kernels bfloat16"),
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
    assert bf16.path == BFLOAT16 and "not an exact path" in bf16.why


def test_auto_measures_once_and_remembers_per_machine(tmp_path):
    first = choose_path(64, 128, "cpu", None, None, tmp_path)
    assert first.path in kernels.EXACT and first.timings and "measured at load" in first.why
    assert all(t.one_s > 0 and t.rows_s > 0 for t in first.timings)
    again = choose_path(64, 128, "cpu", "auto", "auto", tmp_path)
    assert again.path == first.path and "remembered beside the model cache" in again.why and not again.timings
    (tmp_path / kernels.CACHE_FILE).write_text("not json")  # a broken file is measured again, not trusted
    assert choose_path(64, 128, "cpu", None, None, tmp_path).timings

"""The gguf-int4 path (kernels.py, layers.py, gguf_blocks.py): a GGUF file's Q4_K blocks decoded to exactly the weights
the file defines, computed by torch's int4 kernel with rows independent of their batch-mates (every drafter's greedy
output equal to the target alone's on that path: test_gguf_greedy.py; the packaged target's own blocks:
tests/engine/test_real_pair.py)."""

import copy

import numpy as np
import pytest
import torch

from harness.tiny_models import on_gguf_int4, tiny_model
from specviz.models import kernels
from specviz.models.gguf_blocks import Q4K, Q4K_BYTES, decode_q4k, linear_name
from specviz.models.kernel_choice import Choice, check_loaded, check_rows
from specviz.models.kernels import GGUF_INT4, apply_path, path_of
from specviz.models.layers import Fp16Linear, Int4Embedding, Int4Groups, moved_by, rounded

pytestmark = [pytest.mark.usefixtures("one_thread"),
              pytest.mark.skipif(kernels.available(GGUF_INT4) is not None, reason=str(kernels.available(GGUF_INT4)))]


def _q4k_bytes(rows: int, cols: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random Q4_K blocks (rows, cols/256 super-blocks), and the weights gguf's own reference decoder makes of them."""
    from gguf.quants import dequantize
    from gguf import GGMLQuantizationType

    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(rows, cols // 256 * Q4K_BYTES), dtype=np.uint8)
    halves = raw.reshape(-1, Q4K_BYTES)[:, :4].copy().view(np.float16)
    halves[:] = rng.uniform(1e-4, 1e-2, size=halves.shape).astype(np.float16)  # d and dmin: small, finite
    raw.reshape(-1, Q4K_BYTES)[:, :4] = halves.view(np.uint8)
    return raw, dequantize(raw, GGMLQuantizationType.Q4_K).reshape(rows, cols)


def test_q4k_blocks_decode_to_the_weights_the_file_defines():
    raw, want = _q4k_bytes(32, 512)
    q4k = decode_q4k(raw, 32, 512)
    assert q4k.codes.dtype == torch.uint8 and int(q4k.codes.max()) <= 15 and q4k.step.shape == (32, 16)
    assert torch.equal(q4k.weights(), torch.from_numpy(want))  # bit for bit
    wrong = decode_q4k(raw[:, ::-1].copy(), 32, 512)  # the negative control: bytes out of order decode otherwise
    assert not torch.equal(wrong.weights(), torch.from_numpy(want))


def test_gguf_names_map_to_the_modules_they_fill():
    assert linear_name("blk.3.ffn_up.weight") == "model.layers.3.mlp.up_proj"
    assert linear_name("blk.12.attn_output.weight") == "model.layers.12.self_attn.o_proj"
    assert linear_name("blk.3.attn_q.bias") is None and linear_name("output.weight") is None
    assert linear_name("token_embd.weight") == "model.embed_tokens"  # the embedding's rows, read as they are


def test_the_kernel_computes_the_groups_and_says_how_far_their_re_expression_moves_them():
    raw, want = _q4k_bytes(64, 256, seed=1)
    q4k = decode_q4k(raw, 64, 256)
    layer = Int4Groups(q4k.codes, q4k.step, q4k.minimum, None, torch.bfloat16, torch.float32)
    x = torch.randn(5, 256)
    exact = x.bfloat16().float() @ torch.from_numpy(want).T  # the file's weights, the kernel's bfloat16 inputs
    got = layer(x)
    assert got.dtype == torch.float32 and (got - exact).abs().max() < 0.02 * exact.abs().max()
    most, mean = moved_by(q4k.step, q4k.minimum)
    assert 0 < mean <= most < 0.02  # bfloat16 steps and zeros: under 2 % of a group's largest weight
    together, alone = layer(x), torch.cat([layer(x[i:i + 1]) for i in range(5)])
    assert torch.equal(together, alone)  # each row its own sum


def test_the_path_puts_layers_with_blocks_on_int4_and_the_rest_on_float16():
    target = tiny_model(0)
    fast = on_gguf_int4(target)
    assert path_of(fast) == GGUF_INT4 and isinstance(fast.lm_head, Fp16Linear)
    assert isinstance(fast.model.layers[0].mlp.up_proj, Int4Groups)
    assert isinstance(fast.model.layers[0].self_attn.q_proj, Int4Groups) and fast.model.layers[0].self_attn.q_proj.bias is not None
    assert check_rows(fast).exact
    said = check_loaded(fast, Choice(GGUF_INT4, "float32", "as asked", exact=True))  # what the page's model line says
    assert said.startswith("as asked; 14 linear layers computed from the GGUF file's Q4_K blocks") and "checked" in said
    plain = apply_path(copy.deepcopy(target), GGUF_INT4)  # no blocks (a draft, a hub model): float16 throughout
    assert not any(isinstance(m, Int4Groups) for m in plain.modules()) and path_of(plain) == kernels.FP16_FBGEMM
    with pytest.raises(ValueError, match="they are not this model's"):
        apply_path(copy.deepcopy(target), GGUF_INT4, blocks={"model.layers.0.mlp.up_proj": Q4K(
            *rounded(torch.randn(32, 64)))})


def test_the_embedding_reads_the_files_4_bit_rows():
    raw, want = _q4k_bytes(48, 256, seed=2)
    table = Int4Embedding(decode_q4k(raw, 48, 256))
    ids = torch.tensor([[3, 0, 47], [5, 5, 1]])
    assert torch.equal(table(ids), torch.from_numpy(want)[ids])  # the file's values, bit for bit
    assert table.codes.numel() == 48 * 256 // 2  # two codes a byte

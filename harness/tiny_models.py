"""Tiny random-weight models built from a config and a character tokenizer: what the tests and the scripts in
tools/ run the engine and the app on when no real model is wanted. Nothing is downloaded; a model of 2 layers
builds in well under a second.
"""

from __future__ import annotations

import copy
import string

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

CHARS = string.ascii_letters + string.digits + " .,:;()=+-*/\n'\"_<>"
EOS = "<eos>"


def char_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {EOS: 0, "<unk>": 1, **{c: i + 2 for i, c in enumerate(CHARS)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, unk_token="<unk>")


def tiny_model(seed: int, layers: int = 2, vocab: int = len(CHARS) + 2, eos: int = 0,
               positions: int = 256) -> Qwen2ForCausalLM:
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=positions,
                         eos_token_id=eos, tie_word_embeddings=False)
    model = Qwen2ForCausalLM(config).eval()
    with torch.no_grad():  # sharper than the default init, so distributions are far from uniform
        model.lm_head.weight.mul_(40)
    model.generation_config.eos_token_id = eos
    return model


def write_gguf(model: Qwen2ForCausalLM, path, packed: tuple[str, ...] = ("ffn_up",)) -> None:
    """A tiny model as a GGUF file (no tokenizer in it), its tensors under llama.cpp's names: float32, but those whose
    name ends with one of `packed` as Q8_0 blocks, so that transformers loads it as a quantized checkpoint."""
    import gguf

    config = model.config
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(config.vocab_size)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, config.num_hidden_layers)
    for key, tensor in model.state_dict().items():
        module, kind = key.rsplit(".", 1)
        name, values = names.get_name(module), tensor.float().numpy()
        if name.endswith(packed):
            blocks = gguf.quants.quantize(values, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(f"{name}.{kind}", blocks, raw_shape=blocks.shape,
                              raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(f"{name}.{kind}", values)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def noisy_copy(model: Qwen2ForCausalLM, scale: float, seed: int = 0) -> Qwen2ForCausalLM:
    """A draft that agrees with the target often but not always: the target with noise on its weights."""
    draft = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for w in draft.parameters():
            w.add_(torch.randn(w.shape, generator=gen) * scale * w.std())
    return draft


def on_gguf_int4(model: Qwen2ForCausalLM) -> Qwen2ForCausalLM:
    """A copy of a tiny model on the gguf-int4 path, its block linears given 4-bit groups of their own (rounded to
    nearest, as a GGUF file's Q4_K blocks would hold them; models/gguf_blocks.py reads a real file's)."""
    from specviz.models.gguf_blocks import Q4K
    from specviz.models.layers import rounded
    from specviz.models.kernels import GGUF_INT4, apply_path

    blocks = {name: Q4K(*rounded(module.weight)) for name, module in model.named_modules()
              if isinstance(module, torch.nn.Linear) and name.startswith("model.layers.")}
    return apply_path(copy.deepcopy(model), GGUF_INT4, blocks=blocks)


Q6K_LAYERS = ("model.layers.0.self_attn.v_proj", "model.layers.0.mlp.down_proj", "lm_head")  # as a Q4_K_M file


def on_gguf_ort(model: Qwen2ForCausalLM) -> Qwen2ForCausalLM:
    """A copy of a tiny model on the gguf-ort path with blocks of its own (gguf_ort_weights); models/ort_blocks.py
    reads a real file's."""
    from specviz.models.kernels import GGUF_ORT, apply_path
    from specviz.models.ort_blocks import blocks_of
    from specviz.models.ort_linear import layers_of

    weights, embedding = gguf_ort_weights(model)
    return apply_path(copy.deepcopy(model), GGUF_ORT, blocks=layers_of(blocks_of(weights, embedding)))


def gguf_ort_weights(model: Qwen2ForCausalLM):
    """A tiny model's layers as a Q4_K_M file holds them: Q4_K (groups of 32 rounded to nearest) for the block linears
    and the embedding, Q6_K for Q6K_LAYERS (q6k_rounded). ({module: NBits}, the embedding's Q4K)."""
    from specviz.models.gguf_blocks import Q4K
    from specviz.models.layers import rounded
    from specviz.models.ort_blocks import KINDS, NBits

    weights = {}
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and (name.startswith("model.layers.") or name == "lm_head"):
            codes, step, minimum = rounded(module.weight)
            weights[name] = (q6k_rounded(module.weight) if name in Q6K_LAYERS else
                             NBits(KINDS["Q4_K"], codes.to(torch.uint8).numpy(), step.numpy(), minimum.numpy()))
    codes, step, minimum = rounded(model.get_input_embeddings().weight)
    return weights, Q4K(codes.to(torch.uint8), step, minimum)


def q6k_rounded(weight: torch.Tensor):
    """A weight (N, K) as Q6_K would hold it: 6-bit codes around 32, a scale per 16 (its largest size / 31)."""
    from specviz.models.ort_blocks import KINDS, NBits

    n, k = weight.shape
    blocks = weight.detach().float().reshape(n, k // 16, 16)
    scale = blocks.abs().amax(-1).clamp(min=1e-12) / 31
    codes = (blocks / scale[..., None]).round().add(32).clamp(0, 63).to(torch.uint8).reshape(n, k)
    return NBits(KINDS["Q6_K"], codes.numpy(), scale.numpy())

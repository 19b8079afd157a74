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

"""Shared fixtures: tiny random-weight models built from a config, and a character tokenizer.

Everything here is built in the test process; nothing is downloaded.
"""

from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no telemetry or version check from tests
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded; unknown ids fail fast

import copy
import string
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent / "tools"
if str(TOOLS) not in sys.path:  # tests/test_load.py drives tools/load_test.py (`import load_test`)
    sys.path.append(str(TOOLS))

import pytest
import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from specviz.engine import Engine, RunSettings
from specviz.record.load import load_trace

# The device the device-aware tests run on: cpu unless told (tools/gpu_check.py runs them with cuda). The real-pair
# tests take it too, where unset meaning auto (cuda → mps → cpu), as the app does.
TEST_DEVICE = os.environ.get("SPECVIZ_TEST_DEVICE", "")

CHARS = string.ascii_letters + string.digits + " .,:;()=+-*/\n'\"_<>"
EOS = "<eos>"


def char_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {EOS: 0, "<unk>": 1, **{c: i + 2 for i, c in enumerate(CHARS)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, unk_token="<unk>")


def tiny_model(seed: int, layers: int = 2, vocab: int = len(CHARS) + 2, eos: int = 0) -> Qwen2ForCausalLM:
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         eos_token_id=eos, tie_word_embeddings=False)
    model = Qwen2ForCausalLM(config).eval()
    with torch.no_grad():  # sharper than the default init, so distributions are far from uniform
        model.lm_head.weight.mul_(40)
    model.generation_config.eos_token_id = eos
    return model


@pytest.fixture(scope="session")
def tokenizer():
    return char_tokenizer()


def noisy_copy(model: Qwen2ForCausalLM, scale: float, seed: int = 0) -> Qwen2ForCausalLM:
    """A draft that agrees with the target often but not always: the target with noise on its weights."""
    draft = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for w in draft.parameters():
            w.add_(torch.randn(w.shape, generator=gen) * scale * w.std())
    return draft


@pytest.fixture(scope="session")
def tiny_pair():
    """(draft, target): a 2-layer random target and a noisy copy of it as the draft."""
    target = tiny_model(seed=2, layers=2)
    return noisy_copy(target, 0.2), target


@pytest.fixture
def engine(tiny_pair, tokenizer):
    draft, target = tiny_pair
    return Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")


@pytest.fixture(scope="module")
def trace(tiny_pair, tokenizer):
    """A sampled run on tiny models with rejections, discards and bonus tokens (seed chosen for all fates)."""
    draft, target = tiny_pair
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    return engine.run("def fib(n):", RunSettings(k=4, temperature=1.0, seed=6, max_new_tokens=16), baseline=True)


@pytest.fixture(scope="module")
def lookup_trace(tiny_pair, tokenizer):
    """A sampled prompt-lookup run on tiny models: copied drafts accepted, rejected and discarded, bonus tokens,
    and rounds after the first that draft nothing because the last token has no earlier match."""
    draft, target = tiny_pair
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    return engine.run("def fib(n):", RunSettings(k=4, temperature=1.0, seed=0, max_new_tokens=24, drafter="lookup"))


@pytest.fixture(scope="module")
def recorded():
    """tests/fixtures/qwen_coder_fib.json: a run of the packaged pair (K=4, temperature 0.7, seed 1, 24 tokens)."""
    return load_trace((Path(__file__).parent / "fixtures" / "qwen_coder_fib.json").read_bytes())

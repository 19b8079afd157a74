"""What the test files share that is not a fixture: tiny models and a character tokenizer, calling /generate and
reading the app's outputs, the wrong tree rule the negative controls use, a fake packaged model, a hand-made trace.

Imported as `tests.helpers`: by the test files (no test file imports another), by tests/conftest.py for its fixtures,
and by tools/load_test.py and tools/screenshot_lecture.py. Everything here is built in the calling process; nothing
is downloaded.
"""

from __future__ import annotations

import copy
import errno
import hashlib
import html
import inspect
import os
import re
import string
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from specviz.app.actions import ModelActions, api_outputs
from specviz.drafters import DEFAULT
from specviz.drafters.tree import DEFAULT_WIDTHS
from specviz.settings.bounds import COST_RULE, widths_text
from specviz.algorithm import tree as tree_module
from specviz.algorithm.sampling import residual_distribution, sample
from specviz.algorithm.tree import verify_tree
from specviz.engine import pairs
from specviz.engine.pairs import PackagedGGUF
from specviz.record.stats import summarize
from specviz.record.trace import (ACCEPTED, BONUS, DISCARDED, REJECTED, REPLACEMENT, Baseline, DraftPosition, Round,
                                  TokenProb, Trace)

ROOT = Path(__file__).resolve().parent.parent  # the repository
FIXTURE = ROOT / "tests" / "fixtures" / "qwen_coder_fib.json"  # a run of the packaged pair, 7 rounds

# The device the device-aware tests run on: cpu unless told (tools/gpu_check.py runs them with cuda). The real-pair
# tests take it too, where unset meaning auto (cuda → mps → cpu), as the app does.
TEST_DEVICE = os.environ.get("SPECVIZ_TEST_DEVICE", "")


# --- tiny models -----------------------------------------------------------------------------------------------

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


def noisy_copy(model: Qwen2ForCausalLM, scale: float, seed: int = 0) -> Qwen2ForCausalLM:
    """A draft that agrees with the target often but not always: the target with noise on its weights."""
    draft = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for w in draft.parameters():
            w.add_(torch.randn(w.shape, generator=gen) * scale * w.std())
    return draft


# --- the app through gradio_client ----------------------------------------------------------------------------

def named(event: str, outputs) -> dict:
    """What the endpoint /`event` returned, by name (specviz.app.actions.api_outputs: status, info, download, then
    the round view's panels, and for /open_trace the quiz): tests read outputs by name, never by position."""
    names = api_outputs(event)
    assert len(outputs) == len(names), f"/{event} returned {len(outputs)} outputs for {names}"
    return dict(zip(names, outputs))


def open_trace(client, path, lecture: bool = False) -> dict:
    """/open_trace with the file at `path` -> its outputs by name."""
    from gradio_client import handle_file

    return named("open_trace", client.predict(handle_file(str(path)), lecture, api_name="/open_trace"))


def show_round(client, number, lecture: bool = False):
    """/show_round: the slider's value after the step (the server clamps `number` to the trace's rounds)."""
    return value(named("show_round", client.predict(number, lecture, api_name="/show_round"))["slider"])


def open_example(client, index, lecture: bool = False) -> dict:
    """/open_example with the gallery's `index` -> its outputs by name."""
    return named("open_example", client.predict(index, lecture, api_name="/open_example"))


# /generate's inputs after the prompt and the preset, each at the page's default but for the run's own settings
# (K 4, temperature 0.7, seed 0, 24 new tokens); the order is the handler's signature, the API's parameter list.
GENERATE_DEFAULTS = dict(k=4, temperature=0.7, top_p=1.0, top_k=0, seed=0, max_new_tokens=24, lecture=False,
                         drafter=DEFAULT.key, adaptive=False, draft_layers=0, tree_widths=widths_text(DEFAULT_WIDTHS),
                         stop_rule=COST_RULE)
GENERATE_ORDER = [name for name in inspect.signature(ModelActions.generate).parameters
                  if name not in ("self", "prompt", "preset", "progress", "request")]
assert sorted(GENERATE_ORDER) == sorted(GENERATE_DEFAULTS), "the tests' /generate inputs follow the handler's"


def generate_inputs(prompt: str = "def fib(n):", preset: str = "tiny", **settings) -> list:
    """Every input of /generate in order: the prompt, the preset, then GENERATE_DEFAULTS with `settings` in their
    place (any value, valid or not: the tests of bad input send what the page could not)."""
    chosen = generate_settings(**settings)
    return [prompt, preset, *(chosen[name] for name in GENERATE_ORDER)]


def generate_settings(**settings) -> dict:
    """/generate's inputs after the prompt and the preset, by name: for calling ModelActions.generate directly."""
    unknown = settings.keys() - GENERATE_DEFAULTS.keys()
    assert not unknown, f"/generate has no input {sorted(unknown)}"
    return {**GENERATE_DEFAULTS, **settings}


def submit(client, prompt: str = "def fib(n):", preset: str = "tiny", **settings):
    """Press Generate through `client` (a gradio_client Client) -> its Job: .result() the last frame's outputs,
    .outputs() every frame's (read them with `named("generate", ...)`)."""
    return client.submit(*generate_inputs(prompt, preset, **settings), api_name="/generate")


def generate(client, prompt: str = "def fib(n):", preset: str = "tiny", **settings) -> dict:
    """A whole run of /generate -> the outputs of its last frame, by name."""
    return named("generate", submit(client, prompt, preset, **settings).result())


def generate_frames(client, prompt: str = "def fib(n):", preset: str = "tiny", **settings) -> tuple[dict, list]:
    """A whole run of /generate -> (the outputs of its last frame, those of every frame streamed), by name."""
    job = submit(client, prompt, preset, **settings)
    return named("generate", job.result()), [named("generate", frame) for frame in job.outputs()]


def value(update):
    return update["value"] if isinstance(update, dict) else update


def text(markup: str) -> str:
    """What a status line says, without its tags and entities."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


# --- the tree rule's negative control --------------------------------------------------------------------------

def _test_against_unchanged_p(tree, tokens, P, Q, gen, greedy=False, distinct=False):
    """A wrong rule: every child is tested against the node's original p (no residual between siblings); only
    the replacement after all rejections comes from the residual."""
    real = tree_module.residual_distribution
    tree_module.residual_distribution = lambda target, q: target
    try:
        v = verify_tree(tree, tokens, P, Q, gen, distinct=distinct)
    finally:
        tree_module.residual_distribution = real
    if v.next_kind == REPLACEMENT:
        node = v.path[-1] if v.path else 0
        v.next_token = int(sample(residual_distribution(P[node], Q[node])[None], gen)[0])
    return v


def _test_against_unchanged_q(tree, tokens, P, Q, gen, greedy=False, distinct=True):
    """A wrong rule for distinct siblings: children drawn without replacement, tested as if drawn i.i.d. (against
    the node's unchanged q, not q without the earlier siblings)."""
    return verify_tree(tree, tokens, P, Q, gen, greedy=greedy, distinct=False)


# --- a fake packaged model: two small chunk files and a fake conversion stand in for the real 3-minute one -----

def fake_packaged(folder: Path) -> PackagedGGUF:
    """Two chunk files under folder and the PackagedGGUF entry that matches them."""
    chunks = [folder / "part01.bin", folder / "part02.bin"]
    for i, path in enumerate(chunks):
        path.write_bytes(bytes([i]) * 1000)
    joined = b"".join(p.read_bytes() for p in chunks)
    return PackagedGGUF("Fake", ("fake-part1", "fake-part2"), len(joined), hashlib.sha256(joined).hexdigest())


def convert(work: Path, progress=None, fail_after: str | None = None) -> None:
    """What _convert_gguf leaves in work/out: a config, weights (a real safetensors file) and a tokenizer.
    With fail_after, it stops after writing that file, as a full disk would stop it."""
    out = work / "out"
    out.mkdir()
    (out / "config.json").write_text('{"model_type": "qwen2"}')
    if fail_after == "config.json":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    save_file({"w": torch.ones(64)}, str(out / "model.safetensors"))
    (out / "tokenizer.json").write_text("{}")


def install(packaged: PackagedGGUF, chunk_dir: Path, converter, setattr_) -> None:
    """Point specviz.engine.pairs at the fake: its PACKAGED entry, its chunk files, the converter (setattr_:
    monkeypatch's, or plain setattr in a subprocess)."""
    setattr_(pairs, "PACKAGED", {**pairs.PACKAGED, "Fake": packaged})
    setattr_(pairs, "chunk_files", lambda p: sorted(chunk_dir.glob("part*.bin")))
    setattr_(pairs, "_convert_gguf", converter)


# --- a hand-made trace: two rounds with known times, and a baseline --------------------------------------------

def make_round(i: int, k: int, n_accepted: int, draft_s: float, verify_s: float) -> Round:
    fates = [ACCEPTED] * n_accepted + ([REJECTED] if n_accepted < k else []) + [DISCARDED] * (k - n_accepted - 1)
    drafts = [DraftPosition(10 + j, "x", 0.5, 0.4, f) for j, f in enumerate(fates)]
    kind = BONUS if n_accepted == k else REPLACEMENT
    return Round(i, k, drafts, n_accepted, TokenProb(1, "y", 0.5), kind, None, None,
                 [10 + j for j in range(n_accepted)] + [1], draft_s, verify_s)  # what a real round commits


def make_trace(baseline: bool = True) -> Trace:
    rounds = [make_round(0, 4, 4, 0.20, 0.10), make_round(1, 4, 1, 0.12, 0.10)]  # 5 + 2 tokens
    summary = summarize(rounds, total_time_s=0.5)  # 14 tokens/s
    return Trace(settings={"k": 4}, draft_model="<i>draft</i>", target_model="target", device="cpu",
                 dtype="float32", prompt="hi", prompt_token_ids=[1], rounds=rounds,
                 output_token_ids=[t for r in rounds for t in r.committed_ids], output_text="",
                 summary=summary, baseline=Baseline([1] * 7, "", 0.05, 1.0, 7.0) if baseline else None)

"""The chat template's opening, read once per model (engine/opening.py): what it is, that a run starts from it and
reads only the rest, that it changes no output (greedy identity, and the same bits on an exact path; sampled runs
from it: test_lossless.py), and that it holds no one's prompt."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import DynamicCache

from harness.tiny_models import char_tokenizer, tiny_model
from specviz.engine import Engine, RunSettings
from specviz.engine.decoding import forward
from specviz.engine.lean import LeanCache
from specviz.engine.opening import Openings, opening_of
from specviz.models import kernels
from specviz.models.kernels import FP16_FBGEMM, apply_path
from specviz.record.load import load_trace

# A chat template in the char tokenizer's characters: a system line and "User: " before the user's text
LONGER = ("{{ 'You are a helpful assistant.\n' }}{% for m in messages %}{{ 'User: ' + m['content'] + '\n' }}"
          "{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}")
PROMPT = "def fib(n):"


def chat_tokenizer():
    tok = char_tokenizer()
    tok.chat_template = LONGER
    return tok


@pytest.fixture
def chat_engine(tiny_pair):
    draft, target = tiny_pair
    return Engine(draft, target, chat_tokenizer())


def test_the_opening_is_what_every_chat_prompt_begins_with_and_nothing_of_the_users_text():
    tok = chat_tokenizer()
    opening = opening_of(tok)
    assert tok.decode(opening) == "You are a helpful assistant.\nUser: "
    for text in ("x", PROMPT, "You"):  # a prompt that begins as the opening's letters do changes nothing
        ids = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True)
        ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        assert ids[:len(opening)] == opening
    assert opening_of(char_tokenizer()) == []  # no template: no opening


def test_a_run_reads_only_the_prompt_after_the_opening_and_outputs_as_the_target_alone(chat_engine):
    settings = RunSettings(k=3, temperature=0, max_new_tokens=12)
    n = len(chat_engine.openings.ids)
    trace = chat_engine.run(PROMPT, settings, baseline=True)
    assert n > 0 and trace.opening == n
    first, second = trace.rounds[0].cache, trace.rounds[1].cache
    assert first.target[0] == n and first.target[2] == len(trace.prompt_token_ids)  # round 1 fed the rest
    assert second.draft[0] == n  # the draft's cache too started from the opening
    assert trace.output_token_ids == trace.baseline.output_token_ids  # greedy identity, float32
    chat_engine.openings = Openings([])  # the same run reading its whole prompt
    whole = chat_engine.run(PROMPT, settings)
    assert whole.opening == 0 and whole.rounds[0].cache.target[0] == 0
    assert whole.output_token_ids == trace.output_token_ids
    assert load_trace(trace.to_json()).opening == n  # recorded, and read back


@pytest.mark.parametrize("drafter, shape", [("lookup", {}), ("layers", {"draft_layers": 1}),
                                            ("tree", {"tree_widths": (2, 1)})])
def test_other_drafters_from_the_opening_give_the_target_alones_greedy_tokens(chat_engine, drafter, shape):
    """Prompt lookup (no draft model), self-speculation (the target's first layer, a drafter model of its own) and a
    draft tree (its draft cache transformers', the target's from the opening)."""
    settings = RunSettings(drafter=drafter, k=3, temperature=0, max_new_tokens=10, **shape)
    trace = chat_engine.run(PROMPT, settings, baseline=True)
    assert trace.opening == len(chat_engine.openings.ids) and trace.rounds[0].cache.target[0] == trace.opening
    assert trace.output_token_ids == trace.baseline.output_token_ids


def test_the_opening_is_held_once_per_model_and_never_a_prompt(chat_engine):
    settings = RunSettings(k=3, temperature=0, max_new_tokens=6)
    for prompt in (PROMPT, "secret: 1234", "x = 1"):
        chat_engine.run(prompt, settings)
    held = chat_engine.openings._caches
    assert len(held) == 2  # the target's and the draft's
    for model, cache in held.values():
        assert cache.get_seq_length() == len(chat_engine.openings.ids)  # the opening's positions, none of a prompt
    assert chat_engine.openings.ids == opening_of(chat_engine.tokenizer)


def test_a_run_writes_its_own_copy_never_the_opening_it_started_from(chat_engine):
    settings = RunSettings(k=3, temperature=0, max_new_tokens=8)
    chat_engine.run(PROMPT, settings)
    before = {key: copy.deepcopy(cache.keys if isinstance(cache, LeanCache) else cache.layers[0].keys)
              for key, (_, cache) in chat_engine.openings._caches.items()}
    chat_engine.run("other text", settings)
    for key, (_, cache) in chat_engine.openings._caches.items():
        now = cache.keys if isinstance(cache, LeanCache) else cache.layers[0].keys
        assert torch.equal(now, before[key])


def test_runs_without_the_opening_read_the_whole_prompt(chat_engine):
    plain = chat_engine.run(PROMPT, RunSettings(k=3, temperature=0, max_new_tokens=6, chat=False))
    assert plain.opening == 0 and plain.rounds[0].cache.target[0] == 0
    heads = RunSettings(drafter="heads", k=2, temperature=0, max_new_tokens=6)
    ids = chat_engine.encode(PROMPT, RunSettings(k=2, temperature=0, max_new_tokens=6))
    assert not chat_engine._opening(heads, ids)  # heads read the target's states of every prompt position
    assert chat_engine._opening(RunSettings(k=2, temperature=0), ids)


@pytest.mark.skipif(kernels.available(FP16_FBGEMM) is not None, reason="no fbgemm in this torch build")
def test_on_an_exact_path_the_opening_changes_no_bit():
    """float16-fbgemm: each row its own sum, so the opening's keys and values read alone are the whole prompt's."""
    target = apply_path(tiny_model(seed=5, layers=2).half(), FP16_FBGEMM)
    ids = chat_tokenizer().apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True,
                                               tokenize=True)
    ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    openings = Openings(opening_of(chat_tokenizer()))
    with torch.inference_mode():
        whole = DynamicCache()
        want = forward(target, ids, whole, 1)
        started = openings.fresh(target, DynamicCache, ids)
        got = forward(target, ids[started.get_seq_length():], started, 1)
        assert torch.equal(got, want)
        assert torch.equal(forward(target, [5], started, 1), forward(target, [5], whole, 1))


# The sampled runs from the opening follow the target alone: test_lossless.py's setup_opening (and its control).

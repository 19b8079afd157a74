"""engine/batched.py: many sequences at once, each exact for its user. Every sequence's greedy output equals the same
prompt run alone, at several batch sizes, with mixed prompts and lengths, sequences leaving and joining (continuous
batching); sampled outputs follow the target's own distribution (χ², with a wrong sampler as the negative control);
the batch's caches keep only what each sequence committed."""

import copy
import threading

import pytest
import torch

from specviz.algorithm.sampling import SamplingSettings
from specviz.engine import Engine, RunSettings, batched
from specviz.engine.batched import Batch, Request
from specviz.models import kernels
from harness.tiny_models import on_gguf_int4
from specviz.models.kernels import FLOAT32, FP16_FBGEMM, GGUF_INT4, apply_path
from tests.engine.test_lossless import _wrong_verify, exact_marginals, tv

pytestmark = pytest.mark.usefixtures("one_thread")
PROMPTS = ["def fib(n):", "x = 1", "The quick brown fox", "import os\nimport sys\n", "a", "for i in range(10):",
           "class A:\n    pass", "print('hi')"]
GREEDY = SamplingSettings(temperature=0)


@pytest.fixture(scope="module", params=[FLOAT32, FP16_FBGEMM, GGUF_INT4])
def pair(request, tiny_pair, tokenizer):
    """The tiny pair on each CPU path, with an engine for the runs alone (no EOS: every run makes its full length);
    on gguf-int4 the target computes from 4-bit groups of its own, as the packaged target from its file's."""
    if kernels.available(request.param) is not None:
        pytest.skip(kernels.available(request.param))
    draft, target = (apply_path(copy.deepcopy(m), request.param) for m in tiny_pair)
    if request.param == GGUF_INT4:
        target = on_gguf_int4(tiny_pair[1])
    engine = Engine(draft, target, tokenizer)
    engine.eos_ids = set()
    return engine


def _target_alone(engine, prompt_ids, max_new):
    """The target's greedy tokens, one plain step at a time with no cache: the reference."""
    ids = list(prompt_ids)
    with torch.inference_mode():
        for _ in range(max_new):
            ids.append(int(engine.target(input_ids=torch.tensor([ids])).logits[0, -1, :engine.vocab].argmax()))
    return ids[len(prompt_ids):]


def requests(engine, n, lengths=(12, 20, 7, 16)):
    return [Request(tuple(engine.encode(PROMPTS[i % len(PROMPTS)], RunSettings(chat=False))), GREEDY, seed=i,
                    max_new_tokens=lengths[i % len(lengths)], label=str(i)) for i in range(n)]


@pytest.mark.parametrize("most, k", [(1, 4), (4, 4), (8, 4), (8, 0), (3, 2)])
def test_every_sequence_s_greedy_output_equals_its_prompt_alone(pair, most, k):
    """Mixed prompts of different lengths and token limits; more requests than seats, so sequences leave and others
    join mid-flight."""
    asked = requests(pair, most + 3)
    batch = Batch(pair.target, pair.draft, pair.vocab, set(), k)
    served = batch.serve(asked, most)
    for s in served:
        assert s.output_ids == _target_alone(pair, s.request.prompt_ids, s.request.max_new_tokens), s.request.label
        assert s.first_token_s <= s.finished_s and s.passes >= 1
    assert batch.rows == [] and batch.counts.tokens == sum(len(s.output_ids) - 1 for s in served)
    if k:  # drafting paid: fewer passes than tokens
        assert batch.counts.passes < batch.counts.tokens


def test_the_caches_keep_exactly_what_each_sequence_committed(pair):
    """Mid-run, each row's kept target slots number its committed tokens but the last, and its draft slots a prefix."""
    asked = requests(pair, 4, lengths=(30,))
    batch = Batch(pair.target, pair.draft, pair.vocab, set(), 4)
    for s in asked:
        batch.join(batched.Served(s), 0.0)
    for _ in range(3):
        batch.round(0.0)
        kept = batch.target_slots.kept.sum(1).tolist()
        assert kept == [len(seq.ids) - 1 for seq in batch.rows]
        assert batch.draft_slots.kept.sum(1).tolist() == [seq.drafted for seq in batch.rows]
        assert all(seq.drafted < len(seq.ids) for seq in batch.rows)


def test_the_batch_drafts_through_the_lean_pass_with_transformers_logits(pair):
    """The draft's slots fed by lean.py's batched pass and by transformers' forward, side by side through a batch's
    own feeds (joins of unequal prompts, padded steps, masked rejections, a row leaving): the same logits. The
    negative control: a row's mask changed, the logits differ."""
    lean, plain = batched.LeanSlots(batched.LeanDecoder(pair.draft)), batched.Slots()
    for prompt in PROMPTS[:3]:
        ids = pair.encode(prompt, RunSettings(chat=False))
        for slots in (lean, plain):
            alone = batched.DynamicCache()
            with torch.inference_mode():
                pair.draft(input_ids=torch.tensor([ids]), cache=alone, use_cache=True)
            slots.join(alone, len(ids))
    steps = [([[5], [6, 7], [8]], None), ([[9], [10], [11]], (1, 3, 1)), ([[12], [13], [14, 15]], None)]
    with torch.inference_mode():
        for feeds, rejection in steps:
            ours, theirs = lean.feed(pair.draft, feeds, 1), plain.feed(pair.draft, feeds, 1)
            assert torch.allclose(ours, theirs, atol=1e-5, rtol=0), (ours - theirs).abs().max()
            if rejection:
                for slots in (lean, plain):
                    slots.drop(*rejection)
        for slots in (lean, plain):
            slots.select([0, 2])
        ours, theirs = lean.feed(pair.draft, [[3], [4]], 1), plain.feed(pair.draft, [[3], [4]], 1)
        assert torch.allclose(ours, theirs, atol=1e-5, rtol=0)
        lean.kept[0, 0] = False  # the negative control: one slot hidden from one row
        plain.kept[0, 0] = True
        ours, theirs = lean.feed(pair.draft, [[3], [4]], 1), plain.feed(pair.draft, [[3], [4]], 1)
        assert not torch.allclose(ours[0], theirs[0], atol=1e-5, rtol=0) and torch.allclose(ours[1], theirs[1], atol=1e-5, rtol=0)


def test_a_batch_that_drafts_nothing_never_runs_the_draft(pair, monkeypatch):
    """The draft reads a sequence's text only when a round first drafts for it: under K = 0 (as the cost rule for a
    batch chooses at many users) no join pays for it. The negative control: K = 2 runs it."""
    seen = []
    embed = pair.draft.get_input_embeddings()
    original = embed.forward
    monkeypatch.setattr(embed, "forward", lambda ids: seen.append(tuple(ids.shape)) or original(ids))
    asked = requests(pair, 3)
    plain = Batch(pair.target, pair.draft, pair.vocab, set(), 0).serve(asked, 2)
    assert seen == [] and all(s.output_ids == _target_alone(pair, s.request.prompt_ids, s.request.max_new_tokens)
                              for s in plain)
    Batch(pair.target, pair.draft, pair.vocab, set(), 2).serve(asked, 2)
    assert seen


def test_bad_sizes_are_refused_with_a_sentence(pair):
    batch = Batch(pair.target, pair.draft, pair.vocab, set(), 4)
    for most in (0, 17):
        with pytest.raises(ValueError, match="at most 16 sequences at once, and at least 1"):
            batch.serve(requests(pair, 2), most)
    with pytest.raises(ValueError, match="drafting needs a draft model"):
        Batch(pair.target, None, pair.vocab, set(), 4)



def test_the_admission_loop_asks_again_as_requests_end_and_a_stop_ends_it(float32_engine):
    """Batch.serve's `then` hears of each request as it ends and may ask the next, asked at that moment and seated
    when a seat is free; `stop`, once set, ends serving after the round in progress, the request still waiting
    never seated (a closed loop of users, measure/closed_loop.py, drives a batch so)."""
    engine = float32_engine
    ids = tuple(engine.encode("def f", RunSettings(chat=False)))
    told, stop = [], threading.Event()

    def then(served, now):
        told.append(served)
        if len(told) == 3:
            stop.set()
        return Request(ids, GREEDY, seed=len(told), max_new_tokens=2)

    served = Batch(engine.target, engine.draft, engine.vocab, set(), 2).serve(
        [Request(ids, GREEDY, seed=0, max_new_tokens=3)], 1, then, stop)
    assert told == served[:3] and [len(s.output_ids) for s in served] == [3, 2, 2, 0]
    for earlier, later in zip(served, served[1:]):
        assert earlier.finished_s <= later.asked_s
    assert all(s.asked_s <= s.joined_s for s in served[1:3]) and served[3].joined_s == 0.0

# --- sampled: each sequence's tokens follow the target's distribution ------------------------------------------

N = 480  # sequences; test_lossless.py's bound: TV < 0.08 passes the engine, a wrong sampler measures > 0.12


def sampled_marginals(engine, most):
    """The first three tokens of N seeded sequences of one prompt, served `most` at a time, K = 2 (test_lossless.py's
    setting)."""
    ids = engine.encode("def f", RunSettings(chat=False))
    warm = SamplingSettings(temperature=1.0)
    asked = [Request(tuple(ids), warm, seed=seed, max_new_tokens=3) for seed in range(N)]
    served = Batch(engine.target, engine.draft, engine.vocab, set(), 2).serve(asked, most)
    counts = torch.zeros(3, engine.vocab)
    for s in served:
        for i, token in enumerate(s.output_ids):
            counts[i, token] += 1
    return counts / N, exact_marginals(engine, ids, warm)


@pytest.fixture(scope="module")
def float32_engine(tiny_pair, tokenizer):
    engine = Engine(*tiny_pair, tokenizer)
    engine.eos_ids = set()
    return engine


def test_sampled_sequences_follow_the_target_in_a_batch_of_eight(float32_engine):
    freq, exact = sampled_marginals(float32_engine, 8)
    assert max(tv(f, p) for f, p in zip(freq, exact)) < 0.08


@pytest.mark.control
def test_negative_control_a_wrong_sampler_in_the_batch_is_caught(float32_engine, monkeypatch):
    monkeypatch.setattr(batched, "verify", _wrong_verify)
    freq, exact = sampled_marginals(float32_engine, 8)
    assert max(tv(f, p) for f, p in zip(freq, exact)) > 0.12

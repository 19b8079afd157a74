"""Engine mechanics on tiny random-weight models (fast, no downloads)."""

import math
import pytest
import torch
from transformers import DynamicCache

from specviz.engine import Engine, RunSettings
from specviz.engine.decoding import cut_at_stop, forward, rollback
from specviz.record.stats import step_times
from specviz.record.trace import ACCEPTED, BONUS, DISCARDED, REJECTED, REPLACEMENT, Trace

PROMPT = "def fib(n):"


@pytest.mark.parametrize("k", [1, 2, 4, 8, 16])
def test_greedy_equals_target_only_greedy(engine, k):
    trace = engine.run(PROMPT, RunSettings(k=k, temperature=0, max_new_tokens=40), baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids
    assert trace.output_text == trace.baseline.output_text
    assert len(trace.output_token_ids) == 40


def test_rounds_account_for_every_token(engine):
    trace = engine.run(PROMPT, RunSettings(k=4, temperature=0.8, seed=3, max_new_tokens=50))
    assert sum(len(r.committed_ids) for r in trace.rounds) == len(trace.output_token_ids) == 50
    assert [t for r in trace.rounds for t in r.committed_ids] == trace.output_token_ids
    for r in trace.rounds:
        fates = [d.fate for d in r.drafts]
        assert fates[:r.n_accepted] == [ACCEPTED] * r.n_accepted
        if r.next_kind == REPLACEMENT:
            assert fates[r.n_accepted] == REJECTED and set(fates[r.n_accepted + 1:]) <= {DISCARDED}
            assert r.drafts[r.n_accepted].uniform >= r.drafts[r.n_accepted].accept_prob
            assert r.residual and r.bonus_candidates is None
        else:
            assert r.next_kind == BONUS and r.n_accepted == r.k and r.residual is None
        for d in r.drafts[:r.n_accepted]:
            assert d.uniform < d.accept_prob == pytest.approx(min(1.0, d.p / d.q))
    s = trace.summary
    assert s.n_accepted == sum(r.n_accepted for r in trace.rounds)
    assert s.acceptance_rate == pytest.approx(s.n_accepted / s.n_examined)  # the bonus never counts
    assert 0 < s.acceptance_rate < 1 and s.tokens_per_pass == pytest.approx(50 / len(trace.rounds))


def test_draft_equal_to_target_accepts_everything(tiny_pair, tokenizer):
    _, target = tiny_pair
    engine = Engine(target, target, tokenizer)
    trace = engine.run(PROMPT, RunSettings(k=4, temperature=1.0, seed=0, max_new_tokens=30))
    assert all(d.fate == ACCEPTED for r in trace.rounds for d in r.drafts)
    # round 1 is the target's prefill (one token, no drafts); every later round but the last makes K + 1
    assert [r.tokens_this_pass for r in trace.rounds[:-1]] == [1] + [5] * (len(trace.rounds) - 2)


def test_sampled_runs_repeat_with_a_seed_and_differ_across_seeds(engine):
    a, b, c = (engine.run(PROMPT, RunSettings(k=3, temperature=1.0, seed=s, max_new_tokens=30)) for s in (7, 7, 8))
    assert a.output_token_ids == b.output_token_ids
    assert a.output_token_ids != c.output_token_ids


def test_rollback_leaves_the_cache_as_a_fresh_prefill(engine):
    run = engine.start(PROMPT, RunSettings(k=6, temperature=0, max_new_tokens=40))
    rounds = iter(run)
    for _ in range(4):
        next(rounds)
    assert any(r.n_accepted < r.k for r in run.rounds)  # a rollback really happened
    ids = run.ids
    assert run.target_cache.get_seq_length() == len(ids) - 1
    with torch.inference_mode():
        cached = forward(engine.target, ids[-1:], run.target_cache, 1)
        fresh = forward(engine.target, ids, DynamicCache(), 1)
        draft_cached = forward(engine.draft, ids[run.draft_cache.get_seq_length():], run.draft_cache, 1)
        draft_fresh = forward(engine.draft, ids, DynamicCache(), 1)
    assert torch.allclose(cached, fresh, atol=1e-4)
    assert torch.allclose(draft_cached, draft_fresh, atol=1e-4)


def test_rollback_crops_from_the_end():
    cache = DynamicCache()
    k = torch.randn(1, 2, 7, 4)
    cache.update(k, k.clone(), 0)
    rollback(cache, 5)
    assert cache.get_seq_length() == 5 and torch.equal(cache.layers[0].keys, k[..., :5, :])
    rollback(cache, 9)  # never grows, never empties by accident
    assert cache.get_seq_length() == 5


@pytest.mark.parametrize("left", [1, 2, 3])
def test_k_larger_than_the_tokens_left(engine, left):
    trace = engine.run(PROMPT, RunSettings(k=8, temperature=0, max_new_tokens=left), baseline=True)
    assert len(trace.output_token_ids) == left
    assert trace.output_token_ids == trace.baseline.output_token_ids
    assert all(r.k <= left - 1 for r in trace.rounds)
    assert trace.rounds[-1].stop == "max_new_tokens"


def test_eos_inside_the_draft_ends_the_run(tiny_pair, tokenizer):
    draft, target = tiny_pair
    plain = Engine(draft, target, tokenizer).baseline(PROMPT, RunSettings(k=8, temperature=0, max_new_tokens=20))
    eos = plain.output_token_ids[6]  # make the 7th greedy token the end of sequence
    first = plain.output_token_ids.index(eos)
    engine = Engine(target, target, tokenizer)  # draft = target: EOS is proposed inside an accepted draft
    engine.eos_ids = {eos}
    trace = engine.run(PROMPT, RunSettings(k=8, temperature=0, max_new_tokens=20))
    assert trace.output_token_ids == plain.output_token_ids[:first + 1]
    assert trace.rounds[-1].stop == "eos"
    assert trace.rounds[-1].drafts[-1].token_id == eos  # drafting stopped at EOS, nothing after it



def test_the_commit_rule_cuts_after_eos_and_at_the_token_limit():
    """One rule for a run alone and a batch's sequences: up to and including the first EOS, at most what
    max_new_tokens leaves, and why the output ends there (None: it goes on)."""
    assert cut_at_stop([5, 2, 7], {2}, 10) == ([5, 2], "eos")
    assert cut_at_stop([5, 6, 2], {2}, 3) == ([5, 6, 2], "eos")  # EOS on the last token allowed: EOS says why
    assert cut_at_stop([5, 6, 7], {2}, 2) == ([5, 6], "max_new_tokens")
    assert cut_at_stop([5, 6], {2}, 3) == ([5, 6], None)
    assert cut_at_stop([5, 6], {2}, 0) == ([], "max_new_tokens")  # nothing left: nothing kept, not the tail

def test_trace_json_round_trip(engine):
    trace = engine.run(PROMPT, RunSettings(k=3, temperature=0.7, seed=1, max_new_tokens=25), baseline=True)
    again = Trace.from_json(trace.to_json())
    assert again == trace
    assert again.to_json() == trace.to_json()


def test_untraced_run_gives_the_same_tokens(engine):
    s = RunSettings(k=4, temperature=0.9, seed=5, max_new_tokens=30)
    full, lean = engine.run(PROMPT, s), engine.run(PROMPT, s, details=False)
    assert full.output_token_ids == lean.output_token_ids
    assert lean.rounds[1].drafts[0].candidates == [] and full.rounds[1].drafts[0].candidates  # round 1 drafts none


def test_adaptive_k_is_still_exact_in_greedy(engine):
    trace = engine.run(PROMPT, RunSettings(k=8, temperature=0, max_new_tokens=40, adaptive=True, confidence=0.9,
                                           stop_rule="threshold"),
                       baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids
    assert any(r.k < 8 and r.stop is None for r in trace.rounds)


@pytest.mark.parametrize("kwargs, word", [
    (dict(k=0), "k must"), (dict(k=17), "k must"), (dict(temperature=-0.5), "temperature"),
    (dict(top_p=0.0), "top_p"), (dict(top_k=-2), "top_k"), (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(seed=-1), "seed"), (dict(k="4"), "k must"),
])
def test_bad_settings(kwargs, word):
    with pytest.raises(ValueError, match=word):
        RunSettings(**kwargs)


def test_bad_prompts(engine):
    with pytest.raises(ValueError, match="prompt is empty"):
        engine.start("   ", RunSettings())
    with pytest.raises(ValueError, match="context"):
        engine.start(PROMPT, RunSettings(max_new_tokens=250))


def test_a_run_given_the_prompts_ids_tokenises_nothing_again(engine, monkeypatch):
    settings = RunSettings(k=3, temperature=0, max_new_tokens=12)
    ids = engine.encode(PROMPT, settings)  # as Generate checks the prompt before its GPU call
    expected = engine.run(PROMPT, settings)
    monkeypatch.setattr(engine, "encode", lambda *_: pytest.fail("the prompt was tokenised again"))
    run = engine.start(PROMPT, settings, prompt_ids=ids)
    for _ in run:
        pass
    assert run.prompt_ids == ids and run.trace().output_token_ids == expected.output_token_ids


def test_prompt_lookup_drafter_is_exact_and_copies(engine):
    prompt = "ab ab ab ab ab ab"  # the tiny target's first token is not EOS, and its text repeats
    s = RunSettings(k=4, temperature=0, max_new_tokens=30, drafter="lookup", chat=False)
    trace = engine.run(prompt, s, baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids
    assert trace.draft_model == "prompt lookup"
    drafted = [d for r in trace.rounds for d in r.drafts]
    assert drafted and all(d.q == 1.0 for d in drafted)
    assert all(d.accept_prob == pytest.approx(d.p) for d in drafted if d.accept_prob is not None)
    sampled = engine.run(prompt, RunSettings(k=4, temperature=1.0, seed=2, max_new_tokens=30, drafter="lookup",
                                             chat=False))
    assert sampled.rounds[-1].stop in ("eos", "max_new_tokens")
    assert len(sampled.output_token_ids) == 30 or sampled.output_token_ids[-1] in engine.eos_ids


def test_rounds_can_be_resumed_on_another_thread(engine):
    """Gradio resumes streaming generators on any worker thread: no round may build autograd graphs."""
    import threading

    run = engine.start(PROMPT, RunSettings(k=3, temperature=0.5, max_new_tokens=12))
    rounds = iter(run)
    next(rounds)
    grads = []
    worker = threading.Thread(target=lambda: grads.extend(torch.is_inference_mode_enabled() for _ in rounds))
    worker.start()
    worker.join()
    assert len(run.rounds) >= 2 and not any(grads)  # nothing leaks to the consumer's thread
    assert run.target_cache.layers[0].keys.requires_grad is False


def test_adaptive_k_stops_when_the_drafts_joint_confidence_falls_below_the_threshold(engine):
    # At temperature 1 with no top-k/top-p, q of a drafted token IS the draft's confidence in it.
    threshold = 0.3
    trace = engine.run(PROMPT, RunSettings(k=8, temperature=1.0, seed=3, max_new_tokens=40, adaptive=True,
                                           confidence=threshold, stop_rule="threshold"))
    early, done = 0, 0
    for r in trace.rounds:
        qs = [d.q for d in r.drafts]
        assert math.prod(qs[:-1]) >= threshold  # it never stops before the product drops
        room = 40 - done - 1 > r.k  # not cut by max_new_tokens
        done += len(r.committed_ids)
        if 0 < r.k < 8 and room and r.drafts[-1].token_id not in trace.eos_token_ids:
            assert math.prod(qs) < threshold  # ... and stops as soon as it does
            early += 1
    assert early > 0


@pytest.mark.parametrize("settings", [RunSettings(k=4, temperature=1.0, seed=6, max_new_tokens=30),
                                      RunSettings(k=3, temperature=0, max_new_tokens=30),
                                      RunSettings(k=4, temperature=1.0, seed=0, max_new_tokens=24, drafter="lookup")])
def test_recorded_cache_lengths_are_the_caches_own(engine, settings):
    """Each round's four lengths per model; after the round they are read back from the live caches."""
    run = engine.start(PROMPT, settings)
    committed = len(run.prompt_ids)
    for rnd in run:
        d, t = rnd.cache.draft, rnd.cache.target
        assert [d[3], t[3]] == [run.draft_cache.get_seq_length(), run.target_cache.get_seq_length()]
        assert t[3] == len(run.ids) - 1  # the committed sequence but its last token, which the next round feeds
        assert t[1] == t[0] and d[2] == d[1]  # drafting leaves the target alone, verifying the draft
        assert t[2] == committed + rnd.k  # the verify pass caught up and scored every draft
        if settings.drafter == "model" and rnd.k:
            assert d[1] == committed + rnd.k - 1  # the draft never ran on its own last draft
        if settings.drafter == "lookup":
            assert d == [0, 0, 0, 0]  # no draft model, no draft cache
        committed += rnd.tokens_this_pass
    assert any(r.cache.target[2] > r.cache.target[3] for r in run.rounds)  # some rounds rolled back


def test_the_baseline_times_every_step(engine):
    b = engine.baseline(PROMPT, RunSettings(k=4, temperature=0, max_new_tokens=12))
    assert len(b.step_times_s) == len(b.output_token_ids) and b.step_times_s[0] == b.first_token_time_s
    assert sum(b.step_times_s) == pytest.approx(b.total_time_s, rel=0.05)


def test_round_one_is_the_targets_prefill_and_the_draft_reads_the_prompt_in_round_two(engine):
    """The first token comes from the target's prompt logits alone (what target-only decoding's first step gives),
    and the draft's prompt encoding is left out of the draft's step time."""
    s = RunSettings(k=3, temperature=0, max_new_tokens=20)
    trace = engine.run(PROMPT, s, baseline=True)
    first, second = trace.rounds[0], trace.rounds[1]
    n = len(trace.prompt_token_ids)
    assert first.k == 0 and first.next_kind == BONUS and first.committed_ids == trace.baseline.output_token_ids[:1]
    assert first.cache.draft == [0, 0, 0, 0] and first.cache.target == [0, 0, n, n]
    assert second.cache.draft[:2] == [0, n + 1 + second.k - 1]  # prompt + token 1, then k - 1 more steps
    assert trace.summary.first_token_time_s == first.draft_time_s + first.verify_time_s
    later = trace.rounds[2:]
    draft, _ = step_times(trace.rounds)
    assert draft == pytest.approx(sum(r.draft_time_s for r in later) / sum(r.k for r in later))


@pytest.mark.parametrize("drafter", ["lookup", "heads"])
def test_a_drafter_without_a_cache_of_its_own_has_every_rounds_draft_time_counted(engine, drafter):
    """Prompt lookup and Medusa heads keep no draft cache (its lengths stay 0), so no round's draft read the prompt:
    the draft's time per drafted token is every drafting round's after the first (once it was lost, and the bench
    printed c = 0 for them)."""
    from tests.helpers import tiny_heads

    engine.use_trained(tiny_heads(engine.target, n=3))
    trace = engine.run(PROMPT * 3, RunSettings(k=3, temperature=0, max_new_tokens=20, drafter=drafter))
    later = trace.rounds[1:]  # a round that found nothing to copy (k = 0) still spent its search's time
    assert any(r.k for r in later) and all(r.cache.draft == [0, 0, 0, 0] for r in trace.rounds)
    draft, _ = step_times(trace.rounds)
    assert draft == pytest.approx(sum(r.draft_time_s for r in later) / sum(r.k for r in later)) and draft > 0

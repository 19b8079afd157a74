"""train/fit.py, training.py, teacher.py and text.py on a tiny target: the offline text is read from this
machine and split with some held out, the teacher's data is cached on disk and reused, the vocabulary subset keeps
the labels' mass, training (Medusa heads and the EAGLE layer) lowers the loss and raises held-out agreement, and the
trained weights carry their provenance, save, load and draft exactly. (The target's own answers: test_answers.py.)"""

from dataclasses import replace

import pytest
import torch

from harness.tiny_models import char_tokenizer, tiny_model
from specviz.drafters import EAGLE, HEADS
from specviz.engine import Engine, RunSettings
from specviz.engine.eagle import EagleDrafter
from specviz.engine.medusa import MedusaHeads
from specviz.engine.trained import load_trained, save_trained
from specviz.train.text import code_documents, prose_documents, windows
from specviz.train.teacher import Subset, read_teacher, teach
from specviz.train.fit import (TrainPlan, agreement_eagle, agreement_medusa, agreement_of, eagle_loss, fit_eagle,
                               fit_medusa, head_pairs, soft_loss)
from specviz.train.training import train_drafter

pytestmark = pytest.mark.usefixtures("one_thread")

PLAN = TrainPlan(heads=2, tokens=6400, length=64, epochs=4, batch=128, lr=3e-3, top=8, minutes=3.0, negatives=16,
                 prompts=20, answer_batch=10)


@pytest.fixture(scope="module")
def target():
    return tiny_model(seed=5, layers=2)


@pytest.fixture(scope="module")
def teacher(target):
    data = windows(char_tokenizer(), PLAN.tokens, PLAN.length, PLAN.holdout)
    return teach(target, data.heldout, PLAN.top), teach(target, data.train, PLAN.top)


def test_the_text_is_code_and_prose_from_this_machine_with_some_held_out():
    assert any("def " in doc for doc in code_documents(20)) and len(prose_documents(5)) == 5
    data = windows(char_tokenizer(), 6400, 64, 10)
    assert len(data.train) == 90 and len(data.heldout) == 10 and all(len(w) == 64 for w in data.train)
    assert data.code_tokens + data.prose_tokens == 6400 and data.code_files and data.prose_packages
    said = data.describe(64, 10)
    assert "Python standard library modules" in said and "installed packages" in said and "every 10th" in said


def test_the_teacher_keeps_each_positions_feature_token_and_top_labels(target, teacher):
    held, train = teacher
    assert train.hidden.shape == (90, 64, 64) and train.tokens.shape == (90, 64) and train.ids.shape == (90, 64, 8)
    window = train.tokens[0][None]
    with torch.no_grad():
        states = target.model(input_ids=window).last_hidden_state[0]
        top = target.lm_head(states).argmax(-1)
    assert torch.allclose(train.hidden[0].float(), states, atol=0.05)  # bfloat16 on disk and in memory
    assert torch.equal(train.ids[0, :, 0], top) and torch.allclose(train.probs.float().sum(-1), torch.ones(90, 64),
                                                                   atol=1e-2)


def test_the_teachers_data_is_cached_and_only_what_is_missing_is_read(target, tmp_path):
    data = windows(char_tokenizer(), 3200, 64, 10)
    first = read_teacher(target, "fp", data.heldout, data.train, 10, 8, tmp_path)
    assert (first.cached_windows, first.read_windows) == (0, 50)
    more = windows(char_tokenizer(), 6400, 64, 10)  # twice the text: the first half comes from disk
    second = read_teacher(target, "fp", more.heldout, more.train, 10, 8, tmp_path)
    assert (second.cached_windows, second.read_windows) == (50, 50)
    assert torch.equal(second.train.hidden[:45], first.train.hidden) and len(second.train) == 90
    again = read_teacher(target, "fp", more.heldout, more.train, 10, 8, tmp_path)
    assert (again.cached_windows, again.read_windows) == (100, 0)
    other = read_teacher(target, "another target", data.heldout, data.train, 10, 8, tmp_path)
    assert other.cached_windows == 0  # another fingerprint: nothing reused
    late = read_teacher(target, "late", more.heldout, more.train, 10, 8, None, deadline=0, held_deadline=0)
    assert (len(late.held), len(late.train)) == (1, 1)  # past both deadlines: one window of each, no more


def test_the_subset_keeps_the_labels_with_most_mass_and_maps_them(teacher):
    _, train = teacher
    full = Subset.of([train], 10_000)
    assert len(full) == full.seen and full.mass == pytest.approx(1.0)
    small = Subset.of([train], 5)
    assert len(small) == 5 and 0 < small.mass < 1 and small.seen == full.seen
    pos, p = small.labels(train.ids[:2], train.probs[:2], 82)
    assert torch.equal(small.ids[pos][p > 0], train.ids[:2][p > 0])  # a kept label points at its own token
    assert torch.allclose(p.sum(-1)[p.sum(-1) > 0], torch.ones(1), atol=1e-5)


def medusa_loss(heads, teacher, subset) -> float:
    rows, total = subset.rows(heads.lm_head), 0.0
    with torch.no_grad():
        for i, block in enumerate(heads.blocks):
            h, ids, probs = head_pairs(teacher, i)
            labels = subset.labels(ids, probs, heads.lm_head.weight.shape[0])
            total += float(soft_loss(block(h.float()) @ rows.T, *labels))
    return total / heads.n


def test_medusa_training_lowers_the_loss_and_raises_held_out_agreement(target, teacher):
    held, train = teacher
    subset = Subset.of([train], 32)
    heads = MedusaHeads(target, PLAN.heads)
    heads.blocks.float()
    loss0, before = medusa_loss(heads, train, subset), agreement_medusa(heads, held).each
    fitted = fit_medusa(heads, train, subset, PLAN)
    after = agreement_medusa(heads, held).each
    print(f"loss {loss0:.3f} -> {medusa_loss(heads, train, subset):.3f}; agreement {before} -> {after}")
    assert fitted.steps == 4 * 44 and medusa_loss(heads, train, subset) < 0.9 * loss0
    assert all(a > b + 0.03 for a, b in zip(after, before))


def test_eagle_training_lowers_the_loss_and_raises_held_out_agreement(target, teacher):
    held, train = teacher
    subset = Subset.of([train], 32)
    eagle = EagleDrafter(target, 2)
    eagle.layer.float()
    rows, every = subset.rows(eagle.lm_head), torch.arange(len(train))
    with torch.no_grad():
        loss0 = float(eagle_loss(eagle, train, every, rows, subset, None))
    before = agreement_eagle(eagle, held).each
    fitted = fit_eagle(eagle, train, subset, replace(PLAN, epochs=6))
    with torch.no_grad():
        loss1 = float(eagle_loss(eagle, train, every, rows, subset, None))
    after = agreement_eagle(eagle, held).each
    print(f"EAGLE loss {loss0:.3f} -> {loss1:.3f}; agreement {before} -> {after}")
    assert fitted.steps == 6 * 45 and loss1 < 0.8 * loss0
    assert after[0] > before[0] + 0.03 and after[1] > before[1]


def test_an_untrained_eagle_layer_is_checked_as_the_targets_own_next_guess(target, teacher):
    """Step 1 of an untrained layer reads back f_{a−1}, whose top token is x_a's guess: its agreement with the
    target's top token at a is what a Medusa head starts at (both guess the token after the newest)."""
    held, _ = teacher
    eagle, heads = EagleDrafter(target, 1), MedusaHeads(target, 1)
    assert agreement_eagle(eagle, held, most=10_000).each[0] == pytest.approx(
        _medusa_on_anchors(heads, held), abs=1e-9)


def _medusa_on_anchors(heads, held) -> float:
    from specviz.engine.eagle import WINDOW
    hits = n = 0
    with torch.no_grad():
        for w in range(len(held)):
            for a in range(WINDOW, held.tokens.shape[1]):
                hits += int(heads.head(0, held.hidden[w, a - 1].float()).argmax() == held.ids[w, a, 0])
                n += 1
    return hits / n


@pytest.mark.parametrize("kind, spec", [("medusa", HEADS), ("eagle", EAGLE)])
def test_trained_weights_record_where_they_come_from_and_draft_exactly(target, tmp_path, tokenizer, kind, spec):
    seen = []
    heads, provenance = train_drafter(target, char_tokenizer(), "tiny", replace(PLAN, kind=kind, epochs=1),
                                    lambda phase, done, left: seen.append((phase, done, left)), tmp_path / "teacher")
    # 20 prompts (2 held out) answered in 64 tokens each, then 100 windows of offline text (10 held out)
    assert provenance.kind == kind and provenance.train_tokens == (18 + 90) * 64
    assert provenance.heldout_tokens == (2 + 10) * 64 and "own answers to 20 prompts" in provenance.data
    assert provenance.steps == (53 if kind == "medusa" else 54) and len(provenance.agreement) == 2  # 108 windows
    assert all(0 <= a <= 1 for a in provenance.agreement + provenance.untrained + provenance.chain)
    assert provenance.chain[1] <= provenance.chain[0] and 1 <= provenance.tree <= 3 and provenance.subset > 0
    assert set(provenance.phases) >= {"teacher", "fit", "check", "answers"}
    assert provenance.phases["teacher_windows_read"] == 100 and provenance.phases["answers_given"] == 20
    assert seen[-1][1] == 1.0 and seen[-1][2] == 0 and any("target reads" in s[0] for s in seen)
    assert any("target answers" in s[0] for s in seen)
    assert not any(p.requires_grad for p in target.parameters())  # the target stayed frozen
    assert (tmp_path / "teacher" / "teacher.safetensors").is_file()
    assert (tmp_path / "teacher" / "answers.safetensors").is_file()
    loaded = load_trained(save_trained(heads, provenance, tmp_path / kind), target, "tiny")
    assert type(loaded) is type(heads) and loaded.n == 2
    engine = Engine(tiny_model(seed=9), target, tokenizer, target_name="tiny")
    engine.use_trained(loaded)
    trace = engine.run("def fib(n):", RunSettings(drafter=spec.key, temperature=0, max_new_tokens=24), baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids


def test_too_little_to_train_on_is_a_sentence(target):
    with pytest.raises(ValueError, match="too little to train on within the time bound: 0 training and 0 held-out"):
        train_drafter(target, char_tokenizer(), "tiny", replace(PLAN, prompts=0, tokens=64 * 5))


def test_a_chain_counts_a_draft_only_after_every_one_before_it_and_a_tree_its_candidates():
    hits = torch.tensor([[1, 1, 0], [1, 0, 1], [0, 1, 1], [1, 1, 1]], dtype=torch.bool)
    in_tree = torch.tensor([[1, 1, 1], [1, 1, 1], [1, 1, 0], [1, 1, 1]], dtype=torch.bool)
    got = agreement_of(hits, in_tree)
    assert got.each == [0.75, 0.75, 0.75] and got.chain == [0.75, 0.5, 0.25]  # head 3 right 3 times, reached once
    assert got.chain_tokens == pytest.approx(2.5) and got.tree == pytest.approx(1 + 1 + 1 + 0.75)


def test_an_unknown_kind_is_a_sentence(target):
    with pytest.raises(ValueError, match="must be one of medusa, eagle, got 'hydra'"):
        train_drafter(target, char_tokenizer(), "tiny", replace(PLAN, kind="hydra"))


def test_each_kind_reads_until_its_own_shares_unless_told():
    """The EAGLE layer fits longer than the heads (its steps cost more); a share given is kept for either kind."""
    from specviz.drafters.trained import EAGLE as LAYER, MEDUSA
    from specviz.train.fit import SHARES

    assert TrainPlan().shares == SHARES[MEDUSA] and TrainPlan(kind=LAYER).shares == SHARES[LAYER]
    assert SHARES[LAYER][0] < SHARES[MEDUSA][0]
    assert replace(TrainPlan(), kind=LAYER).shares == SHARES[LAYER]  # none were given: the new kind's
    assert TrainPlan(kind=LAYER, answers_share=0.5).shares == (0.5, SHARES[LAYER][1])

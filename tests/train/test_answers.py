"""train/prompts.py, answers.py and text.py's course folder: the prompts are of the page's kinds and never its own,
the target's answers keep what the teacher needs (each position's feature, token and next-token distribution, the
same as the target reading the answer back, padding or not), answers are cached and continued, and a course's folder
is refused in a sentence where it cannot be read."""

from pathlib import Path

import pytest
import torch

from harness.tiny_models import char_tokenizer, tiny_model
from specviz.settings.prompts import BENCH_PROMPTS, EXAMPLE_PROMPTS
from specviz.train.answers import answer, read_answers
from specviz.train.prompts import Prompt, training_prompts
from specviz.train.text import check_text_folder, windows

pytestmark = pytest.mark.usefixtures("one_thread")
PROMPTS = [Prompt("code", "def fib(n):"), Prompt("story", "Once upon a time"), Prompt("json", "{"),
           Prompt("question", "What is a list?")]


@pytest.fixture(scope="module")
def target():
    return tiny_model(seed=3)


def test_the_prompts_are_of_the_pages_kinds_made_here_and_never_the_pages_own():
    prompts = training_prompts(200)
    assert len(prompts) == 200 and {p.kind for p in prompts} == {"code", "question", "story", "json", "rewrite"}
    assert {p.kind for p in prompts[:10]} == {"code", "question", "story", "json", "rewrite"}  # taking turns
    own = {*EXAMPLE_PROMPTS.values(), *(p for ps in BENCH_PROMPTS.values() for p in ps)}
    assert not own & {p.text for p in training_prompts(10_000)}
    assert training_prompts(50) == training_prompts(200)[:50]  # the same order every time
    assert any("def " in p.text for p in prompts if p.kind == "rewrite")


@pytest.mark.parametrize("batch", [1, 3])
def test_each_answer_keeps_what_the_target_computes_reading_it_back(target, batch):
    """Left padding or not, each position's feature and top tokens are the target's own on prompt + answer."""
    tokenizer = char_tokenizer()
    got = answer(target, tokenizer, PROMPTS[:3], length=12, top=4, batch=batch, eos_ids={0})
    assert got.tokens.shape == (3, 12) and got.hidden.shape == (3, 12, 64) and got.ids.shape == (3, 12, 4)
    for k, prompt in enumerate(PROMPTS[:3]):
        ids = tokenizer(prompt.text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            states = target.model(input_ids=torch.tensor([ids + got.tokens[k].tolist()])).last_hidden_state[0, len(ids):]
            top = target.lm_head(states).topk(4).indices
        assert torch.allclose(got.hidden[k].float(), states, atol=0.05)  # kept in bfloat16
        assert torch.equal(got.ids[k], top) and (got.tokens[k] != 0).all()  # the end of text is never taken


def test_answers_are_cached_and_continued(target, tmp_path):
    tokenizer = char_tokenizer()
    first = read_answers(target, tokenizer, "fp", PROMPTS[:1], PROMPTS[1:3], 8, 4, 2, {0}, tmp_path)
    assert (first.cached, first.answered, len(first.held), len(first.train)) == (0, 3, 1, 2)
    again = read_answers(target, tokenizer, "fp", PROMPTS[:1], PROMPTS[1:3], 8, 4, 2, {0}, tmp_path)
    assert (again.cached, again.answered) == (3, 0) and torch.equal(again.train.tokens, first.train.tokens)
    other = read_answers(target, tokenizer, "another target", PROMPTS[:1], PROMPTS[1:3], 8, 4, 2, {0}, tmp_path)
    assert other.cached == 0


def test_a_courses_folder_is_read_first(tmp_path):
    (tmp_path / "notes.md").write_text("Speculative decoding drafts tokens and verifies them. " * 40)
    assert check_text_folder(tmp_path) == tmp_path
    data = windows(char_tokenizer(), 64 * 20, 64, 10, tmp_path)
    assert data.course_files == 1 and data.course_tokens > 0 and "1 files of the course's own text" in \
        data.describe(64, 10)


@pytest.mark.parametrize("make, words", [
    (lambda d: d / "nope", "no such folder"),
    (lambda d: (d / "f.txt").write_text("x") and d / "f.txt", "not a folder"),
    (lambda d: d, "no text files in it"),
    (lambda d: (d / "a.txt").write_bytes(b"\x00\x01\x02") and d, r"a.txt is not text \(a binary file\)"),
    (lambda d: (d / "b.md").write_bytes("é".encode("latin-1")) and d, "b.md is not UTF-8 text"),
])
def test_a_folder_that_cannot_be_read_is_refused_in_a_sentence(tmp_path, make, words):
    with pytest.raises(ValueError, match=words):
        check_text_folder(make(tmp_path))


def test_a_folder_too_large_for_the_time_bound_is_refused(tmp_path, monkeypatch):
    from specviz.train import text
    monkeypatch.setattr(text, "MAX_FOLDER_BYTES", 100)
    (tmp_path / "big.txt").write_text("x" * 200)
    with pytest.raises(ValueError, match="more than a training reads in its time bound"):
        check_text_folder(Path(tmp_path))

def test_a_later_training_past_its_deadlines_answers_nothing_more(target, tmp_path):
    """One batch at least is answered only where none is saved: a later training whose deadlines have passed reads
    what is saved and spends no time on one more batch of either part."""
    tokenizer = char_tokenizer()
    first = read_answers(target, tokenizer, "fp", PROMPTS[:2], PROMPTS[2:], 8, 4, 1, {0}, tmp_path,
                         held_deadline=0.0, deadline=0.0)  # past at once: one batch of one each, as none was saved
    assert (first.answered, len(first.held), len(first.train)) == (2, 1, 1)
    later = read_answers(target, tokenizer, "fp", PROMPTS[:2], PROMPTS[2:], 8, 4, 1, {0}, tmp_path,
                         held_deadline=0.0, deadline=0.0)
    assert (later.cached, later.answered, len(later.held), len(later.train)) == (2, 0, 1, 1)

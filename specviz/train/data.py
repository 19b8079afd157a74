"""What a training learns from, gathered within its time bound: the target's own answers first (answers.py, to
prompts of the page's kinds, prompts.py), then offline text from this machine (text.py: library source and package
descriptions, and a course's own files with `--text FOLDER`), each read by the target once and kept beside the model
cache; every `holdout`-th prompt's answer and text window held out, and gathered first.

Why answers first: a head drafts what this target says to the prompts the page asks, and its own answers are that
text (the offline text is the target reading, not writing: what it would say next there is a guess at a library's
source). Why offline text too: a course's files, and a little variety the prompts lack.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

from specviz.train.answers import read_answers
from specviz.train.prompts import training_prompts
from specviz.train.teacher import Report, Teacher, cat_teachers, read_teacher
from specviz.train.text import windows


@dataclass
class TeacherData:
    """The held-out and training data of one training, and how it came, for its provenance."""

    held: Teacher
    train: Teacher
    described: str  # what it is, in words
    answer_tokens: int  # positions of the target's own answers (held-out ones included)
    text_tokens: int  # positions of offline text
    phases: dict  # seconds and counts: answers, text


def teacher_data(target, tokenizer, fingerprint: str, plan, eos_ids: set[int], folder: Path | None,
                 report: Report | None, start: float) -> TeacherData:
    """The answers until the plan's answers share of the bound (held-out prompts until plan.held_share), then the
    offline text until its teacher share (TrainPlan.shares); everything read before for this target is reused from
    `folder`."""
    bound, (answers_share, teacher_share) = plan.minutes * 60, plan.shares
    prompts = training_prompts(plan.prompts)
    held_prompts = prompts[plan.holdout - 1::plan.holdout]
    train_prompts = [p for i, p in enumerate(prompts) if i % plan.holdout != plan.holdout - 1]
    answers = read_answers(target, tokenizer, fingerprint, held_prompts, train_prompts, plan.length, plan.top,
                           plan.answer_batch, eos_ids, folder, report, start + plan.held_share * bound,
                           start + answers_share * bound)
    t_text = time.perf_counter()
    text = windows(tokenizer, plan.tokens, plan.length, plan.holdout, plan.text)
    read = read_teacher(target, fingerprint, text.heldout, text.train, plan.holdout, plan.top, folder, report,
                        start + teacher_share * bound, math.inf) if text.train and text.heldout else None
    held = cat_teachers(answers.held, read.held) if read else answers.held
    train = cat_teachers(answers.train, read.train) if read else answers.train
    answer_tokens = answers.held.positions + answers.train.positions
    text_tokens = (read.held.positions + read.train.positions) if read else 0
    kinds = sorted({p.kind for p in prompts[:len(answers.held) * plan.holdout + len(answers.train)]})
    described = (f"the target's own answers to {len(answers.held) + len(answers.train)} prompts of the page's kinds "
                 f"({', '.join(kinds)}; made from offline material, half answered greedily, half sampled at its "
                 f"default temperature), {plan.length} tokens each: {answer_tokens:,} tokens; then "
                 + (text.describe(plan.length, plan.holdout) + f": {text_tokens:,} tokens read" if read else
                    "no offline text (none fitted the time bound)"))
    phases = {"answers": round(answers.seconds, 1), "answers_given": answers.answered,
              "answers_cached": answers.cached, "text": round(time.perf_counter() - t_text, 1),
              "teacher_windows_read": read.read_windows if read else 0,
              "teacher_windows_cached": read.cached_windows if read else 0}
    return TeacherData(held, train, described, answer_tokens, text_tokens, phases)

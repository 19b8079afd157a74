"""The target's own answers, as the teacher's text: what drafting heads learn from first. Medusa and EAGLE train on
the backbone's own generated answers (self-distillation, NOTES §7): a head learns to guess what this target says to
the kind of prompt it is then asked, not what a library's source says.

    answers = answer(target, tokenizer, prompts, length=128, top=32, batch=16, report=..., deadline=...)

The target answers a batch of prompts at once (chat template on; left-padded, so every row's next token is the last
column): one pass a token for the whole batch, which on a CPU costs little more than one row (the weights are read
once a pass). Every other batch answers greedily, the rest sampled (the page's default temperature): the page asks
both. While it answers, what the teacher needs is kept as it goes, with no second pass: at each answer position the
feature its LM head read (after the final norm), the token there, and its next-token distribution as its top `top`
tokens (teacher.Teacher). The end of an answer is not taken (its end-of-text tokens' probability is 0 when choosing),
so every answer fills its `length` positions; the distributions kept are the target's own, end-of-text included.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from specviz.algorithm.sampling import SamplingSettings, sample, warp
from specviz.settings import defaults
from specviz.train.prompts import Prompt
from specviz.train.teacher import Report, Teacher, cat_teachers, empty_teacher, load_parts, save_parts

SAMPLED = SamplingSettings(temperature=defaults.TEMPERATURE)  # every other batch: as the page samples by default
GREEDY = SamplingSettings(temperature=0.0)


def answer(target, tokenizer, prompts: list[Prompt], length: int, top: int, batch: int, eos_ids: set[int],
           report: Report | None = None, deadline: float = math.inf, seed: int = 0,
           phase: str = "target answers", at_least_one: bool = True) -> Teacher:
    """The target's answers to `prompts` in batches of `batch` (stops before `deadline`, having answered one batch
    at least unless not `at_least_one`): a window of `length` positions per answer."""
    gen = torch.Generator().manual_seed(seed)
    parts, t0, batches = [], time.perf_counter(), math.ceil(len(prompts) / batch)
    for b in range(batches):
        if (parts or not at_least_one) and time.perf_counter() > deadline:
            break
        chunk = prompts[b * batch:(b + 1) * batch]

        def tick(done: int, b: int = b) -> None:  # a position of every answer of batch b is done
            if report:
                spent, part = time.perf_counter() - t0, (b + done / length) / batches
                report(f"{phase} {len(prompts)} prompts", part, spent / max(part, 1e-9) * (1 - part))
        parts.append(answer_batch(target, tokenizer, chunk, length, top, GREEDY if b % 2 == 0 else SAMPLED, eos_ids,
                                  gen, tick))
    if not parts:
        return empty_teacher(length, target.config.hidden_size, top)
    return Teacher(*(torch.cat([getattr(p, name) for p in parts]) for name in ("hidden", "tokens", "ids", "probs")))


def answer_batch(target, tokenizer, prompts: list[Prompt], length: int, top: int, sampling: SamplingSettings,
                 eos_ids: set[int], gen: torch.Generator, tick=None) -> Teacher:
    """One batch's answers: per answer `length` positions of (token, feature, the next token's top distribution)."""
    from transformers import DynamicCache

    device = next(p for p in target.parameters()).device
    ids, mask = _left_padded(tokenizer, prompts, device)
    cache = DynamicCache()
    hidden, tokens, top_ids, top_probs = [], [], [], []
    with torch.inference_mode():
        state = _step(target, ids, mask, cache)
        for _ in range(length + 1):
            logits = target.lm_head(state).float()  # (B, V): the distribution after the newest token
            if tokens:  # the newest token's position is complete: its feature and what the target says next
                p = torch.softmax(logits, -1)
                values, index = torch.topk(p, top, dim=-1)
                hidden.append(state.to("cpu", torch.bfloat16))
                top_ids.append(index.cpu())
                top_probs.append((values / values.sum(-1, keepdim=True)).half().cpu())
            if tick:
                tick(len(tokens))
            if len(tokens) == length:
                break
            logits[:, sorted(eos_ids)] = -math.inf  # the answer goes on: every window is full
            token = sample(warp(logits.cpu(), sampling), gen) if sampling.temperature > 0 else logits.argmax(-1).cpu()
            tokens.append(token)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            state = _step(target, token[:, None].to(device), mask, cache)
    return Teacher(torch.stack(hidden, 1), torch.stack(tokens, 1), torch.stack(top_ids, 1), torch.stack(top_probs, 1))


def _left_padded(tokenizer, prompts: list[Prompt], device) -> tuple[torch.Tensor, torch.Tensor]:
    """The prompts in the chat template, padded on the left to one length: (ids, attention mask), (B, L)."""
    rows = []
    for prompt in prompts:
        if getattr(tokenizer, "chat_template", None):  # as the page asks: the chat template on
            ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt.text}], add_generation_prompt=True,
                                                tokenize=True)
            ids = ids["input_ids"] if hasattr(ids, "keys") else ids
        else:
            ids = tokenizer(prompt.text, add_special_tokens=False)["input_ids"]
        rows.append(list(ids))
    width, pad = max(map(len, rows)), 0  # a pad is masked out, so any id the embedding holds will do (a tokenizer's
    #                                      own pad id may be one it added past the model's vocabulary)
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=device)
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=device)
    return ids, mask


def _step(target, ids: torch.Tensor, mask: torch.Tensor, cache) -> torch.Tensor:
    """Feed ids (B, n) after the cache; the last position's feature (B, H), what the LM head reads."""
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1]:]
    out = target.model(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True)
    return out.last_hidden_state[:, -1]


# --- kept beside the model cache ---------------------------------------------------------------------------------

ANSWERS_FILE = "answers.safetensors"


@dataclass
class AnswersRead:
    """The answers a training learns from, and how they came: answered now or read from the disk cache."""

    held: Teacher
    train: Teacher
    cached: int  # answers taken from the disk cache
    answered: int  # answers the target gave now
    seconds: float  # the time it spent answering them


def read_answers(target, tokenizer, fingerprint: str, held: list[Prompt], train: list[Prompt], length: int, top: int,
                 batch: int, eos_ids: set[int], folder: Path | None, report: Report | None = None,
                 held_deadline: float = math.inf, deadline: float = math.inf) -> AnswersRead:
    """The target's answers to the held-out prompts (until `held_deadline`, one batch at least where none are saved),
    then to the training prompts (until `deadline`, likewise); the answers saved in `folder` before, to the same prompts in the same order, are
    reused, and what was answered now is saved there (None: no disk cache), so a later training answers on."""
    key = {"target": fingerprint, "length": length, "top": top, "held": _hashes(held), "train": _hashes(train)}
    cached = _cached(folder, key, length, target.config.hidden_size, top)
    t0, parts = time.perf_counter(), {}
    for part, prompts, until in (("held", held, held_deadline), ("train", train, deadline)):
        have = cached[part]
        new = answer(target, tokenizer, prompts[len(have):], length, top, batch, eos_ids, report, until, seed=len(have),
                     phase=f"target answers {'held-out ' if part == 'held' else ''}prompts",
                     at_least_one=not len(have)) \
            if len(have) < len(prompts) else empty_teacher(length, target.config.hidden_size, top)
        parts[part] = cat_teachers(have, new)
    answered = len(parts["held"]) + len(parts["train"]) - len(cached["held"]) - len(cached["train"])
    if folder is not None and answered:
        save_parts(folder, ANSWERS_FILE, {**key, "answered": {p: len(t) for p, t in parts.items()}}, parts)
    return AnswersRead(parts["held"], parts["train"], len(cached["held"]) + len(cached["train"]), answered,
                       time.perf_counter() - t0)


def _hashes(prompts: list[Prompt]) -> str:
    """One hash of the prompts' texts in order (the cache holds answers to exactly these)."""
    return hashlib.sha256("\x00".join(p.text for p in prompts).encode()).hexdigest()[:16]


def _cached(folder: Path | None, key: dict, length: int, hidden: int, top: int) -> dict[str, Teacher]:
    """The answers saved under `key` (whatever how many were answered then), else empty ones."""
    empty = empty_teacher(length, hidden, top)
    if folder is None:
        return {"held": empty, "train": empty}
    try:
        meta = json.loads((Path(folder) / (ANSWERS_FILE + ".json")).read_text())
    except (OSError, ValueError):
        return {"held": empty, "train": empty}
    found = load_parts(folder, ANSWERS_FILE, meta, ("held", "train")) \
        if isinstance(meta, dict) and {k: meta.get(k) for k in key} == key else None
    return {"held": found[0], "train": found[1]} if found else {"held": empty, "train": empty}

"""The chat template's opening: the tokens every chat prompt begins with, read by each model once, not by every run.

A chat prompt is the template's system message and the user turn's header, then the user's text: for the packaged
pair 24 tokens the same for every prompt, of the benchmark prompts' 40–45. Each model's cache of those 24 is made
the first time a run needs it and copied into each run's fresh cache (`Openings.fresh`), and the run's passes feed
the rest of the prompt: the target's prefill in round 1, the draft's catch-up in round 2. On a path whose rows are
their own (the CPU's exact paths), a cached position's keys and values are the bits the whole prompt's pass gives
them, so nothing a run outputs changes: measured on the packaged target on gguf-int4, both bench prompts, the first
token's logits and the next step's equal to the bit (tests/engine/test_opening.py holds it on the tiny pair). What
changes is time: the target's prefill of a 42-token prompt read 18 tokens, not 42.

It holds nothing of anyone's text: the opening is what the template puts before any user's words, found by
encoding two different messages and keeping the tokens they share (`opening_of`), so no run's prompt is kept for,
or reaches, another. A prompt that does not begin with it (no chat template, `chat` off) runs as before, and so do
drafters that read the target's states of every prompt position (Medusa heads, the EAGLE layer: Engine._opening).
"""

from __future__ import annotations

import copy
from typing import Callable

import torch

from specviz.engine.decoding import forward

PROBES = ("a", "Z 9")  # two user messages with nothing in common: what their chat prompts share is the template's


def opening_of(tokenizer) -> list[int]:
    """The ids every chat prompt of this tokenizer begins with, before the user's text; [] without a template."""
    if not getattr(tokenizer, "chat_template", None):
        return []
    prompts = [_chat_ids(tokenizer, text) for text in PROBES]
    shared = 0
    while all(shared < len(p) for p in prompts) and len({p[shared] for p in prompts}) == 1:
        shared += 1
    return prompts[0][:shared]


def _chat_ids(tokenizer, text: str) -> list[int]:
    ids = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                        tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def copied(cache):
    """A cache of its own with the same positions: a LeanCache copies its tensors (not its decoder, which holds the
    model); transformers' caches are deep copies."""
    return cache.copy() if hasattr(cache, "copy") else copy.deepcopy(cache)


class Openings:
    """The template's opening and each model's cache of it, made on first use: at most one per model the engine
    runs (the target, and each drafter model it has made), a few MB each (the packaged target's: 1.4 MB)."""

    def __init__(self, opening: list[int]):
        self.ids = list(opening)
        self._caches: dict[int, tuple[object, object]] = {}  # id(model) -> (model, its cache of the opening)

    def fresh(self, model, new_cache: Callable[[], object], prompt_ids: list[int]):
        """A new cache for `model` (made by `new_cache`) holding the opening, where `prompt_ids` begin with it; else
        an empty one."""
        if model is None or not self.held(prompt_ids):
            return new_cache()
        with torch.inference_mode():  # as a round's passes run
            kept = self._caches.get(id(model))
            if kept is None or kept[0] is not model:
                cache = new_cache()
                forward(model, self.ids, cache, 1)
                kept = self._caches[id(model)] = (model, cache)
            return copied(kept[1])

    def held(self, prompt_ids: list[int]) -> int:
        """How many of these prompt ids a fresh cache holds already: the opening's length, or 0."""
        n = len(self.ids)
        return n if n and prompt_ids[:n] == self.ids and len(prompt_ids) > n else 0

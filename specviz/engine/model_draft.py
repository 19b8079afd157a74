"""Drafting with a draft model, a chain of steps: the one loop a run alone (chain.py, a batch of one row) and a batch
of users (batched.py, a row a sequence) both draft with. Each step is one pass of the draft model, and each row's
draft is drawn (algorithm/sampling.draw) from q, that row's logits warped with its own settings, by its own generator:
q is the distribution the draft really came from, which is what the verifier's min(1, p/q) test needs.

What differs stays with the caller: how a step is fed (a run's cache, a batch's slots) and when drafting ends early
(a run alone: an end-of-sequence token, adaptive K, the cost-aware rule; a batch drafts its K in lockstep).
"""

from __future__ import annotations

from typing import Callable

import torch

from specviz.algorithm.sampling import SamplingSettings, draw, warp


def model_chain(step: Callable[[list[list[int]]], torch.Tensor], k: int,
                rows: list[tuple[SamplingSettings, torch.Generator]], vocab: int,
                more: Callable[[], bool] | None = None,
                stop: Callable[[torch.Tensor, list[list[int]]], bool] | None = None,
                ) -> tuple[list[list[int]], list[torch.Tensor]]:
    """Up to k drafts for each row, one draft step each -> (drafts per row, q per row (drafts, vocab)).

    `step(drafts)`: the draft model's logits (rows, vocab) at each row's next position, given its drafts so far.
    `rows`: each row's sampling settings and generator. `more()`, asked before each step: False drafts no more (the
    cost-aware rule's weighing). `stop(logits, drafts)`, asked after each: True ends the drafting there."""
    drafts: list[list[int]] = [[] for _ in rows]
    qs: list[list[torch.Tensor]] = [[] for _ in rows]
    for _ in range(k):
        if more is not None and not more():
            break
        logits = step(drafts)  # (rows, vocab)
        for b, (sampling, generator) in enumerate(rows):
            q = warp(logits[b:b + 1], sampling)  # (1, vocab)
            drafts[b].append(int(draw(q, sampling.greedy, generator)[0]))
            qs[b].append(q[0])
        if stop is not None and stop(logits, drafts):
            break
    return drafts, [torch.stack(q) if q else torch.zeros(0, vocab) for q in qs]

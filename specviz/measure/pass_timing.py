"""Why checking K drafts costs about one step: the target's forward time against how many tokens it reads at once.

A decoding step reads every weight of the model from memory to produce one token; at small batch that read, not
the arithmetic, sets the time. Feeding n tokens at once (K drafts + 1) or b sequences at once reuses each weight
read n or b times, so the time barely grows until the arithmetic catches up with the memory traffic. Then a
verify pass stops being nearly free, and so does speculation. This module measures it on the loaded pair:

    profile = measure_costs(engine)           # tens of seconds on 2 CPU cores (docs/benchmarks.md, "Why it pays")
    profile.v(4)                               # t(5) / t(1): what verifying 4 drafts costs, in one-token steps
    speedup_at_batch(profile, alpha=0.8, k=4, batch=8)

Every pass runs over a cache of `context` tokens (a realistic prefix) that is cropped back after it, so all
passes see the same cache. No gradio, no plots.
"""

from __future__ import annotations

import statistics
import time
from copy import deepcopy

import torch

from specviz.engine.pass_costs import draft_step_times, engine_kernels, time_passes
from specviz.measure.draft_parts import measure_parts
from specviz.settings.bounds import Progress
from specviz.algorithm.theory import expected_tokens_per_pass, round_cost
from specviz.record.cost_profile import CostProfile

NEW_TOKENS = (*range(1, 10), 12, 17)  # n: tokens fed in one target pass (K + 1 for K = 0 … 8, 11, 16)
BATCHES = (1, 2, 4, 8, 16)  # sequences decoded at once, one new token each
WIDE = (32, 64)  # more tokens per pass: a batch's verify pass reads b·(K + 1) of them (beyond: extended)
CONTEXT = 192  # cached tokens under every pass: a prompt and an answer's worth
REPEATS = 3  # timings of each point: the median kept, the least and most as its spread


def speedup_at_batch(profile: CostProfile, alpha: float, k: int, batch: int, tokens: float | None = None) -> float:
    """Predicted speedup of speculative decoding over target-only decoding when `batch` sequences decode at once.

    Target-only, each step costs t_target(b); a speculative round costs K draft steps at batch b and one verify
    pass over b·(K+1) tokens, here estimated by the batch-1 pass over as many tokens (CostProfile.prices_at):

        speedup(b) = E / (K · c_b + v_b(K)),   c_b = t_draft(b) / t_target(b),   v_b(K) = t(b·(K+1)) / t_target(b)

    E, the tokens a sequence gets per round: `tokens` where runs measured it, else E(α, K) of one α for every draft
    position (which overstates it where acceptance falls along a round).
    """
    at = profile.prices_at(batch, k)
    expected = tokens if tokens is not None else expected_tokens_per_pass(alpha, k)
    return expected / round_cost(k, at.c, at.v[k])


def crossover_range(profile: CostProfile, alpha: float, k: int) -> tuple[int | None, int | None]:
    """The crossover at the two ends of the measurement's spread (CostProfile.extreme): (disfavoured, favoured).
    None in a slot: it pays at every measured batch there."""
    return (crossover_batch(profile.extreme(False), alpha, k), crossover_batch(profile.extreme(True), alpha, k))


def crossover_batch(profile: CostProfile, alpha: float, k: int, tokens: float | None = None) -> int | None:
    """The smallest batch size (1 … the largest measured) at which speculation no longer pays (speedup < 1);
    None when it pays at every one. `tokens`: E as runs measured it (speedup_at_batch)."""
    for b in range(1, profile.batches[-1] + 1):
        if speedup_at_batch(profile, alpha, k, b, tokens) < 1:
            return b
    return None


# --- measuring -----------------------------------------------------------------------------------------------

def _random_ids(model, shape: tuple[int, int], seed: int) -> torch.Tensor:
    """Token ids for timing: a pass costs the same whatever the tokens are."""
    return torch.randint(0, model.config.vocab_size, shape, generator=torch.Generator().manual_seed(seed))


def prefill(model, context: int, batch: int = 1):
    """A cache holding `context` tokens for `batch` sequences (encoded once, then repeated)."""
    from transformers import DynamicCache

    device = next(model.parameters()).device
    cache = DynamicCache()
    with torch.inference_mode():
        model(input_ids=_random_ids(model, (1, context), seed=0).to(device), cache=cache, use_cache=True,
              logits_to_keep=1)
    return batched(cache, batch)


def batched(cache, batch: int):
    """A copy of a one-sequence cache repeated for `batch` sequences (the original stays as it is)."""
    if batch == 1:
        return cache
    copy = deepcopy(cache)
    copy.batch_repeat_interleave(batch)
    return copy


def pass_time(model, cache, n_new: int, repeats: int = 1, warm_up: int = 0) -> float:
    """Median seconds of one forward pass over n_new tokens per sequence on top of `cache` (cropped back after
    each pass, so every pass sees the same cache)."""
    return statistics.median(pass_times(model, cache, n_new, repeats, warm_up))


def pass_times(model, cache, n_new: int, repeats: int = 1, warm_up: int = 0) -> list[float]:
    """Seconds of each of `repeats` of transformers' forward passes over n_new tokens per sequence (see pass_time),
    timed by the engine's timer (engine/pass_costs.py's time_passes)."""
    device = next(model.parameters()).device
    batch = cache.layers[0].keys.shape[0]  # (batch, heads, length, dim)
    new = _random_ids(model, (batch, n_new), seed=n_new).to(device)

    def feed(i: int) -> None:  # the same tokens every pass
        # logits for every new token, as the engine's verify pass keeps them (the LM head is no small part)
        model(input_ids=new, cache=cache, use_cache=True, logits_to_keep=n_new)

    with torch.inference_mode():
        return time_passes(feed, cache, device, repeats, warm_up)


def draft_times(engine, cache, batch: int, repeats: int) -> list[float]:
    """Timings of the draft's step at `batch` over `cache` (one sequence's, repeated for the batch). At batch 1 as a run
    pays it: its own draft pass (engine/pass_costs.py's draft_step_times: lean.py's where it applies), the timer the
    load's short measurement prices the cost-aware rule with, so both give one c. At a larger batch transformers'
    forward, as a batched run drafts (engine/batched.py): the lean pass is for one sequence only."""
    if batch == 1:
        return draft_step_times(engine, engine.draft, cache.get_seq_length(), repeats)
    return pass_times(engine.draft, batched(cache, batch), 1, repeats)


def measure_costs(engine, context: int = CONTEXT, tokens: tuple[int, ...] = NEW_TOKENS + WIDE,
                  batches: tuple[int, ...] = BATCHES, repeats: int = REPEATS,
                  progress: Progress | None = None) -> CostProfile:
    """Time the loaded pair: the target over each count of new tokens in `tokens` (by default NEW_TOKENS, 1 to 17,
    then WIDE, 32 and 64), both models at each batch size (the draft's step at batch 1 with the run's own draft pass,
    see draft_times), each point `repeats` times (its median kept, and its least and most in the profile's spread, so
    the readout can say how sure a crossover is), and a draft from the target's own state part by part beside the
    one-token passes just timed (measure/draft_parts.py). Tens of seconds on 2 CPU cores (docs/benchmarks.md, "Why it
    pays", dates each run)."""
    say = progress or (lambda fraction, message: None)
    started, steps = time.perf_counter(), len(tokens) + 2 * len(batches) + 1
    say(0.0, f"encoding a {context}-token context in both models")
    target, draft = prefill(engine.target, context), prefill(engine.draft, context)
    for model, cache in ((engine.target, target), (engine.draft, draft)):
        pass_time(model, cache, 1, repeats=1, warm_up=1)  # the first pass of a shape pays for kernel choice
    runs = {"target_s": [], "target_batch_s": [], "draft_batch_s": []}  # each point's timings
    for i, n in enumerate(tokens):
        say(i / steps, f"target pass over {n} new token{'s' * (n != 1)}")
        runs["target_s"].append(pass_times(engine.target, target, n, repeats))
    for j, b in enumerate(batches):
        say((len(tokens) + 2 * j) / steps, f"target step at batch {b}")
        runs["target_batch_s"].append(runs["target_s"][0] if b == 1 else
                                      pass_times(engine.target, batched(target, b), 1, repeats))
        say((len(tokens) + 2 * j + 1) / steps, f"draft step at batch {b}")
        runs["draft_batch_s"].append(draft_times(engine, draft, b, repeats))
    say((len(tokens) + 2 * len(batches)) / steps, "a draft from the target's own state, part by part")
    parts = measure_parts(engine, context, runs["target_s"][0], runs["draft_batch_s"][0], repeats)
    say(1.0, "measured")
    medians = {name: [statistics.median(times) for times in points] for name, points in runs.items()}
    spread = {name: [(min(times), max(times)) for times in points] for name, points in runs.items()}
    return CostProfile(engine.device, engine.dtype, engine.draft_name, engine.target_name, context, list(tokens),
                       medians["target_s"], list(batches), medians["target_batch_s"], medians["draft_batch_s"],
                       time.perf_counter() - started, repeats=repeats, spread=spread if repeats > 1 else {},
                       parts=parts, kernels=engine_kernels(engine),
                       kernels_why=getattr(engine, "dtype_why", ""))

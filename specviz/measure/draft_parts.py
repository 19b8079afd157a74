"""What a draft read from the target's own hidden state costs, part by part, on the loaded target: a Medusa head's block
(hidden × hidden), the shared output layer every head reads out through (vocabulary × hidden: 151936 × 1536, 233 M
weights, for the packaged target), all the default heads at once, and an EAGLE-style layer (one decoder layer of
the target's shape on one new position over a cached context), beside a one-token target pass and a draft-model step.

    parts = measure_parts(engine, 192, t1_times, draft_times)   # seconds: beside passes timed in the same run
    parts.heads_s / parts.target_step_s     # what a draft of every head costs, in one-token target steps

A part's time does not depend on its weights, so untrained heads (engine/medusa.MedusaHeads: W = 0) and a random
layer stand in for trained ones, on the target's own output layer, dtype and device. The Costs tab's measurement
(pass_timing.measure_costs) times these with the rest; recorded_costs.record_parts adds them to the shipped recording
alone.
"""

from __future__ import annotations

import copy
import os
import statistics
import time

import torch

from specviz.models.kernels import activations, put_linears_on
from specviz.engine.medusa import MedusaHeads
from specviz.engine.readout import SUBSET_SIZES
from specviz.models.machine import machine
from specviz.models.pairs import auto_dtype
from specviz.engine.pass_costs import time_passes
from specviz.models.timer import time_calls
from specviz.record.cost_profile import DraftParts

EAGLE_NAME = "EAGLE-style layer"  # as the Costs tab names the one-decoder-layer drafter's step


def measure_parts(engine, context: int, target_step: list[float], draft_step: list[float],
                  repeats: int) -> DraftParts:
    """Time each part on the loaded target `repeats` times after one untimed call (medians, and their least and most
    in `spread`), beside `target_step` and `draft_step`: the timings of a one-token target pass and a draft step over
    `context` cached tokens that the caller took in this run (measure/pass_timing.py times those)."""
    target = engine.target
    one, every = MedusaHeads(target, n=1).eval(), MedusaHeads(target).eval()  # untrained: W = 0
    for heads in (one, every):  # their blocks on the pair's kernels, as a run's heads are (Engine.trained_for)
        put_linears_on(heads.own, getattr(engine, "kernels", ""))
    device, dtype = activations(target)  # what the output layer reads (its weights may be packed, models/kernels.py)
    vocab, width = target.lm_head.out_features, target.lm_head.in_features
    hidden = torch.randn(1, width, device=device).to(dtype)  # one position's state
    with torch.inference_mode():
        runs = {"head_block_s": time_calls(lambda i: one.blocks[0](hidden), device, repeats),
                "output_layer_s": time_calls(lambda i: target.lm_head(hidden), device, repeats),
                "heads_s": time_calls(lambda i: every(hidden), device, repeats),
                "eagle_layer_s": eagle_layer_times(target, context, repeats, getattr(engine, "kernels", "")),
                "target_step_s": target_step, "draft_step_s": draft_step}
        rows = [n for n in SUBSET_SIZES if n < vocab]
        by_rows = [subset_heads_times(every, n, engine, repeats, hidden) for n in rows]
    medians = {name: statistics.median(times) for name, times in runs.items()}
    spread = {name: [(min(times), max(times))] for name, times in runs.items()}
    spread["rows_heads_s"] = [(min(times), max(times)) for times in by_rows]
    return DraftParts(hidden=width, vocab=vocab, heads=every.n, context=context, repeats=repeats,
                      spread=spread, measured=_words(engine), rows=rows,
                      rows_heads_s=[statistics.median(times) for times in by_rows],
                      rows_agreement=trained_agreement(engine, rows), **medians)


def subset_heads_times(heads: MedusaHeads, n: int, engine, repeats: int, hidden: torch.Tensor) -> list[float]:
    """All the heads' draft over the first n tokens' output rows (which rows does not change the time, only how
    many; a trained run reads the n its target uses most), on the pair's kernels; the heads read all rows after."""
    heads.use_vocab(torch.arange(n), getattr(engine, "kernels", ""))
    try:
        return time_calls(lambda i: heads(hidden), hidden.device, repeats)
    finally:
        heads.use_all_rows()


def trained_agreement(engine, rows: list[int]) -> list[float]:
    """Head 1's held-out agreement over each subset size, from the provenance of heads trained on this machine for
    this target (train/training.py measures it at these sizes); [] where none are, or they lack a size."""
    from specviz.drafters.trained import MEDUSA
    from specviz.models.packaged import cache_root
    from specviz.engine.trained import read_provenance, trained_folder

    said = read_provenance(trained_folder(cache_root(), engine.target_name, MEDUSA))
    agreement = (said.vocab_agreement or {}) if said else {}
    return [agreement[str(n)] for n in rows] if all(str(n) in agreement for n in rows) else []


def eagle_layer_times(target, context: int, repeats: int, path: str = "") -> list[float]:
    """An EAGLE-style draft step without its output layer: the map from [feature; next token's embedding] (2·hidden)
    to hidden, then one decoder layer of the target's own configuration (its width, heads, KV heads and MLP; random
    weights) on one new position over `context` cached positions."""
    from transformers import AutoModel, DynamicCache

    config = copy.deepcopy(target.config)
    config.num_hidden_layers = 1
    if getattr(config, "layer_types", None):
        config.layer_types = config.layer_types[:1]
    config.vocab_size = 16  # the layer reads features (inputs_embeds), never token ids: a token table it never uses
    config.pad_token_id = None  # (the target's padding id lies past those 16)
    device, dtype = activations(target)
    layer = AutoModel.from_config(config).to(device=device, dtype=dtype).eval()
    hidden = config.hidden_size
    reduce = torch.nn.Sequential(torch.nn.Linear(2 * hidden, hidden, device=device, dtype=dtype))
    put_linears_on(layer, path), put_linears_on(reduce, path)  # on the pair's kernels, as the trained layer runs
    gen = torch.Generator().manual_seed(0)
    features = torch.randn(1, context, hidden, generator=gen).to(device, dtype)
    pair = torch.randn(1, 1, 2 * hidden, generator=gen).to(device, dtype)  # [f_t; e(x_t+1)]
    cache = DynamicCache()
    with torch.inference_mode():
        layer(inputs_embeds=features, cache=cache, use_cache=True)  # the drafter's earlier positions, cached
        return time_passes(lambda i: layer(inputs_embeds=reduce(pair), cache=cache, use_cache=True), cache,
                           device, repeats, warm_up=1)


def _words(engine) -> str:
    """'2026-12-02 on AMD EPYC, 2 cores …, bfloat16, load average 2': when, where and how, as a figure is named; a
    dtype this machine does not compute natively says so (emulated bfloat16 on an AVX2-only CPU is many times slower
    than on the machine it was chosen for)."""
    busy = f", load average {os.getloadavg()[0]:.0f}" if hasattr(os, "getloadavg") else ""
    native = auto_dtype(engine.device)[0]
    dtype = engine.dtype if native == engine.dtype or engine.dtype == "float32" else \
        f"{engine.dtype} emulated in software (this machine's own choice is {native})"
    return f"{time.strftime('%Y-%m-%d', time.gmtime())} on {machine(engine.device)}, {dtype}{busy}"

"""The int4 draft's lean step with each layer's q/k/v and gate/up joined into one kernel call (lean.side_by_side,
layers.Int4Groups.joined) and with a call each, on the packaged draft as `--draft-weights int4` loads it: one token
and two (after a kept draft) over a 120-token cache, and a 41-token prompt, interleaved round by round.

    python -m tools.measure_joined_layers [--rounds 9]

Both decoders share one model's weights; their logits are compared first (the same bits, or this stops). Run it on a
quiet machine: it says the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from specviz.engine.lean import LeanDecoder
from specviz.models.layers import Int4Groups
from specviz.models.machine import cpu_flags, machine
from specviz.models.pairs import DEFAULT_PRESET, PRESETS, load_model, resolve_model
from specviz.models.quant import INT4, quantize_weights

STEPS = 5  # steps timed together per round and kind, the cache cropped back after each


def decoders(model) -> dict[str, LeanDecoder]:
    joined = LeanDecoder(model)
    own = Int4Groups.joined
    Int4Groups.joined = classmethod(lambda cls, parts: None)  # the same pass, a call a layer
    try:
        apart = LeanDecoder(model)
    finally:
        Int4Groups.joined = own
    assert joined.joined > 0 and apart.joined == 0
    return {"joined": joined, "a call each": apart}


def timed(decoder: LeanDecoder, cache, tokens: list[int]) -> float:
    t0 = time.perf_counter()
    for _ in range(STEPS):
        decoder(tokens, cache, 1)
        cache.crop(-len(tokens))
    return (time.perf_counter() - t0) / STEPS


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    rounds = parser.parse_args(argv).rounds
    model = quantize_weights(load_model(resolve_model(PRESETS[DEFAULT_PRESET].draft), "cpu", "bfloat16"), INT4)
    passes = decoders(model)
    print(f"{machine('cpu')}; flags {cpu_flags()}; torch threads {torch.get_num_threads()}; "
          f"load average before {os.getloadavg()[0]:.2f}; groups joined: {passes['joined'].joined}")
    context, times = list(range(1000, 1120)), {}
    with torch.inference_mode():
        caches = {name: d.new_cache() for name, d in passes.items()}
        for name, d in passes.items():
            d(context, caches[name], 1)
        logits = [d([7, 8], caches[name], 1) for name, d in passes.items()]
        assert torch.equal(*logits), "joined layers gave other logits"
        for name in caches:
            caches[name].crop(-2)
        for _ in range(rounds):
            for name, d in passes.items():
                for n in (1, 2):
                    times.setdefault((name, f"{n} token(s), 120 cached"), []).append(timed(d, caches[name],
                                                                                          list(range(9, 9 + n))))
                t0 = time.perf_counter()
                d(context[:41], d.new_cache(), 1)
                times.setdefault((name, "a 41-token prompt"), []).append(time.perf_counter() - t0)
    for (name, what), seconds in sorted(times.items(), key=lambda item: (item[0][1], item[0][0])):
        ms = [s * 1000 for s in seconds]
        print(f"{what:>22}  {name:>12}: {statistics.median(ms):7.2f} ms ({min(ms):.2f}–{max(ms):.2f})")
    print(f"load average after {os.getloadavg()[0]:.2f}; the same logits both ways: yes")


if __name__ == "__main__":
    main()

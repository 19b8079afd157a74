"""What drafting over part of the vocabulary saves (FR-Spec; engine/readout.py): the trained Medusa heads' draft and
one EAGLE step, each over the target's rows for n tokens, timed beside a one-token target pass on the packaged target
as the app loads it (the fastest exact kernels), for n from 1,024 to all 151,936; with the held-out agreement the
training measured at each size (the provenance's vocab_agreement). docs/drafters.md quotes its output.

    python -m tools.measure_draft_vocab

Needs heads trained with `python -m specviz train-drafters` (and `--kind eagle` for its rows); the timings do not depend
on which tokens the rows are, so the first n ids stand in for the most used n.
"""

from __future__ import annotations

import torch

from specviz.drafters.trained import EAGLE, MEDUSA
from specviz.models.kernels import path_of
from specviz.models.machine import machine
from specviz.models.packaged import cache_root
from specviz.models.pairs import load_target
from specviz.engine.trained import draft_cost, load_trained, trained_folder

SIZES = (1024, 4096, 16384, 32768, 151_936)


def main() -> None:
    target, _, name = load_target(None, None, "auto")
    path = path_of(target)
    print(f"{machine('cpu')}; kernels {path or 'float32'}; medians of 7 after one untimed call")
    for kind in (MEDUSA, EAGLE):
        heads = load_trained(trained_folder(cache_root(), name, kind), target, name, path=path)
        if heads is None:
            print(f"{kind}: not trained here")
            continue
        said = heads.provenance.vocab_agreement or {}
        for n in SIZES:
            heads.use_vocab(torch.arange(n), path)
            draft_s, pass_s = draft_cost(heads, target, repeats=7)
            agreed = said.get(str(n if n < 151_936 else 0))
            print(f"{kind}, {n:>7,} tokens: a draft {draft_s * 1000:6.1f} ms, {draft_s / pass_s:.3f} of a one-token "
                  f"pass ({pass_s * 1000:.1f} ms)" + (f"; head 1 held out {agreed:.1%}" if agreed is not None else ""))


if __name__ == "__main__":
    main()

"""The packaged draft's greedy top-1 agreement with the target along the target's own greedy answers (the bench's
prompts, 48 tokens each, one forward pass of each model over prompt and answer), and the pair's resident memory after
loading; `--full-embedding` keeps the draft's input embedding as loaded instead of int8 rows (layers.Int8Embedding),
for the comparison in docs/engine.md.

    python -m tools.measure_draft_agreement [--full-embedding]
"""

from __future__ import annotations

import argparse

import torch

import specviz.models.quant as quant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full-embedding", action="store_true", help="keep the draft's embedding as loaded")
    args = parser.parse_args()
    torch.set_num_threads(2)
    if args.full_embedding:
        quant.Int8Embedding = lambda embedding: embedding  # quantize_weights then sets the same table back
    from specviz.engine import Engine, RunSettings
    from specviz.models.pairs import load_pair
    from specviz.settings.prompts import BENCH_PROMPTS

    engine = Engine.from_pair(load_pair())
    engine.warm_up()
    with open("/proc/self/status") as f:
        now = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS"))
    print(f"draft embedding {type(engine.draft.get_input_embeddings()).__name__}; resident after loading "
          f"{now / 1e9:.3f} GB")
    agree = total = 0
    for kind, prompts in BENCH_PROMPTS.items():
        for prompt in prompts:
            trace = engine.run(prompt, RunSettings(k=4, temperature=0.0, max_new_tokens=48))
            ids = torch.tensor([trace.prompt_token_ids + trace.output_token_ids])
            n = len(trace.output_token_ids)
            with torch.inference_mode():
                draft = engine.draft(ids).logits[0, -n - 1:-1].argmax(-1)
                target = engine.target(ids).logits[0, -n - 1:-1].argmax(-1)
            same = int((draft == target).sum())
            agree, total = agree + same, total + n
            print(f"  {kind}: {same}/{n}", flush=True)
    print(f"the draft's top token = the target's at {agree}/{total} positions ({agree / total:.3f})")


if __name__ == "__main__":
    main()

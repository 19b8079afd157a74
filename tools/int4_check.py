"""Draft-sized linear layers with full, int8 and int4 weights on this CPU, timed as a draft step meets them: a stack
of 24 distinct layers (896 -> 4864, Qwen2.5-0.5B's MLP; 209 MB in bfloat16) run in turn, so the weights come from
memory, not from a cache (one layer timed alone fits in the caches and misleads). ms per layer, median of 7.

    python -m tools.int4_check [--dtype bfloat16|float32]
"""
import argparse

import torch

from specviz.models.layers import Int4Linear, Int8Linear
from specviz.models.quant import fastest_weights, stack_time

IN, OUT, LAYERS = 896, 4864, 24


def per_layer_ms(stack, x, repeats: int = 7) -> float:
    """Median ms a layer, timed as quant.fastest_weights times its stacks."""
    return stack_time(stack, x, repeats) * 1000 / len(stack)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    dtype = getattr(torch, parser.parse_args().dtype)
    print(torch.__version__, torch.backends.cpu.get_cpu_capability(), dtype, f"{torch.get_num_threads()} threads")
    with torch.inference_mode():
        full = [torch.nn.Linear(IN, OUT, bias=False).to(dtype) for _ in range(LAYERS)]
        stacks = {"full": full, "int8": [Int8Linear(m) for m in full], "int4": [Int4Linear(m) for m in full]}
        x = torch.randn(3, IN, dtype=dtype)
        error = (stacks["int4"][0](x).float() - full[0](x).float()).abs().max() / full[0](x).float().abs().max()
        print(f"int4 layer against the full one: max error {error:.3f} of the output's scale")
        for rows in (1, 2, 5, 9, 32, 64):
            x = torch.randn(rows, IN, dtype=dtype)
            print(f"rows {rows:3}: " + "  ".join(f"{name} {per_layer_ms(stack, x):.3f} ms" for name, stack in stacks.items()),
                  flush=True)
    print("--draft-weights auto on this CPU:", fastest_weights(dtype))


if __name__ == "__main__":
    main()

"""The gguf-ort path (onnxruntime's MatMulNBits on the GGUF's own blocks) against the paths before it, on the packaged
target, in one run of one process (timings interleaved round by round; the least and the median of the rounds):

- layers: t(1) and t(5) of a stack of six 8960 × 1536 Q4_K layers (the blocks' own ffn_up of layers 0–5) on
  onnxruntime and on torch's int4 kernel (gguf-int4), of six Q6_K ffn_down on onnxruntime and as float16-fbgemm
  (gguf-int4 runs its Q6_K layers so), and of the Q6_K output layer both ways;
- calls: what one call costs beside its kernel: a small layer (k_proj, 256 × 1536) by `run()` with numpy, by
  io_binding over OrtValues of numpy views, bound by address (what ort_linear does), and as an OrtLinear; the calls a
  token makes with q/k/v and gate/up fused and without;
- step: the whole target's t(1) and t(5) on a 64-token context, all linears on onnxruntime, against gguf-int4, and
  the loaded gguf-ort target's own row check (kernel_choice.check_rows);
- greedy: 16 greedy tokens of the target on gguf-ort and on gguf-int4 against float32 with the file's weights
  dequantized exactly (its own process part: the float32 model holds 6 GB).

    python -m tools.measure_ort_path [--parts layers,calls,step,greedy] [--rounds 7] [--threads N]

Threads: torch's (torch.get_num_threads()), onnxruntime's the same. The figures name the CPU's flags; on a machine
shared with other work they are rough (the least of the rounds is the kernel's own, the median what a run meets).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import torch

TARGET = "Qwen2.5-Coder-1.5B-Instruct"


def cpu_said() -> str:
    from specviz.models.machine import cpu_flags, load_average, machine

    return (f"{machine('cpu')}; flags: {cpu_flags()}; torch threads {torch.get_num_threads()}; load average "
            f"{load_average()} (a shared machine: the figures are rough)")


def interleaved(calls: dict[str, callable], rounds: int) -> dict[str, tuple[float, float]]:
    """Each call timed once a round, round after round, after one warm-up: {name: (least, median) seconds}."""
    times = {name: [] for name in calls}
    with torch.inference_mode():
        for call in calls.values():
            call()
        for _ in range(rounds):
            for name, call in calls.items():
                t0 = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - t0)
    return {name: (min(t), statistics.median(t)) for name, t in times.items()}


def said(results: dict[str, tuple[float, float]], per: int = 1) -> str:
    return "\n".join(f"  {name:58s} {least / per * 1e3:8.3f} ms least, {median / per * 1e3:8.3f} median"
                     for name, (least, median) in results.items())


def member_of(blocks, name: str):
    """(the part holding module `name`, its weight as NBits)."""
    part = next(p for parts in blocks.groups for p in parts if name in p.members)
    return part, part.member(name)


def ort_layer(weight, name: str = "layer"):
    from specviz.models.ort_blocks import part_of
    from specviz.models.ort_linear import OrtGroup, OrtLinear

    return OrtLinear(OrtGroup([part_of([(name, weight)])], [None]), name)


def int4_layer(weight):
    from specviz.models.layers import Int4Groups

    return Int4Groups(torch.from_numpy(weight.codes), torch.from_numpy(weight.scale),
                      torch.from_numpy(weight.minimum), None, torch.bfloat16, torch.float32)


def fp16_layer(weight):
    from specviz.models.layers import Fp16Linear

    n, k = weight.codes.shape
    linear = torch.nn.Linear(k, n, bias=False)
    with torch.no_grad():
        linear.weight.copy_(torch.from_numpy(weight.weights()))
    return Fp16Linear(linear)


def layers(blocks, rounds: int) -> None:
    """Per-layer t(1) and t(5): stacks of six distinct layers (more than the caches hold, as a pass reads)."""
    up = [member_of(blocks, f"model.layers.{i}.mlp.up_proj")[1] for i in range(6)]
    q6_down = [w for w in (member_of(blocks, f"model.layers.{i}.mlp.down_proj")[1] for i in range(28))
               if w.kind.name == "Q6_K"][:6]
    stacks = {"Q4_K ffn_up 8960x1536, onnxruntime": [ort_layer(w) for w in up],
              "Q4_K ffn_up 8960x1536, torch int4 (gguf-int4)": [int4_layer(w) for w in up],
              "Q6_K ffn_down 1536x8960, onnxruntime": [ort_layer(w) for w in q6_down],
              "Q6_K ffn_down 1536x8960, float16-fbgemm (gguf-int4)": [fp16_layer(w) for w in q6_down]}
    output = member_of(blocks, "lm_head")[1]
    singles = {"Q6_K output 151936x1536, onnxruntime": [ort_layer(output)],
               "Q6_K output 151936x1536, float16-fbgemm (gguf-int4)": [fp16_layer(output)]}
    del output
    for rows in (1, 5):
        calls = {}
        for name, stack in (stacks | singles).items():
            x = torch.randn(rows, stack[0].in_features)
            calls[f"{name}, t({rows})"] = lambda stack=stack, x=x: [layer(x) for layer in stack]
        print(f"a layer, t({rows}) (stacks of 6 divided by 6; the output layer alone):")
        results = interleaved(calls, rounds)
        print(said({n: r for n, r in results.items() if "output" not in n}, per=6))
        print(said({n: r for n, r in results.items() if "output" in n}))


def calls_cost(blocks, rounds: int) -> None:
    """One call of a small layer (k_proj: 256 × 1536, Q4_K) by each way of calling the same session."""
    import onnxruntime as ort

    layer = ort_layer(member_of(blocks, "model.layers.0.self_attn.k_proj")[1])
    session, binding = layer.group.session, layer.group.binding
    x, y = torch.randn(1, 1536), torch.empty(1, 256)

    def with_ortvalues():
        binding.bind_ortvalue_input("x", ort.OrtValue.ortvalue_from_numpy(x.numpy()))
        binding.bind_ortvalue_output("y0", ort.OrtValue.ortvalue_from_numpy(y.numpy()))
        session.run_with_iobinding(binding)

    calls = {"session.run() with numpy in and out": lambda: session.run(None, {"x": x.numpy()}),
             "run_with_iobinding, OrtValues over numpy views": with_ortvalues,
             "run_with_iobinding bound by address (OrtGroup.run)": lambda: layer.group.run(x),
             "OrtLinear(x) (the module a model calls)": lambda: layer(x),
             "torch int4 kernel, same layer (gguf-int4)": (lambda l=int4_layer(layer_weight(blocks)): l(x))}
    repeat = 200
    print(f"one call, 256 x 1536 Q4_K, one row (each timed over {repeat} calls):")
    print(said(interleaved({n: (lambda c=c: [c() for _ in range(repeat)]) for n, c in calls.items()}, rounds),
               per=repeat))
    members = sum(len(p.members) for parts in blocks.groups for p in parts)
    print(f"  calls a token: {len(blocks.groups)} with q/k/v and gate/up fused, {members} one a layer")


def layer_weight(blocks):
    return member_of(blocks, "model.layers.0.self_attn.k_proj")[1]


def load_target(path: str, blocks=None):
    """The packaged target on `path` (kernels.py), loaded in float16 as that path loads it; gguf-ort's `blocks`
    (ort_blocks.OrtBlocks) on groups of its own."""
    from specviz.models.kernels import GGUF_ORT, apply_path
    from specviz.models.ort_linear import layers_of
    from specviz.models.pairs import load_model, resolve_model

    model = load_model(resolve_model(f"packaged:{TARGET}"), "cpu", "float16")
    return apply_path(model, path, blocks=layers_of(blocks) if path == GGUF_ORT and blocks else blocks)


def step(blocks, rounds: int) -> None:
    """The whole target's step t(1) and pass t(5) on a 64-token context, each path interleaved."""
    from transformers import DynamicCache

    from specviz.models.gguf_blocks import q4k_blocks
    from specviz.models.kernel_choice import check_rows
    from specviz.models.kernels import GGUF_INT4, GGUF_ORT, KERNELS

    models = {GGUF_ORT: load_target(GGUF_ORT, blocks)}  # one at a time: a load peaks at 7.6 GB (the folder mapped)
    gc.collect()
    models[GGUF_INT4] = load_target(GGUF_INT4, q4k_blocks(TARGET))
    gc.collect()
    print(f"gguf-ort target: {KERNELS[GGUF_ORT].file.layers_said(models[GGUF_ORT])}")
    context = torch.arange(100, 164)[None]
    calls = {}
    for path, model in models.items():
        cache = DynamicCache()
        with torch.inference_mode():
            model(input_ids=context, cache=cache, use_cache=True)
        for rows in (1, 5):
            new = torch.arange(200, 200 + rows)[None]

            def one(model=model, cache=cache, new=new):
                model(input_ids=new, cache=cache, use_cache=True)
                cache.crop(-new.shape[1])  # transformers 5: crop(-n) drops the last n
            calls[f"{path}, t({rows})"] = one
    print("the whole target, 64 tokens cached:")
    print(said(interleaved(calls, rounds)))
    print(f"gguf-ort target's own row check: {check_rows(models[GGUF_ORT])}")


def greedy(blocks, tokens: int = 16) -> None:
    """`tokens` greedy tokens on a code prompt: gguf-ort and gguf-int4 against float32 with the file's weights."""
    from specviz.models.gguf_blocks import q4k_blocks
    from specviz.models.kernels import GGUF_INT4, GGUF_ORT
    from specviz.models.pairs import load_model, load_tokenizer, resolve_model
    from specviz.settings.prompts import CODE_PROMPT

    folder = resolve_model(f"packaged:{TARGET}")
    tokenizer = load_tokenizer(folder)
    ids = tokenizer.apply_chat_template([{"role": "user", "content": CODE_PROMPT}], add_generation_prompt=True,
                                        tokenize=True)
    ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    got = {GGUF_ORT: greedy_tokens(load_target(GGUF_ORT, blocks), ids, tokens),
           GGUF_INT4: greedy_tokens(load_target(GGUF_INT4, q4k_blocks(TARGET)), ids, tokens)}
    reference = load_model(folder, "cpu", "float32")
    with_file_weights(reference, blocks)
    want = greedy_tokens(reference, ids, tokens)
    for path, out in got.items():
        same = next((i for i, (a, b) in enumerate(zip(out, want)) if a != b), len(want))
        print(f"{path}: {same} of {tokens} greedy tokens equal float32's with the file's weights"
              + ("" if same == len(want) else f" (first differs at {same}: {out[same]} against {want[same]})"))
    print(f"  float32: {tokenizer.decode(want)!r}")


def greedy_tokens(model, ids: list[int], tokens: int) -> list[int]:
    from transformers import DynamicCache

    cache, new, pending = DynamicCache(), [], ids
    with torch.inference_mode():
        while len(new) < tokens:
            logits = model(input_ids=torch.tensor([pending]), cache=cache, use_cache=True).logits
            new.append(int(logits[0, -1].argmax()))
            pending = new[-1:]
    return new


def with_file_weights(model, blocks) -> None:
    """Every linear layer and the embedding of a float32 model set to exactly the weights the GGUF file defines."""
    modules = dict(model.named_modules())
    with torch.no_grad():
        for parts in blocks.groups:
            for part in parts:
                for name in part.members:
                    modules[name].weight.copy_(torch.from_numpy(part.member(name).weights()))
        model.get_input_embeddings().weight.copy_(blocks.embedding.weights())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="layers,calls,step,greedy")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=0, help="torch's (and so onnxruntime's) threads; 0: as is")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from specviz.models.ort_blocks import ort_blocks

    print(cpu_said())
    blocks = ort_blocks(TARGET)
    for part in args.parts.split(","):
        {"layers": lambda: layers(blocks, args.rounds), "calls": lambda: calls_cost(blocks, args.rounds),
         "step": lambda: step(blocks, args.rounds), "greedy": lambda: greedy(blocks)}[part]()


if __name__ == "__main__":
    main()

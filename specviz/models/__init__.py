"""Loading a pair, one floor below the engine: the presets and how a pair is resolved, loaded and checked (pairs.py) and
the flags that choose one, declared once for every command (pair_flags.py), the packaged offline pair from its GGUF
chunks (packaged.py), the CPU's kernel paths (kernels.py) and which of them is exact, fastest and chosen on this
machine (kernel_choice.py), the grouped attention of the float16-fbgemm path (attention.py), the 4-bit layers
(int4.py) and the packaged target's own 4-bit blocks (gguf_blocks.py), the quantized draft (quant.py), and the small
measures every floor above reads: this machine in words (machine.py), a model's fingerprint (fingerprint.py), a
draft's memory (memory.py) and the one timer (timer.py).

Imports settings (names and bounds), record (the DraftMemory it fills) and algorithm's formulas (a path is priced by
what a round costs) only, besides torch and transformers; never the engine, which imports it, nor the view or the
page.
"""

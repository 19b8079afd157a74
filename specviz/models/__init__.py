"""Loading a pair, one floor below the engine: how a pair is resolved, loaded and put on this CPU's fastest exact
kernel path. Read pairs.py first, then kernels.py (the paths as one table, a row a path).

- pairs.py: presets, the device, dtype and kernels a pair runs on, load_pair and load_target
- pair_flags.py: the flags that choose a pair and how it loads, declared once for every command
- packaged.py: the packaged offline pair from its GGUF chunks, prepared once under the user cache, the joined files
- kernels.py: the CPU's kernel paths as one table (KernelPath: what each needs, computes, packs and reads of a file)
- kernel_choice.py: which paths are exact here, the fastest chosen by measurement, the loaded target checked on it
- layers.py: every layer a path or a lighter draft puts in place of nn.Linear and nn.Embedding (float16, int8, 4-bit)
- gguf_blocks.py: the packaged target's own Q4_K blocks, read once from its GGUF file and kept beside the cache
- ort_blocks.py: the packaged target's Q4_K and Q6_K blocks repacked once for onnxruntime's MatMulNBits (gguf-ort)
- ort_linear.py: the gguf-ort path's layers: one onnxruntime session a group of layers reading one input
- attention.py: the float16-fbgemm path's attention: one grouped matmul for 1 and K + 1 rows
- quant.py: which weights a draft runs with (int8 or int4), and which of them this CPU runs fastest
- machine.py: the machine a timing ran on, in words, and whether it computes bfloat16 natively
- fingerprint.py: a model's fingerprint, the same whichever dtype or kernels its weights were loaded on
- memory.py: the draft's memory measured on the loaded models, and giving back freed memory after a load
- timer.py: the one timer: any call timed with the device synchronised on both sides
- remembered.py: what a machine measured once (kernels.json, pass_costs.json) and a later start reads back

Imports settings (names and bounds), record (the DraftMemory it fills) and algorithm's formulas (a path is priced by
what a round costs) only, besides torch, transformers and (for gguf-ort) onnxruntime; never the engine, which imports
it, nor the view or the page.
"""

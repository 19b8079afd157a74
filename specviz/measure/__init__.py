"""Measurements of cost and speed: a pass's time against the tokens it reads (t(n)) and the batch (t(b)), the
benchmark beside transformers and llama.cpp, and the GPU projection on random-weight models of real shapes.

- pass_timing.py: the loaded pair's pass times against tokens per pass and batch size, each point with its spread
- cost_charts.py: the Costs tab's figures and readout: pass time against tokens, speedup against batch size
- recorded_costs.py: the packaged pair's pass costs recorded once and shipped, drawn by the Costs tab
- measured.py: what a recorded trace measured in the cost model's terms (α, K, c, v; the bench's prediction)
- draft_parts.py: what a draft from the target's own state costs part by part
- bench.py: the benchmark: rules, drafters and peers side by side in interleaved turns
- bench_flags.py: the bench's flags, their defaults and help, and BENCH_NEEDS, its flags that apply only with another
- bench_report.py: the benchmark's rows and their report (results.json, report.md, chart.html)
- closed_loop.py: serve-bench's load driver and report: simulated users in a closed loop, served by one batch
- serve_chart.py: a busy server's runs as the Costs tab's chart and table, and the shipped recording of them
- peers.py: llama.cpp beside specviz: the packaged GGUF files run by llama.cpp's server (xllamacpp)
- peer_process.py: an object made and called in a child process of its own (llama.cpp's server: in ours it slowed us)
- peer_figures.py: one llama.cpp request in the bench's figures, and which users' outputs differed from their own
- peer_recording.py: llama.cpp beside specviz recorded once and shipped, drawn by the Costs tab
- peer_table.py: that recording as the Costs tab's table, and the notice that says whose it is
- projection.py: the GPU cost projection on random-weight models of real shapes

Imports settings, drafters, record, algorithm, models (loading a pair, the timer), engine and view's charts and style;
never gradio.
"""

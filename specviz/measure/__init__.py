"""Measurements of cost and speed: a pass's time against the tokens it reads (t(n)) and the batch (t(b)), the
benchmark beside transformers and llama.cpp, and the GPU projection on random-weight models of real shapes.

Imports settings, drafters, record, algorithm, models (loading a pair, the timer), engine and view's charts and style;
never gradio.
"""

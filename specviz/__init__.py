"""specviz: real speculative decoding, shown one round at a time.

The data path reads one way: settings and drafters (names, bounds, the drafter registry) → engine (models, runs)
→ record (the trace) → view (HTML and figures of a round) → app (the page, the only gradio). algorithm holds the
pure math, lab the Lab's experiments, measure the cost and speed measurements, lecture the recorded examples,
cli.py the command line. tests/test_layering.py holds the rules between the folders.
"""

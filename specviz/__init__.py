"""specviz: real speculative decoding, shown one round at a time.

The data path reads one way: settings and drafters (names, bounds, the drafter registry) → record (the trace, the
quiz's data) → algorithm (the pure math) → engine (models, runs) → view (HTML and figures of a round) → lab, measure
and lecture (the Lab's experiments, the cost and speed measurements, the recorded examples and rooms) → app (the
page, the only gradio), with cli/ (the command line) beside app and train/ (offline training of drafters) above the
engine. tests/test_layering.py holds the rules between the folders.
"""

"""The names, choices, bounds and example prompts that every layer shares, each written once, and which setting only
applies with another (needs.py).

- bounds.py: the names and bounds every layer shares: K's bounds, dtype and draft-weight choices, a run's limits
- defaults.py: one default per setting a run takes, read by RunSettings, the page, the CLI and the warping
- needs.py: which setting applies only with another, the sentence that refuses one, the page's "applies only" line
- prompts.py: the example prompts, each written once, and the benchmark's prompts by kind
- published.py: figures others published (Leviathan et al.'s α and speedups), each with its source

Imports nothing else of specviz (only the standard library), so every other folder may import it.
"""

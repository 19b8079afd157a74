"""The command line: `python -m specviz run|bench|costs|record-examples|train-drafters`. One module a command (run.py,
costs.py, record.py here; the bench's in measure/, train-drafters' in train/), their flags said once (flags.py),
progress on stderr (progress.py), the entry point main.py. A trace is printed by view/trace_text.py: the command line
renders nothing of its own.

- main.py: the entry point: one subcommand a module
- run.py: run: one run printed round by round, its baseline and its JSON
- costs.py: costs: what verifying K drafts costs on the loaded pair
- record.py: record-examples: the recorded examples made again
- serve_bench.py: serve-bench: its flags, the plan checked before the pair loads, the costs the cost rule needs
- flags.py: a setting's flag, the flags given besides their defaults, the bench's flags refused where they do nothing
- progress.py: a long step's progress on stderr

Imports every folder but the app, and of the app only app/errors.py (what went wrong in the page's words; it imports
no gradio).
"""

from specviz.cli.main import main

__all__ = ["main"]

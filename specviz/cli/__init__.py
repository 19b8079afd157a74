"""The command line: `python -m specviz run|bench|costs|record-examples|train-drafters`. One module a command (run.py,
costs.py, record.py here; the bench's in measure/, train-drafters' in train/), their flags said once (flags.py),
progress on stderr (progress.py), the entry point main.py. A trace is printed by view/trace_text.py: the command line
renders nothing of its own.

Imports every folder but the app, and of the app only app/errors.py (what went wrong in the page's words; it imports
no gradio).
"""

from specviz.cli.main import main

__all__ = ["main"]

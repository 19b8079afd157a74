"""A recorded round turned into what a person sees: escaped HTML (token strip, p/q cards, KV caches, the tree,
the stage with its quiz steps, the class's panel), plotly figures, and a trace as plain text for a terminal. Pure
functions of the record (the quiz's arithmetic is record/quiz_data.py's).

Imports settings, drafters, record and algorithm (theory, the cost rule's prediction); never the engine, torch
or gradio.
"""

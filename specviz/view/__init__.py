"""A recorded round turned into what a person sees: escaped HTML (token strip, p/q cards, KV caches, the tree,
the stage, the quiz's steps) and plotly figures. Pure functions of the record.

Imports settings, drafters, record and algorithm (theory, the cost rule's prediction); never the engine, torch
or gradio.
"""

"""The Lab's toy problems and experiments: p/q pairs and their Monte Carlo, two positions' joint distribution,
the α / K / c / v explorer, the drafters compared on the real engine, and their figures and readouts.

Imports settings, drafters, record, algorithm, view, measure (what a trace measured) and (for the comparison's
runs) engine; never gradio.
"""

"""Offline training of the drafters that read the target's own state (Medusa heads, the EAGLE-style layer), measured
in minutes, run by `python -m specviz train-heads`: the text they learn from (text.py), what the frozen target says
about it, cached beside the model cache (teacher.py), the fits and their held-out checks (fit.py), and the command
(command.py). Nothing here runs during a round: a run reads the trained weights through engine/trained.py.

Imports settings, drafters, record, algorithm and engine (the models it trains and where their weights are kept);
nothing imports it but the command line.
"""

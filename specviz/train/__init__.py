"""Offline training of the drafters that read the target's own state (Medusa heads, the EAGLE-style layer), measured
in minutes, run by `python -m specviz train-drafters`. Nothing here runs during a round: a run reads the trained weights
through engine/trained.py. Read training.py first: it tells one training start to end.

- training.py: one training within its time bound: the data, the held-out check, the fit, the check again, provenance
- data.py: what a training learns from, gathered within its shares of the bound: the target's answers, then text
- answers.py: the target answering a batch of prompts at once, greedily or sampled, its features and labels kept
- prompts.py: the prompts it answers, of the page's kinds, made from offline material in a fixed order
- text.py: the offline text: the standard library's source, installed packages' descriptions, a course's own files
- teacher.py: what the frozen target says about the text, cached beside the model cache; the training's vocab subset
- fit.py: TrainPlan, the Medusa and EAGLE fits, and the held-out agreement with the target's top token
- command.py: the train-drafters command: its flags, the training run, the weights saved, each phase's time printed

Imports settings, drafters, record, algorithm, models (loading the target, its kernels) and engine (the models it
trains and where their weights are kept); nothing imports it but the command line.
"""

"""One default per setting a run takes, each written once here and read everywhere: `RunSettings`
(engine/request.py), and through it the CLI's flags and the Python API; the page's controls, and so what an API
client that names no value gets; the warping's `SamplingSettings` (algorithm/sampling.py). docs/settings.md states
them and why.

A recorded trace that lacks a setting was recorded before the setting existed. Where the run did not use it, it
counts as its default; where it did, as what the run used (`as_recorded`): a trace from before stop rules stopped
adaptive K by the threshold, whatever today's default.
"""

from __future__ import annotations

from specviz.settings.bounds import COST_RULE, THRESHOLD_RULE

K = 4  # draft tokens per round (the most, with adaptive K)
TEMPERATURE = 0.7  # sampled, so that draws reject drafts and the residual shows; 0 is greedy
TOP_K = 0  # off
TOP_P = 1.0  # off
SEED = 0
MAX_NEW_TOKENS = 64
ADAPTIVE = False  # each round drafts K: the algorithm as the explanation, the quiz and the examples teach it
STOP_RULE = COST_RULE  # how adaptive K stops: each further draft must pay for its cost on this machine
CHAT = True  # the prompt wrapped in the tokenizer's chat template, where it has one
DRAFT_LAYERS = 0  # self-speculation's N; 0: half the target's layers
TREE_BUDGET = 16  # a shaped tree's drafted nodes, at most (algorithm/shaped.py): the fixed tree 2-2-1-1's 14, and two
#                   more for where this round's draft is surest
TREE_DEPTH = 0  # a shaped tree's most depth; 0: its drafter's default (drafters/shaped_tree.py)

STOP_RULE_BEFORE = THRESHOLD_RULE  # how adaptive K stopped before there were stop rules (trace format 6)


def as_recorded(settings: dict) -> dict:
    """A trace's settings with what it ran with where the file predates a setting it used: {'adaptive': True} ->
    {'adaptive': True, 'stop_rule': 'threshold'}; {'adaptive': False} stays as it is."""
    if settings.get("adaptive") and "stop_rule" not in settings:
        return {**settings, "stop_rule": STOP_RULE_BEFORE}
    return settings

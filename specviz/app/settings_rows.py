"""The run's settings on the page: the pair, the drafter and every setting of a run as controls, in the rows that
place them (`settings_rows`), the numeric ones named as their RunSettings fields (`Settings`), and the info line of
each control whose setting only applies with another (`INFO`; app/controls.py says what it needs while it does not).
app/page.py places the rows and wires them; each control opens with the request contract's defaults
(settings/defaults.py), the CLI's and the API's too.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from specviz.app.controls import state
from specviz.app.inputs import limits
from specviz.drafters import DEFAULT, REGISTRY, layers, shaped_tree, tree
from specviz.engine.request import RunSettings
from specviz.settings.bounds import STOP_RULES, widths_text

# The info line of each control whose setting only applies with another, while it applies (app/controls.py says what
# it needs while it does not)
INFO = {"k": "", "top_p": "", "top_k": "", "seed": "",
        "adaptive": "each round chooses how many to draft, by the rule beside",
        "stop_rule": f"cost-aware: each further draft must pay for what it costs on this machine; confidence "
                     f"threshold: the product of the draft's own probabilities of its drafts falls below "
                     f"{RunSettings().confidence}",
        "draft_layers": f"with the drafter “{layers.DRAFTER.label}”: {layers.DRAFT_LAYERS.help}",
        "tree_widths": f"with the drafter “{tree.DRAFTER.label}”: {tree.TREE_WIDTHS.help}",
        "tree_budget": f"with a shaped tree (“{shaped_tree.DRAFTER.label}”): {shaped_tree.TREE_BUDGET_PARAM.help}",
        "tree_depth": f"with a shaped tree: {shaped_tree.TREE_DEPTH_PARAM.help}"}


def _opening(setting: str) -> dict:
    """A needy control's interactive flag and info line as the page opens (controls.state)."""
    d = RunSettings()  # the request contract's defaults (settings/defaults.py)
    return state(setting, INFO[setting], d.drafter, d.adaptive, d.temperature)


@dataclass
class Settings:
    """The run's numeric settings, each named as its RunSettings field."""

    k: gr.Slider
    temperature: gr.Slider
    top_p: gr.Slider
    top_k: gr.Number
    seed: gr.Number
    max_new_tokens: gr.Slider


def settings_rows(presets: dict[str, str], default_preset: str):
    """The pair and every setting of a run, in two rows: in one row, below 1920 px wide the last columns were
    squeezed to a word per line and the pair's name was cut off. The minimum widths of each row fit a 1024 px
    window (tests/app/test_lecture_browser.py checks 1024 to 1920); the drafter's own options take a third.
    -> preset, Settings, drafter, its note, adaptive, stop rule, draft layers, tree widths, tree budget, tree depth"""
    with gr.Row(equal_height=True):
        preset = gr.Dropdown([(label, name) for name, label in presets.items()], value=default_preset,
                             label="Draft → target pair", elem_id="preset", scale=3, min_width=420)
        drafter = gr.Radio([(d.label, key) for key, d in REGISTRY.items()], value=DEFAULT.key, label="Drafter",
                           elem_id="drafter", scale=2, min_width=320)
    # said the moment a trained drafter is chosen that is not trained yet for the pair (actions.drafter_note)
    drafter_note = gr.HTML("", elem_id="drafter-note", padding=False)
    d = RunSettings()  # the request contract's defaults (settings/defaults.py), the CLI's and the API's too
    with gr.Row():
        settings = Settings(
            k=gr.Slider(**limits("k"), value=d.k, step=1, label="K (draft tokens per round)", elem_id="k",
                        min_width=160, **_opening("k")),
            temperature=gr.Slider(**limits("temperature"), value=d.temperature, step=0.05,
                                  label="Temperature (0 = greedy)",
                                  elem_id="temperature", min_width=170),
            top_p=gr.Slider(**limits("top_p"), value=d.top_p, step=0.05, label="top-p", elem_id="top-p", min_width=120,
                            **_opening("top_p")),
            top_k=gr.Number(d.top_k, **limits("top_k"), precision=0, label="top-k (0 = off)", elem_id="top-k",
                            min_width=120, **_opening("top_k")),
            seed=gr.Number(d.seed, **limits("seed"), precision=0, label="Seed", elem_id="seed", min_width=100,
                           **_opening("seed")),
            max_new_tokens=gr.Slider(**limits("max_new_tokens"), value=d.max_new_tokens, step=1, label="Max new tokens",
                                     elem_id="max-new-tokens", min_width=160))
    with gr.Row(equal_height=True):
        adaptive = gr.Checkbox(d.adaptive, label="Adaptive K (K is then the most per round)", elem_id="adaptive",
                               scale=1, min_width=180, **_opening("adaptive"))
        stop_rule = gr.Radio([(name, key) for key, name in STOP_RULES.items()], value=d.stop_rule,
                             label="Adaptive K stops by", elem_id="stop-rule", scale=2, min_width=260,
                             **_opening("stop_rule"))
    with gr.Row(equal_height=True):  # what only some drafters read: a row of their own, so none squeezes the rest
        draft_layers = gr.Number(d.draft_layers, **limits("draft_layers"), precision=0,
                                 label=f"Draft layers N ({layers.DRAFTER.label})",
                                 elem_id="draft-layers", scale=1, min_width=220, **_opening("draft_layers"))
        tree_widths = gr.Textbox(widths_text(tree.DEFAULT_WIDTHS), label=f"Tree widths ({tree.DRAFTER.label})",
                                 elem_id="tree-widths", scale=1, min_width=220, **_opening("tree_widths"))
        tree_budget = gr.Number(d.tree_budget, **limits("tree_budget"), precision=0, label="Shaped tree: node budget",
                                elem_id="tree-budget", scale=1, min_width=220, **_opening("tree_budget"))
        tree_depth = gr.Number(d.tree_depth, **limits("tree_depth"), precision=0,
                               label="Shaped tree: most depth (0 = default)", elem_id="tree-depth", scale=1,
                               min_width=220, **_opening("tree_depth"))
    return (preset, settings, drafter, drafter_note, adaptive, stop_rule, draft_layers, tree_widths, tree_budget,
            tree_depth)

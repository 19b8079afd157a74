"""Which of the page's run controls do something in the page's current state, read from settings/needs.py: a control
whose setting only applies with another is disabled while that other is not set, put back to the page's default
(inputs.PAGE_DEFAULTS: so Generate never sends what it would refuse from an API client), and its info line says
what it needs. Three controls decide: the drafter, adaptive K and the temperature.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from specviz.app.inputs import PAGE_DEFAULTS
from specviz.engine.request import asked_of
from specviz.settings.bounds import widths_text
from specviz.settings.needs import NEEDS, Need, why_off


@dataclass
class Needy:
    """A control of the page whose setting only applies with another."""

    setting: str  # the RunSettings field it sets (a key of NEEDS)
    control: gr.components.Component
    info: str  # its info line while it applies ('' for none)


def unmet_need(setting: str, drafter, adaptive, temperature) -> Need | None:
    """What `setting` needs and lacks with the deciding controls at these values; None when it applies."""
    asked = asked_of({"drafter": drafter, "adaptive": bool(adaptive), "temperature": float(temperature or 0)})
    need = NEEDS[setting]
    return None if need.met(asked) else need


def state(setting: str, info: str, drafter, adaptive, temperature) -> dict:
    """A control's interactive flag and info line: as the page opens, and after each change of the deciding ones."""
    need = unmet_need(setting, drafter, adaptive, temperature)
    return dict(interactive=True, info=info) if need is None else dict(interactive=False, info=why_off(need))


def _update(setting: str, info: str, *deciding) -> dict:
    """state(), and a disabled control back at the page's default."""
    shown = state(setting, info, *deciding)
    if not shown["interactive"]:
        default = PAGE_DEFAULTS[setting]
        shown["value"] = widths_text(default) if setting == "tree_widths" else default
    return gr.update(**shown)


def wire_needs(needy: list[Needy], drafter: gr.Radio, adaptive: gr.Checkbox, temperature: gr.Slider) -> None:
    """Each change of a deciding control updates every needy one (a disabled adaptive K box going back to off
    changes it in turn, and so the stop rule)."""
    def update(*deciding):
        return [_update(n.setting, n.info, *deciding) for n in needy]

    for trigger in (drafter, adaptive, temperature):
        trigger.change(update, [drafter, adaptive, temperature], [n.control for n in needy], queue=False,
                       show_progress="hidden", api_visibility="private")

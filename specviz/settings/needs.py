"""Which setting only applies with another, written once: `NEEDS`. A setting whose need is unmet would do nothing, so
wherever a person gives it, it is refused with a sentence naming what it needs (`refusal`), and the page disables its
control and says why (`why_off`).

Each place tells "given" from "left at its default" in its own way, then asks `unmet(given, asked)`:
- the CLI: a flag whose value differs from its default (`run`'s flags default to None, so that default is the
  contract's; the bench's flags to the bench's own): a value equal to its default is never refused, typed or not;
- the page and its HTTP API (/generate): a value other than the page's own default (a disabled control goes back to
  it, and an API client that leaves a parameter out sends that default);
- the Python API, `RunSettings`: a value other than the contract's default, for the needs marked `contract` (the
  others are carried by sweeps and records: a seed sweep at temperature 0, a recorded tree run's K).

A command's own flags that apply only with another of its flags are a table of their own, read the same way:
`BENCH_NEEDS` for `python -m specviz bench` (measure/bench_flags.py) (its `met` reads the command's options by name; the CLI tells the flags
typed from those left at their defaults and refuses the first whose need is unmet).

Imports only bounds.py (the rules' names) of specviz: the drafter's facts arrive as `DrafterFacts`, made from the
registry by its reader.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from specviz.settings.bounds import THRESHOLD_RULE as THRESHOLD



@dataclass(frozen=True)
class DrafterFacts:
    """What the needs read of a drafter (drafters/base.py's Drafter says the same in its own terms)."""

    key: str
    tree: bool  # drafts a tree, whose widths or budget set its size (no K, no adaptive K)
    runs_draft_model: bool  # steps the pair's draft model (its weights: --draft-weights)
    runs_a_model: bool  # steps a model at all (a copying drafter has no probabilities to stop by)
    reads: frozenset[str]  # the RunSettings fields only it reads (draft_layers, tree_widths, tree_budget, ...)
    own_passes: bool = True  # drafts by a model pass of its own (the draft model, the target's layers): what the
    #                          cost-aware rule prices; Medusa heads draft from the verify pass's state and run none


@dataclass(frozen=True)
class Asked:
    """What a run asks, as far as the needs read it."""

    adaptive: bool
    stop_rule: str
    temperature: float
    drafter: DrafterFacts


@dataclass(frozen=True)
class Need:
    """`setting` does something only when `met(asked)`; else it needs what `when` says, set by changing `other`
    (or, where `also` names one, another setting to another value)."""

    setting: str  # a RunSettings field, or a load option (draft_weights)
    when: str  # how a sentence ends after 'applies only': 'with adaptive K'
    other: str  # the setting to change so that it applies
    to: str  # what to set `other` to, in words with its preposition ('to threshold'); '' for a switch (turn it
    #          on) and for a drafter need, whose sentence lists the drafters that meet it
    met: Callable[[Any], bool]  # reads an Asked (NEEDS) or a command's options by name (BENCH_NEEDS)
    drafters: Callable[[DrafterFacts], bool] | None = None  # a need on the drafter: which drafters meet it (with
    #                                                         the other settings unknown; a refusal that knows them
    #                                                         lists those that meet it there)
    contract: bool = True  # RunSettings refuses it too (see the module's docstring)
    also: tuple[str, Any, str] | None = None  # another fix: (setting, value, in words with its preposition), offered
    #                                           where that value meets the need
    off: bool = False  # `other` is a switch that must be off ('leave out --rules'), not on


def _drafter(test: Callable[[DrafterFacts], bool]) -> Callable[[Asked], bool]:
    return lambda asked: test(asked.drafter)


def _chain_model(d: DrafterFacts) -> bool:
    return d.runs_a_model and not d.tree


def _adaptive(asked: Asked) -> bool:
    """Adaptive K sets a chain's length by a model's probabilities; its cost-aware rule prices each further draft
    pass, so a drafter with no passes of its own (Medusa heads, the EAGLE layer) stops only by the confidence
    threshold."""
    d = asked.drafter
    return _chain_model(d) and (d.own_passes or asked.stop_rule == THRESHOLD)


def _sampled(asked: Asked) -> bool:
    return asked.temperature > 0


NEEDS = {need.setting: need for need in (
    Need("k", "with a chain drafter (a tree's widths or budget set its size)", "drafter", "",
         _drafter(lambda d: not d.tree),
         drafters=lambda d: not d.tree, contract=False),
    Need("adaptive", "with a chain drafter that runs a model (adaptive K sets a chain's length by the model's own "
                     "probabilities; a tree has a fixed shape), and with Medusa heads or the EAGLE layer only by "
                     "the confidence threshold (the cost-aware stop rule prices a model's draft passes, and they "
                     "run none)", "drafter", "",
         _adaptive, drafters=lambda d: _chain_model(d) and d.own_passes, also=("stop_rule", THRESHOLD,
                                                                              f"to {THRESHOLD}")),
    Need("stop_rule", "with adaptive K", "adaptive", "", lambda a: a.adaptive),
    Need("confidence", "with adaptive K stopping by the confidence threshold", "stop_rule", f"to {THRESHOLD}",
         lambda a: a.adaptive and a.stop_rule == THRESHOLD),
    Need("draft_layers", "with self-speculation", "drafter", "", _drafter(lambda d: "draft_layers" in d.reads),
         drafters=lambda d: "draft_layers" in d.reads),
    Need("tree_widths", "with a tree drafter of fixed widths", "drafter", "",
         _drafter(lambda d: "tree_widths" in d.reads), drafters=lambda d: "tree_widths" in d.reads),
    *(Need(name, "with a shaped tree drafter", "drafter", "", _drafter(lambda d, name=name: name in d.reads),
           drafters=lambda d, name=name: name in d.reads) for name in ("tree_budget", "tree_depth")),
    Need("draft_weights", "with a drafter that runs the draft model", "drafter", "",
         _drafter(lambda d: d.runs_draft_model), drafters=lambda d: d.runs_draft_model, contract=False),
    *(Need(name, "when sampling (at temperature 0 the most likely token is taken)", "temperature", "above 0",
           _sampled, contract=False) for name in ("top_k", "top_p", "seed")),
)}


def unmet(given: Iterable[str], asked: Any, contract_only: bool = False,
          table: Iterable[Need] | None = None) -> list[Need]:
    """The needs of the settings `given` that `asked` does not meet, in the table's order (NEEDS' by default; a
    command's own, such as BENCH_NEEDS, with its options as `asked`).

    >>> model = DrafterFacts("model", False, True, True, frozenset())
    >>> [n.setting for n in unmet({"stop_rule", "k"}, Asked(False, "cost", 0.0, model))]
    ['stop_rule']
    """
    given = set(given)
    return [need for need in (NEEDS.values() if table is None else table) if need.setting in given
            and (need.contract or not contract_only) and not need.met(asked)]


def refusal(need: Need, name: Callable[[str], str], drafters: Iterable[DrafterFacts] = (),
            asked: Asked | None = None) -> str:
    """The sentence that refuses a setting whose need is unmet, in the words of the place that asks: `name` turns a
    setting into what the user typed there ('stop_rule' -> '--stop-rule' on the command line). With `asked` (what
    the rest of the request asks), it offers only the changes that would meet the need there.

    >>> refusal(NEEDS["stop_rule"], lambda s: "--" + s.replace("_", "-"))
    '--stop-rule applies only with adaptive K: turn on --adaptive, or leave --stop-rule out (it would do nothing)'
    """
    return f"{name(need.setting)} applies only {need.when}: {_fix(need, name, drafters, asked)}"


def _fix(need: Need, name: Callable[[str], str], drafters: Iterable[DrafterFacts], asked: Asked | None) -> str:
    other = name(need.other)
    if need.drafters is not None:
        meet = ((lambda d: need.met(replace(asked, drafter=d))) if asked is not None else need.drafters)
        change = f"set {other} to {_either([d.key for d in drafters if meet(d)])}"
    elif need.off:
        change = f"leave out {other}"
    else:
        change = f"set {other} {need.to}" if need.to else f"turn on {other}"
    if need.also and asked is not None and need.met(replace(asked, **{need.also[0]: need.also[1]})):
        change += f", or set {name(need.also[0])} {need.also[2]}"
    return f"{change}, or leave {name(need.setting)} out (it would do nothing)"


def _either(keys: list[str]) -> str:
    """['a', 'b', 'c'] -> 'a, b or c'."""
    return " or ".join([", ".join(keys[:-1]), keys[-1]] if len(keys) > 1 else keys)


def why_off(need: Need) -> str:
    """What a disabled control of the page says: 'Applies only with adaptive K'."""
    return f"Applies only {need.when}"

"""The one request contract: `RunSettings`, what a run asks for, with one default per field (settings/defaults.py's,
which the page reads too), checked once when it is made. Generate, Baseline and the Lab's comparison ask with it; the page (app/inputs.py), the CLI and the Python API
build it by keyword; a trace records it (`asdict`), and a trace's settings make it again (Baseline reruns them).

    RunSettings(k=4, temperature=0.7, drafter="lookup")      # every field has a default; bad values: ValueError

What each field may be is settings/bounds.py's `RUN_BOUNDS` (the page offers a narrower subset for a shared
server, app/inputs.py); which drafters exist, and which of these fields each reads, is the drafter registry's.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Mapping

from specviz.algorithm.sampling import SamplingSettings
from specviz.algorithm.tree import check_widths
from specviz.drafters import DEFAULT, REGISTRY, Drafter, drafter
from specviz.drafters.tree import DEFAULT_WIDTHS
from specviz.settings import defaults
from specviz.settings.bounds import ADAPTIVE_CONFIDENCE, RUN_BOUNDS, STOP_RULES, short_repr, widths_text
from specviz.settings.needs import NEEDS, Asked, refusal, unmet


@dataclass(frozen=True)
class RunSettings:
    k: int = defaults.K  # draft tokens per round (the most, when adaptive)
    temperature: float = defaults.TEMPERATURE  # 0 = greedy
    top_k: int = defaults.TOP_K  # 0 = off
    top_p: float = defaults.TOP_P  # 1 = off
    seed: int = defaults.SEED
    max_new_tokens: int = defaults.MAX_NEW_TOKENS
    adaptive: bool = defaults.ADAPTIVE  # K per round, stopped by `stop_rule`
    confidence: float = ADAPTIVE_CONFIDENCE  # the threshold rule's: stop drafting once the draft's estimate that all
    #                                          its drafts so far survive (the product of its probabilities of them)
    #                                          falls below this. Exact: it reads only the draft (chain.py's _confidence)
    stop_rule: str = defaults.STOP_RULE  # with adaptive K, how a round stops drafting: a key of STOP_RULES ("cost":
    #                                      each further draft must pay for itself on this machine, algorithm/cost_rule.py)
    chat: bool = defaults.CHAT  # wrap the prompt in the tokenizer's chat template when it has one
    drafter: str = DEFAULT.key  # a key of the drafter registry (specviz/drafters/)
    draft_layers: int = defaults.DRAFT_LAYERS  # self-speculation's N; 0: half the target's layers
    tree_widths: tuple[int, ...] | None = None  # a tree drafter's children per node at each depth, e.g. (2, 2, 1, 1);
    #                                             None: its default (drafters/tree.py). K is unused there
    tree_budget: int = defaults.TREE_BUDGET  # a shaped tree's most nodes (drafters/shaped_tree.py)
    tree_depth: int = defaults.TREE_DEPTH  # a shaped tree's most depth; 0: its drafter's default

    def __post_init__(self):
        for name, bound in RUN_BOUNDS.items():  # the one statement of what a run accepts
            object.__setattr__(self, name, bound.check(getattr(self, name), name))  # 4.0 -> 4: ints where whole
        for name, said in (("adaptive", "adaptive K"), ("chat", "chat")):
            if not isinstance(getattr(self, name), bool):  # 1, "yes" or [] would otherwise pass as truthy
                raise ValueError(f"{said} must be true or false, got {short_repr(getattr(self, name))}")
        if self.stop_rule not in STOP_RULES:
            raise ValueError(f"stop rule must be one of {', '.join(STOP_RULES)}, got {short_repr(self.stop_rule)}")
        self.drafter_spec  # ValueError for a key the registry lacks
        if self.tree_widths is not None:
            object.__setattr__(self, "tree_widths", check_widths(self.tree_widths))  # [2, 1] -> (2, 1)
        # A setting besides its default that does nothing beside the others (settings/needs.py: tree widths with a
        # chain drafter, adaptive K with a tree or prompt lookup, or with Medusa heads and the cost-aware rule, ...):
        # say what it needs
        refuse_unneeded({f.name: getattr(self, f.name) for f in fields(self)}, contract_only=True)

    @classmethod
    def recorded(cls, settings: Mapping) -> "RunSettings":
        """The RunSettings a trace's settings make again: its extra keys ignored, and so are settings that did
        nothing in its run (a page run records the stop rule with adaptive K off), which a new one would refuse."""
        values = {f.name: settings[f.name] for f in fields(cls) if f.name in settings}
        dropped = {need.setting for need in unmet(values, asked_of(values), contract_only=True)}
        return cls(**{name: value for name, value in values.items() if name not in dropped})

    @property
    def drafter_spec(self) -> Drafter:
        """The drafter registry's entry for `drafter` (specviz/drafters): where its drafts come from, chain or tree."""
        return drafter(self.drafter)

    @property
    def widths(self) -> tuple[int, ...]:
        """The tree's widths a run of a tree drafter of fixed widths uses."""
        return self.tree_widths or self.drafter_spec.default_widths or DEFAULT_WIDTHS

    @property
    def depth(self) -> int:
        """How deep a tree drafter's rounds draft at most: its widths' depth, or a shaped tree's most depth (its
        drafter's default for 0)."""
        spec = self.drafter_spec
        return (self.tree_depth or spec.default_depth) if spec.shaped else len(self.widths)

    @property
    def tree_text(self) -> str:
        """A tree drafter's shape as asked, in words: 'tree 2-2-1-1', 'shaped tree of at most 16 nodes, 4 deep'."""
        if self.drafter_spec.shaped:
            return f"shaped tree of at most {self.tree_budget} nodes, {self.depth} deep"
        return f"tree {widths_text(self.widths)}"

    @property
    def sampling(self) -> SamplingSettings:
        return SamplingSettings(self.temperature, self.top_k, self.top_p)


def asked_of(values: Mapping) -> Asked:
    """What settings/needs.py reads of a run asking `values` (field -> value; the rest at the contract's defaults)."""
    v = {**CONTRACT_DEFAULTS, **values}
    return Asked(v["adaptive"], v["stop_rule"], v["temperature"], drafter(v["drafter"]).facts)


def refuse_unneeded(values: Mapping, base: Mapping | None = None, name: Callable[[str], str] = str,
                    contract_only: bool = False) -> None:
    """ValueError for the first of `values` (field or load option -> value) that differs from its default (in
    `base`, else the contract's) while what it needs is not set, in the words `name` gives each setting (the
    CLI's flags, the API's parameters); settings/needs.py says which setting needs which."""
    base = {**CONTRACT_DEFAULTS, **(base or {})}
    given = [key for key, value in values.items() if key in NEEDS and value != base.get(key)]
    asked = asked_of(values)
    for need in unmet(given, asked, contract_only):
        raise ValueError(refusal(need, name, DRAFTER_FACTS, asked))


CONTRACT_DEFAULTS = {f.name: f.default for f in fields(RunSettings)}  # what a run asks when nothing is said
DRAFTER_FACTS = tuple(d.facts for d in REGISTRY.values())  # what a refusal lists: the drafters meeting a need

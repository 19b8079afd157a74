"""The one request contract: `RunSettings`, what a run asks for, with one default per field (settings/defaults.py's,
which the page reads too), checked once when it is made. Generate, Baseline and the Lab's comparison ask with it; the page (app/inputs.py), the CLI and the Python API
build it by keyword; a trace records it (`asdict`), and a trace's settings make it again (Baseline reruns them).

    RunSettings(k=4, temperature=0.7, drafter="lookup")      # every field has a default; bad values: ValueError

What each field may be is settings/bounds.py's `RUN_BOUNDS` (the page offers a narrower subset for a shared
server, app/inputs.py); which drafters exist, and which of these fields each reads, is the drafter registry's.
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.algorithm.sampling import SamplingSettings
from specviz.algorithm.tree import check_widths
from specviz.drafters import DEFAULT, REGISTRY, Drafter, drafter
from specviz.drafters.tree import DEFAULT_WIDTHS
from specviz.settings import defaults
from specviz.settings.bounds import ADAPTIVE_CONFIDENCE, RUN_BOUNDS, STOP_RULES, short_repr


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

    def __post_init__(self):
        for name, bound in RUN_BOUNDS.items():  # the one statement of what a run accepts
            object.__setattr__(self, name, bound.check(getattr(self, name), name))  # 4.0 -> 4: ints where whole
        for name, said in (("adaptive", "adaptive K"), ("chat", "chat")):
            if not isinstance(getattr(self, name), bool):  # 1, "yes" or [] would otherwise pass as truthy
                raise ValueError(f"{said} must be true or false, got {short_repr(getattr(self, name))}")
        if self.stop_rule not in STOP_RULES:
            raise ValueError(f"stop rule must be one of {', '.join(STOP_RULES)}, got {short_repr(self.stop_rule)}")
        spec = self.drafter_spec  # ValueError for a key the registry lacks
        if self.tree_widths is not None:
            object.__setattr__(self, "tree_widths", check_widths(self.tree_widths))  # [2, 1] -> (2, 1)
            if not spec.tree:
                trees = ", ".join(repr(d.key) for d in REGISTRY.values() if d.tree)
                raise ValueError(f"tree widths are for the tree drafter only; {spec.label} drafts a chain (choose "
                                 f"drafter {trees} to draft a tree)")
        if spec.tree and self.adaptive:
            raise ValueError("adaptive K sets a chain's length; a draft tree has a fixed shape (set its widths "
                             "instead), so the tree drafter cannot be adaptive")

    @property
    def drafter_spec(self) -> Drafter:
        """The drafter registry's entry for `drafter` (specviz/drafters): where its drafts come from, chain or tree."""
        return drafter(self.drafter)

    @property
    def widths(self) -> tuple[int, ...]:
        """The tree's widths a run of a tree drafter uses."""
        return self.tree_widths or self.drafter_spec.default_widths or DEFAULT_WIDTHS

    @property
    def sampling(self) -> SamplingSettings:
        return SamplingSettings(self.temperature, self.top_k, self.top_p)

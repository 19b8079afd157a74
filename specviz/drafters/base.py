"""What a drafter declares: `Drafter` (its key, label, where its drafts come from, its parameters and the sentences
the round view says about it) and `Param` (one setting of a drafter, with its default and bound).

A drafter is data, not code that runs a model: the engine reads `source` and `tree` to run it, the page, the CLI,
the API, the bench and the Lab read the rest. Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from specviz.settings.needs import DrafterFacts

# Where a drafter's drafts come from (Drafter.source): what the engine runs to get them.
DRAFT_MODEL = "draft model"  # the pair's smaller model steps once per draft, with its own KV cache
TARGET_LAYERS = "target layers"  # the target's first N layers, its final norm and LM head step once per draft
EARLIER_TEXT = "earlier text"  # no model: `Drafter.propose` copies tokens; q is a point mass on each
TARGET_STATE = "target state"  # trained heads read the hidden state the target's last verify pass computed: no
#                                model pass to draft, no draft cache (engine/medusa.py, engine/eagle.py)


@dataclass(frozen=True)
class Param:
    """One setting that only some drafters read (the run's other settings, K and the sampling, every drafter reads)."""

    name: str  # the RunSettings field
    label: str  # as the page and messages say it
    flag: str  # the CLI's option
    help: str  # one line: what it does, its default in words


@dataclass(frozen=True)
class Drafter:
    """A way for a round to get its drafts. `key` is what RunSettings.drafter, trace files, the API and the CLI's
    --drafter say; it never changes once shipped (old traces name it)."""

    key: str
    label: str  # what people read: the page's choice, the Lab's table, the CLI's help
    source: str  # DRAFT_MODEL, TARGET_LAYERS, EARLIER_TEXT or TARGET_STATE
    proposed: Callable[[int, str, str], str] | None = None  # a chain round's sentence in the round view: (k, the
    #                                                         drafts as quoted HTML, the draft's escaped name) -> HTML
    tree: bool = False  # drafts a tree of continuations (engine/tree_run.py) instead of a chain; the tree view
    #                     draws and explains its rounds
    tree_said: str = "The draft model proposed a tree, one draft pass per depth"  # a tree round's opening words
    distinct: bool = False  # a tree drafter whose siblings are drawn without replacement (verified accordingly)
    shaped: bool = False  # a tree grown each round where the draft's own path probabilities are highest, within a
    #                       node budget (algorithm/shaped.py), instead of fixed widths; its siblings are distinct
    default_depth: int = 0  # a shaped tree's most depth when none is set (RunSettings.tree_depth 0)
    params: tuple[Param, ...] = ()
    propose: Callable[[list[int], int], list[int]] | None = None  # EARLIER_TEXT: (ids so far, k) -> up to k drafts
    nothing_found: str = ""  # why a round drafted nothing while tokens were left (a copy with no match)
    trained: str = ""  # TARGET_STATE: the kind of trained heads it drafts with (drafters/trained.py's MEDUSA or EAGLE)
    default_widths: tuple[int, ...] | None = None  # a tree drafter's shape when none is set (None: drafters/tree.py's)
    card_said: Callable[[int], str] | None = None  # the line on draft position i's card (0-based; a tree's depth i
    #                                                node): who proposed it, where that says more than "the draft"
    chart_symbol: str = "circle"  # its marker and line in the Lab's comparison chart (a second cue beside colour)
    chart_dash: str = "solid"

    @property
    def has_draft_cache(self) -> bool:
        """Whether a draft KV cache exists to draw: every drafter that runs a model keeps one (heads run none)."""
        return self.source in (DRAFT_MODEL, TARGET_LAYERS)

    @property
    def chain(self) -> bool:
        """A chain drafter (one row of K drafts): what the Lab's comparison and the cost model E(α, K) describe."""
        return not self.tree

    @property
    def facts(self) -> DrafterFacts:
        """What settings/needs.py reads of this drafter: which settings apply with it."""
        return DrafterFacts(self.key, self.tree, self.source == DRAFT_MODEL, self.source != EARLIER_TEXT,
                            frozenset(p.name for p in self.params), own_passes=self.has_draft_cache)

    def reads(self, param: str) -> bool:
        """Whether this drafter reads the RunSettings field `param`."""
        return any(p.name == param for p in self.params)


def plural(n: int, word: str) -> str:
    """1 -> '1 token', 3 -> '3 tokens'."""
    return f"{n} {word}{'s' * (n != 1)}"

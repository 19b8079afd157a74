"""The names, choices and bounds that every layer shares, each defined once (the example prompts: prompts.py).

Imports nothing of specviz, so anything may import it: the engine checks a run's settings against
`RUN_BOUNDS`, the page offers a stated subset of them (`specviz.app.inputs.LIMITS`), the CLI and the benchmark take
their choices from here, and the trace loader refuses what no run could record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

MAX_K = 16  # the most draft tokens per round anywhere in specviz (engine, page, Lab, trace files)
MAX_BATCH = 16  # the most sequences one batch decodes at once (engine/batched.py, serve-bench, the page's Busy server)
# Adaptive K's default threshold: drafting stops once the product of the draft's own probabilities of its drafts
# (its estimate that all of them survive) falls below this (engine/chain.py's _confidence says why a product).
ADAPTIVE_CONFIDENCE = 0.25
# How adaptive K decides when to stop drafting: the threshold on that product, or the cost-aware rule, which weighs
# each further draft's estimated chance of surviving against what it costs on this machine (algorithm/cost_rule.py).
THRESHOLD_RULE, COST_RULE = "threshold", "cost"
STOP_RULES = {THRESHOLD_RULE: "confidence threshold", COST_RULE: "cost-aware"}  # rule -> its name on the page

# How a round gets its drafts is the drafter registry's (specviz/drafters/).
TARGET_ONLY = "target"  # a comparison's baseline row: no drafter, one target pass per token
TARGET_ONLY_LABEL = "target only"

DTYPE_CHOICES = ("auto", "float32", "bfloat16", "float16")  # auto: bfloat16 where the CPU has it, else float32
DRAFT_WEIGHTS = ("auto", "int4", "int8", "full")  # auto: on CPU the fastest of the three there (quant.fastest_weights),
#                                                    full weights elsewhere

Progress = Callable[[float, str], None]  # (fraction done 0..1, message): how loading reports what it is doing


@dataclass(frozen=True)
class Bound:
    """The values one numeric setting may take: from low to high (either end left out when open), whole numbers
    only when `whole`."""

    low: float
    high: float  # math.inf: no upper bound
    whole: bool = False
    open_low: bool = False  # low itself is not allowed
    open_high: bool = False  # high itself is not allowed

    def allows(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:  # NaN != NaN
            return False
        above = value > self.low if self.open_low else value >= self.low
        below = value < self.high if self.open_high else value <= self.high
        return above and below and (not self.whole or isinstance(value, int) or value.is_integer())

    def check(self, value, name: str) -> int | float:
        """value as an int (whole) or a float, or ValueError naming the setting as `name` and what is allowed.

        >>> Bound(1, 16, whole=True).check(4.0, "K")
        4
        """
        if not self.allows(value):
            raise ValueError(f"{name} must be {self.describe()}, got {short_repr(value)}")
        return int(value) if self.whole else float(value)

    def describe(self) -> str:
        """In words: 'a whole number from 1 to 16', 'a number above 0 and at most 1', 'a whole number >= 0'."""
        kind = "a whole number" if self.whole else "a number"
        if math.isinf(self.high):
            return f"{kind} {'>' if self.open_low else '>='} {_plain(self.low)}"
        if self.open_low or self.open_high:
            low = f"above {_plain(self.low)}" if self.open_low else f"at least {_plain(self.low)}"
            high = f"below {_plain(self.high)}" if self.open_high else f"at most {_plain(self.high)}"
            return f"{kind} {low} and {high}"
        return f"{kind} from {_plain(self.low)} to {_plain(self.high)}"

    def within(self, other: "Bound") -> bool:
        """Whether every value this bound allows, `other` allows too."""
        low_ok = other.low < self.low or (other.low == self.low and (self.open_low or not other.open_low))
        high_ok = self.high < other.high or (self.high == other.high and (self.open_high or not other.open_high))
        return low_ok and high_ok and (self.whole or not other.whole)


# A draft tree's bounds (tree.TreeShape checks them). Why these: a node costs one token in the target's verify pass,
# which is nearly free only while the pass stays memory-bound (docs/benchmarks.md, "Why it pays", dates each t(n)/t(1)
# it quotes: nearly flat to 9 tokens in bfloat16 on a 2-core CPU, steep in float32 on an AVX2-only one), and the
# page draws every node with its token, p and q, which stays legible up to about 32 nodes. Wider than 4 mostly
# repeats tokens (children are i.i.d. samples from a peaked q), and deeper than 6 rarely survives (a path of depth d
# survives with about alpha^d).
WIDTH_BOUND = Bound(1, 4, whole=True)  # children per node at one depth
DEPTH_BOUND = Bound(1, 6, whole=True)  # depths below the root
MAX_TREE_NODES = 32  # drafted nodes (the root, already committed, not counted)
# A tree shaped per round (algorithm/shaped.py) grows no node whose value (its parent's path probability × the
# likeliest token left there) is below this share of the root's: the draft's own confidence is a fair proxy for
# acceptance (EAGLE-2), so such a node would almost never survive, and each node costs a row of the verify pass
SHAPED_FLOOR = 0.01


# What a run accepts: RunSettings and SamplingSettings check these, the page offers a subset (inputs.LIMITS).
RUN_BOUNDS = {
    "k": Bound(1, MAX_K, whole=True),
    "temperature": Bound(0, 100),  # 0 = greedy
    "top_k": Bound(0, math.inf, whole=True),  # 0 = off
    "top_p": Bound(0, 1, open_low=True),  # at 0 nothing would be kept
    "seed": Bound(0, 2**63 - 1, whole=True),  # what torch.Generator.manual_seed takes
    "max_new_tokens": Bound(1, math.inf, whole=True),
    "confidence": Bound(0, 1, open_high=True),  # adaptive K's threshold on the product of the draft's probabilities
    "draft_layers": Bound(0, 1024, whole=True),  # self-speculation's N (0: half the target's layers); the engine
    #                                              checks it against the target's own layer count
    "tree_budget": Bound(1, MAX_TREE_NODES, whole=True),  # a shaped tree's node budget (algorithm/shaped.py)
    "tree_depth": Bound(0, DEPTH_BOUND.high, whole=True),  # a shaped tree's most depth; 0: its drafter's default
}


def check_prompt_given(prompt) -> str:
    """The prompt, or ValueError where there is none to run: not text, or only whitespace. The one statement of that
    rule (the engine, the CLI, the page and the Lab ask it; the page adds its own limits, app/inputs.py)."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("prompt is empty")
    return prompt


def whole_number(value) -> int | None:
    """value as an int when it is a whole number: an int, a whole float (4.0), or a string of one ('3', as a JSON
    object's keys arrive); None otherwise (True, 2.5, 'x', None). Each caller says what the number was for."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                value = float(value)
            except ValueError:
                return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    return value


def short_repr(value, limit: int = 40) -> str:
    """repr for a message, cut short: a file or an API client may put megabytes where a number belongs."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _plain(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def widths_text(widths) -> str:
    """(2, 2, 1, 1) -> '2-2-1-1': how a tree's shape is written everywhere (tree.parse_widths reads it back)."""
    return "-".join(map(str, widths))

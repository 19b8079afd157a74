"""The one data model: what a speculative decoding run recorded, round by round, and its JSON form.

Everything the app draws is a pure function of these records, so a trace saved to JSON replays with no model
loaded. `Trace.to_json` / `Trace.from_json` round-trip without loss; `load_trace` adds the checks an
uploaded file needs (size, shape, types) and raises ValueError with a readable message.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from specviz.drafters import Drafter, recorded
from specviz.record.strict_json import build
from specviz.settings.defaults import as_recorded

FORMAT = "specviz-trace"
FORMAT_VERSION = 11  # 2 added Round.cache and Baseline.step_times_s; 3: round 1 is the target's prefill alone
#                    (no drafts), and the draft reads the prompt in round 2 (before, round 1 drafted too);
#                    4 added Round.drafter and Round.tree (the tree drafter's rounds), settings.tree_widths;
#                    5 added DraftPosition.confidence (adaptive K's factors) and Trace.draft_memory;
#                    6 added the cost-aware rule's record: Round.cost, Trace.pass_costs, Trace.rule_note;
#                    7 added Baseline.repeats (the run and the target alone timed in turns);
#                    8 added Trace.kernels (the CPU path the linear layers ran on), and TreeRecord.budget and
#                    .factors with settings.tree_budget and tree_depth (a tree shaped per round);
#                    9 added TimedRun.pass_s and later_pass_s (each turn's target-pass seconds: its own ceiling);
#                    10 added Repeats.load_before and load_after (the machine's load average around the turns);
#                    11 added Trace.opening (the chat template's opening, held by the caches from the start)
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)  # a version-1 file opens; what it did not record shows as
#                                                         "not recorded"
MAX_TRACE_BYTES = 20 * 1024 * 1024  # an upload larger than this is refused before parsing
MAX_TOKEN_ID = 2**31 - 1  # above any real vocabulary; a larger id cannot come from a tokenizer
MAX_ROUNDS = 10_000  # far above the page's runs (512 tokens at most); a step through that many is slow already
#                      (docs/benchmarks.md, "Timings behind choices in the code")

# The fate of a token in a round. One word per fate, used by the CLI, the HTML and the charts alike. A REPLACEMENT is
# the token drawn from the residual max(0, p − q) at the first rejection: what vLLM and others call a "recovered"
# token. A BONUS is the target's own next token after every draft was accepted.
ACCEPTED, REJECTED, DISCARDED, REPLACEMENT, BONUS = "accepted", "rejected", "discarded", "replacement", "bonus"
# A round that drafted nothing (round 1, the target's prefill; a copy with no match; one token left) records its one
# token as next_kind BONUS, but it is no bonus: nothing was accepted before it. `Round.last_kind` calls it PLAIN, the
# target's own token, as decoding alone makes it; the page, the charts and the CLI show that word.
PLAIN = "plain"


@dataclass
class TokenProb:
    """One candidate token with its probabilities under the target (p) and the draft (q)."""

    token_id: int
    text: str
    p: float
    q: float | None = None  # None where the draft proposed nothing (the bonus position)
    residual: float | None = None  # normalised max(0, p - q), only in a rejection's residual list


@dataclass
class DraftPosition:
    """One token the draft proposed, and what verification decided about it."""

    token_id: int
    text: str
    q: float  # q(x): probability the draft gave the token it sampled
    p: float  # p(x): probability the target gives it at the same position
    fate: str  # ACCEPTED, REJECTED or DISCARDED (after an earlier rejection: never examined)
    accept_prob: float | None = None  # min(1, p/q); None when DISCARDED
    uniform: float | None = None  # the draw r; None when DISCARDED
    overlap: float | None = None  # sum over the vocabulary of min(p, q): the chance this position accepts
    candidates: list[TokenProb] = field(default_factory=list)  # top tokens of p and of q, with both probs
    confidence: float | None = None  # with adaptive K: the draft's own probability of the token at temperature 1
    #                                  (not the warped q), a factor of the product its stop rule compares


@dataclass
class CacheLengths:
    """Positions held by each model's KV cache at four moments of a round: before drafting, after drafting,
    after the target's verify pass, after the rollback. Drafting touches only the draft's cache and the verify
    pass only the target's, so each list repeats a value where its model did not run."""

    draft: list[int]
    target: list[int]


@dataclass
class TreeRecord:
    """A tree round's shape and walk (tree.py). Its drafted nodes are the round's drafts in breadth-first order:
    node i is drafts[i - 1], with its token, its p and q (both read at its parent's position), its fate, accept
    probability and uniform. Node 0, the root, is the last token committed before the round."""

    widths: list[int]  # children per node at each depth (fewer depths than set when few tokens were left)
    parents: list[int]  # per node, root first: -1 for the root, else an earlier node
    depth: list[int]  # per node, root first: 0 for the root
    root_id: int
    root_text: str
    path: list[int]  # the accepted nodes, the root's child first: their tokens are committed before next_token
    test_p: list[float | None]  # per drafted node: p'(x), what its test compared with q(x): p(x), or after a rejected
    #                             sibling the residual's value at x; None where never tested
    budget: int = 0  # a tree shaped per round (algorithm/shaped.py): its node budget, and widths is then empty; 0: a
    #                  tree of fixed widths
    factors: list[float] = field(default_factory=list)  # a shaped tree's, per drafted node: the draft's own probability
    #                       of its token where it was drafted (q; at temperature 0 the draft's at temperature 1), the
    #                       factor it adds to its path's score; a node's path score is the product along its path

    @property
    def shaped(self) -> bool:
        """Grown per round within a node budget, not drafted to fixed widths."""
        return self.budget > 0

    @property
    def deepest(self) -> int:
        """The tree's depth: its deepest node's (len(widths) for a tree of widths)."""
        return max(self.depth)

    def path_factors(self, node: int) -> list[float]:
        """The factors along node's path, root side first: their product is its path score."""
        out = []
        while node > 0:
            out.append(self.factors[node - 1])
            node = self.parents[node]
        return out[::-1]


@dataclass
class DraftChoice:
    """The cost-aware rule's reading before one more draft (algorithm/cost_rule.py): would it pay?"""

    survive: float  # the estimated chance that this draft and every one before it survive: the tokens it would add
    cost: float  # what drafting and verifying it adds, in one-token target steps: c + v(n) − v(n − 1)
    drafted: bool  # gain > 0 (or a probe)
    probe: bool = False  # drafted only to measure again, after PROBE_EVERY_AT_ANY_PRICE rounds without drafts
    gain: float = 0.0  # the best net gain in tokens of drafting this one and up to every later one the round allows:
    #                    the sum of survive − rate × cost over them (predicted: later drafts at the run's acceptance)


@dataclass
class CostDecision:
    """How the cost-aware rule chose a round's K: each draft it weighed, at the exchange rate it had."""

    rate: float  # tokens the run had made per one-token target step of predicted cost (at least 1: the target alone)
    choices: list[DraftChoice]  # one per draft weighed, in order; the last one not drafted is why it stopped
    expected_tokens: float  # 1 + the survive estimates of the drafts made: what the rule expected the round to yield
    expected_cost: float  # K·c + v(K) (+ catch_up): what it expected the round to cost, in one-token target steps
    c: float | None = None  # the prices this round was weighed at (they follow what the run's rounds paid): a draft
    v: list[float] | None = None  # step, v[n] the verify pass over n drafts; None: the run's pass_costs (older traces)
    catch_up: float = 0.0  # the share of the draft's catch-up (after plain rounds) charged to the round's first draft
    #                        (cost_rule.catch_up_share), in one-token target steps: in that choice's cost and, if it
    #                        drafted, in expected_cost


@dataclass
class PassCosts:
    """The costs the cost-aware rule priced a run with, in one-token target steps (measured; record/cost_profile.py)."""

    c: float  # one draft step
    v: list[float]  # v[n]: the verify pass over n drafts (n + 1 tokens); v[0] = 1, never decreasing
    load: int  # runs in flight the prices assume (the server's, when the run started)
    source: str  # which measurement, where, when: said on the page


@dataclass
class Round:
    """One draft-and-verify round: K draft tokens (a chain, or the nodes of a tree), one target pass, then
    1..depth+1 committed tokens."""

    index: int  # 0-based
    k: int  # tokens drafted this round (may be below the setting near EOS, max_new_tokens or adaptive K); a tree's
    #         drafted nodes
    drafts: list[DraftPosition]
    n_accepted: int
    next_token: TokenProb  # the replacement (after a rejection) or the bonus (after a clean sweep)
    next_kind: str  # REPLACEMENT or BONUS
    residual: list[TokenProb] | None  # top of norm(max(0, p - q)) at the rejection, else None
    bonus_candidates: list[TokenProb] | None  # top of p at the bonus position after a clean sweep, else None
    committed_ids: list[int]  # what this round appended to the output (cut at EOS / max_new_tokens)
    draft_time_s: float
    verify_time_s: float
    stop: str | None = None  # "eos", "max_new_tokens" when the run ended in this round
    cache: CacheLengths | None = None  # None: not recorded (traces of format version 1)
    drafter: str | None = None  # RunSettings.drafter that drafted the round; None: not recorded (versions 1-3)
    tree: TreeRecord | None = None  # the tree drafter's shape and walk; None for a chain (k drafts in a row)
    cost: CostDecision | None = None  # the cost-aware rule's weighing; None: another rule, or round 1 (the prefill)

    @property
    def tokens_this_pass(self) -> int:
        return len(self.committed_ids)

    @property
    def accepted_drafts(self) -> list[DraftPosition]:
        """The accepted drafts in order: a chain's first n_accepted, a tree's path."""
        return [self.drafts[c - 1] for c in self.tree.path] if self.tree else self.drafts[:self.n_accepted]

    @property
    def last_kind(self) -> str:
        """What the round's last token is, for people: REPLACEMENT, BONUS (after k > 0 accepted drafts) or PLAIN."""
        return PLAIN if self.next_kind == BONUS and self.k == 0 else self.next_kind

    @property
    def next_kept(self) -> bool:
        """Whether the replacement or bonus was committed: not when the accepted drafts ended the run (they end
        with the end-of-sequence token), since nothing after the end is kept."""
        return len(self.committed_ids) > self.n_accepted


@dataclass
class Summary:
    n_rounds: int
    n_new_tokens: int
    n_drafted: int
    n_examined: int
    n_accepted: int
    acceptance_rate: float  # accepted / examined draft tokens (bonus and replacements never count)
    mean_overlap: float  # mean of sum(min(p, q)) over examined positions: alpha estimated from distributions
    tokens_per_pass: float  # new tokens / target passes (round 1's pass also encodes the prompt)
    first_token_time_s: float  # time to the first committed token(s): round 1, the target's prefill (in version
    #                            1-2 traces round 1 drafted too, so both models encoded the prompt before it)
    draft_time_s: float
    verify_time_s: float
    total_time_s: float
    tokens_per_s: float


@dataclass
class Baseline:
    """A target-only run with the same settings and seed, timed the same way."""

    output_token_ids: list[int]
    output_text: str
    first_token_time_s: float  # the first step, which also encodes the prompt
    total_time_s: float
    tokens_per_s: float
    step_times_s: list[float] = field(default_factory=list)  # each step's seconds (the first encodes the prompt);
    #                                                         empty: not recorded (format version 1)
    repeats: Repeats | None = None  # the run and the target alone timed in turns; None: this one run of each only


MAX_TURNS = 100  # turns a trace's repeats may hold: far above any page or CLI run (each turn reruns both sides)
PUBLISHED_TURNS = 5  # the recorded examples' and the CLI's turns: at least five runs of each, as a paper publishes


@dataclass
class TimedRun:
    """One whole run's wall clock, as the repeats record it (no rounds: only what a speedup is made of)."""

    tokens: int  # new tokens
    total_s: float
    first_s: float  # to the first token: round 1, or the target alone's first step (each also encodes the prompt)
    pass_s: float | None = None  # the speculative run's target passes, all rounds (the sum of their verify times):
    #                              what its turn's ceiling is priced from; None: the target alone, or not recorded
    #                              (format versions 7-8)
    later_pass_s: float | None = None  # the same after round 1 (the decode speed's ceiling); None as pass_s


@dataclass
class Repeats:
    """The speculative run and the target alone timed in turns (run, target, run, target, …) after untimed warm-up
    runs of each, as a paper publishes a speedup: a slow minute on a shared machine slows both sides of a turn alike,
    so each turn's ratio holds, and their median and range say how sure the speedup is (record/stats.py)."""

    speculative: list[TimedRun]  # one per turn
    target: list[TimedRun]  # one per turn, the same count
    warm_up: int  # untimed runs of each before the first turn (the first passes pay for kernel selection, caches)
    machine: str  # what ran them: the CPU's model, cores and flags, or the GPU, in words
    load_before: float | None = None  # the machine's 1-minute load average just before the first turn and just after
    load_after: float | None = None  # the last (os.getloadavg; the turns' own threads count in it); None: not
    #                                  measured (no load average on this system, or turns timed before version 10)


@dataclass
class DraftMemory:
    """What the draft holds in memory for a run, measured on the loaded models (models/memory.py)."""

    weights_bytes: int  # its own parameters and buffers (quantized weights as stored)
    shared_bytes: int  # weights it shares with the target and so costs nothing more (self-speculation: all)
    kv_bytes_per_token: int  # its KV cache per token: 2 (keys, values) × layers × KV heads × head size × dtype


@dataclass
class Trace:
    settings: dict[str, Any]  # k, temperature, top_k, top_p, seed, max_new_tokens, drafter, adaptive, dtype ...
    draft_model: str
    target_model: str
    device: str
    dtype: str
    prompt: str
    prompt_token_ids: list[int]
    rounds: list[Round]
    output_token_ids: list[int]
    output_text: str
    summary: Summary | None = None
    baseline: Baseline | None = None
    eos_token_ids: list[int] = field(default_factory=list)
    draft_memory: DraftMemory | None = None  # None: no draft model (prompt lookup), or recorded before version 5
    pass_costs: PassCosts | None = None  # what the cost-aware rule priced with; None: it did not run
    rule_note: str | None = None  # why a run set to the cost-aware rule ran the threshold rule instead
    kernels: str = ""  # the path its linear layers ran on (models/kernels.py: float16-fbgemm, …); "": the dtype's own
    opening: int = 0  # prompt tokens the run's caches held from the start: the chat template's opening, read once per
    #                   model and copied into each run (engine/opening.py); 0: the run read the whole prompt
    format: str = FORMAT
    format_version: int = FORMAT_VERSION

    @property
    def drafter_spec(self) -> Drafter:
        """The drafter that made this trace (the registry's entry its settings name; the draft model for a trace
        from before there were others): what the view reads to say how its rounds were drafted."""
        return recorded(self.settings)

    @property
    def greedy(self) -> bool:
        """Whether the run was greedy (its settings' temperature is 0: the top token, no draws) rather than sampled:
        what the view reads to say how a draft was judged. Every run records its temperature (format version 1
        on); settings without it (a file written by hand) count as sampled."""
        return self.settings.get("temperature") == 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Trace":
        """A trace from its JSON form; a setting the file predates is what the run used (defaults.as_recorded:
        adaptive K stopped by the threshold before there were stop rules), not today's default."""
        if isinstance(data, dict) and isinstance(data.get("settings"), dict):
            data = {**data, "settings": as_recorded(data["settings"])}
        return build(cls, data, "trace")

    @classmethod
    def from_json(cls, text: str) -> "Trace":
        return cls.from_dict(json.loads(text))

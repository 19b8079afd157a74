"""The one data model: what a speculative decoding run recorded, round by round, and its JSON form.

Everything the app draws is a pure function of these records, so a trace saved to JSON replays with no model
loaded. `Trace.to_json` / `Trace.from_json` round-trip without loss; `load_trace` adds the checks an
uploaded file needs (size, shape, types) and raises ValueError with a readable message.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from specviz.settings.bounds import DEPTH_BOUND, MAX_K, MAX_TREE_NODES, RUN_BOUNDS, RUN_DRAFTERS, TREE, WIDTH_BOUND, short_repr
from specviz.record.strict_json import build

FORMAT = "specviz-trace"
FORMAT_VERSION = 4  # 2 added Round.cache and Baseline.step_times_s; 3: round 1 is the target's prefill alone
#                    (no drafts), and the draft reads the prompt in round 2 (before, round 1 drafted too);
#                    4 added Round.drafter and Round.tree (the tree drafter's rounds), settings.tree_widths
READABLE_VERSIONS = (1, 2, 3, 4)  # a version-1 file opens; what it did not record shows as "not recorded"
MAX_TRACE_BYTES = 20 * 1024 * 1024  # an upload larger than this is refused before parsing
MAX_TOKEN_ID = 2**31 - 1  # above any real vocabulary; a larger id cannot come from a tokenizer
MAX_ROUNDS = 10_000  # far above the page's runs (512 tokens at most); a step through that many is slow already
#                      (docs/benchmarks.md, "Timings behind choices in the code")

# The fate of a token in a round. One word per fate, used by the CLI, the HTML and the charts alike.
ACCEPTED, REJECTED, DISCARDED, REPLACEMENT, BONUS = "accepted", "rejected", "discarded", "replacement", "bonus"


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

    @property
    def tokens_this_pass(self) -> int:
        return len(self.committed_ids)

    @property
    def accepted_drafts(self) -> list[DraftPosition]:
        """The accepted drafts in order: a chain's first n_accepted, a tree's path."""
        return [self.drafts[c - 1] for c in self.tree.path] if self.tree else self.drafts[:self.n_accepted]

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
    format: str = FORMAT
    format_version: int = FORMAT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Trace":
        return build(cls, data, "trace")

    @classmethod
    def from_json(cls, text: str) -> "Trace":
        return cls.from_dict(json.loads(text))


def acceptance_rate(rounds: list[Round]) -> float:
    """Accepted over examined draft tokens (bonus tokens and replacements never count); 0 when none examined."""
    examined = [d for r in rounds for d in r.drafts if d.fate != DISCARDED]
    return sum(d.fate == ACCEPTED for d in examined) / len(examined) if examined else 0.0


def summarize(rounds: list[Round], total_time_s: float) -> Summary:
    """Summary figures of a run, computed from its rounds only (so the UI and CLI quote one source)."""
    drafts = [d for r in rounds for d in r.drafts]
    examined = [d for d in drafts if d.fate != DISCARDED]
    accepted = sum(d.fate == ACCEPTED for d in drafts)
    new_tokens = sum(r.tokens_this_pass for r in rounds)
    overlaps = [d.overlap for d in examined if d.overlap is not None]
    return Summary(
        n_rounds=len(rounds),
        n_new_tokens=new_tokens,
        n_drafted=len(drafts),
        n_examined=len(examined),
        n_accepted=accepted,
        acceptance_rate=acceptance_rate(rounds),
        mean_overlap=sum(overlaps) / len(overlaps) if overlaps else 0.0,
        tokens_per_pass=new_tokens / len(rounds) if rounds else 0.0,
        first_token_time_s=rounds[0].draft_time_s + rounds[0].verify_time_s if rounds else 0.0,
        draft_time_s=sum(r.draft_time_s for r in rounds),
        verify_time_s=sum(r.verify_time_s for r in rounds),
        total_time_s=total_time_s,
        tokens_per_s=new_tokens / total_time_s if total_time_s > 0 else 0.0,
    )


def decode_speed(trace: "Trace") -> float | None:
    """Tokens/s after the first round, by the wall clock: throughput, apart from the latency of the first tokens
    (round 1 also encodes the prompt). None for a one-round run: only its whole-run rate exists."""
    s = trace.summary
    later_tokens = s.n_new_tokens - trace.rounds[0].tokens_this_pass
    later_time = s.total_time_s - s.first_token_time_s
    return later_tokens / later_time if later_tokens > 0 and later_time > 0 else None


def baseline_decode_speed(b: Baseline) -> float | None:
    """The target alone's tokens/s after its first token (whose step also encoded the prompt)."""
    later_time = b.total_time_s - b.first_token_time_s
    return (len(b.output_token_ids) - 1) / later_time if len(b.output_token_ids) > 1 and later_time > 0 else None


def target_step_time(b: Baseline) -> float | None:
    """Seconds of one target-only decoding step: the median step after the first (which also encoded the
    prompt); for a version-1 trace, the mean of those steps. None for a one-token baseline."""
    if len(b.step_times_s) > 1:
        return statistics.median(b.step_times_s[1:])
    n = len(b.output_token_ids)
    return (b.total_time_s - b.first_token_time_s) / (n - 1) if n > 1 else None


def step_times(rounds: list[Round]) -> tuple[float | None, float]:
    """(seconds per drafted token, seconds per verify pass) of a run, from the rounds after the first, whose
    target pass encodes the prompt (a one-round run has only that one); draft steps also leave out the round
    whose first step encoded the prompt (round 2 since format version 3). None when nothing was drafted."""
    later = rounds[1:] or rounds
    drafting = [r for r in later if not _draft_read_prompt(r)] or later
    drafted = sum(r.k for r in drafting)
    draft = sum(r.draft_time_s for r in drafting) / drafted if drafted else None
    return draft, sum(r.verify_time_s for r in later) / len(later)


def _draft_read_prompt(rnd: Round) -> bool:
    """Whether the round's first draft step fed the prompt: the draft model's cache was empty before it."""
    return rnd.cache is not None and rnd.k > 0 and rnd.cache.draft[0] == 0


def read_json(raw: bytes | str, what: str = "trace"):
    """The JSON value of an uploaded file, refusing anything oversized or not JSON with a ValueError."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", errors="replace")
    if len(raw) > MAX_TRACE_BYTES:
        raise ValueError(f"{what} file is over {MAX_TRACE_BYTES >> 20} MB, the limit")
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as e:  # bad UTF-8, bad JSON, a 5000-digit number, nesting past the stack
        raise ValueError(f"not a specviz {what}: the file is not valid JSON ({type(e).__name__})") from None


def load_trace(raw) -> Trace:
    """Parse an uploaded trace file (bytes or text), or its JSON value already parsed, refusing anything oversized
    or malformed with a ValueError."""
    data = read_json(raw) if isinstance(raw, (bytes, str)) else raw
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a specviz trace: expected a JSON object with \"format\": \"{FORMAT}\"")
    if data.get("format_version") not in READABLE_VERSIONS:
        raise ValueError(f"unsupported trace format_version {short_repr(data.get('format_version'))}; "
                         f"this specviz reads versions {', '.join(map(str, READABLE_VERSIONS))}")
    trace = Trace.from_dict(data)
    check_trace(trace)
    return trace


# --- what the types alone cannot say ---------------------------------------------------------------------

SETTING_NUMBERS = ("k", "temperature", "top_k", "top_p", "seed", "max_new_tokens", "confidence")
_FATES = (ACCEPTED, REJECTED, DISCARDED)


def check_trace(trace: Trace) -> None:
    """Refuse a trace whose values could not come from a run: out-of-range ids or probabilities, rounds that
    contradict themselves, an id shown with two texts (two tokenizers mixed). ValueError names the first."""
    if len(trace.rounds) > MAX_ROUNDS:
        raise ValueError(f"malformed trace: {len(trace.rounds)} rounds; the limit is {MAX_ROUNDS}")
    _check_settings(trace.settings)
    for i, rnd in enumerate(trace.rounds):
        _check_round(rnd, i)
    token_texts(trace)  # raises on an id with two texts or out of range
    committed = [t for r in trace.rounds for t in r.committed_ids]
    if trace.output_token_ids != committed:
        raise ValueError("malformed trace: output_token_ids differ from the tokens the rounds committed")


def _check_settings(settings: dict) -> None:
    """Settings are shown and reused (Baseline reruns them): plain values only, numbers where numbers belong,
    K within what any part of specviz draws."""
    for key, value in settings.items():
        if key == "tree_widths" and value is not None:
            if not isinstance(value, list) or not all(type(w) is int for w in value):
                raise ValueError("malformed trace: settings.tree_widths should be a list of whole numbers or null")
            continue
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise ValueError(f"malformed trace: settings {short_repr(key)} should be a plain value (a number, "
                             f"text, true/false or null)")
        if key in SETTING_NUMBERS and (isinstance(value, bool) or not isinstance(value, (int, float))
                                       or not math.isfinite(value) or value < 0):
            raise ValueError(f"malformed trace: settings.{key} should be a number >= 0, got {short_repr(value)}")
    if not RUN_BOUNDS["k"].allows(settings.get("k", 1)):
        raise ValueError(f"malformed trace: settings.k should be {RUN_BOUNDS['k'].describe()}")


def _check_round(rnd: Round, i: int) -> None:
    where = f"malformed trace: rounds[{i}]"
    if rnd.index != i:
        raise ValueError(f"{where}.index is {rnd.index}, expected {i}")
    if rnd.drafter is not None and rnd.drafter not in RUN_DRAFTERS:
        raise ValueError(f"{where}.drafter should be one of {', '.join(RUN_DRAFTERS)} or null")
    if rnd.tree is None:
        _check_chain(rnd, where)
    else:
        _check_tree(rnd, where)
    if rnd.stop not in (None, "eos", "max_new_tokens"):
        raise ValueError(f"{where}.stop should be null, \"eos\" or \"max_new_tokens\"")
    if min(rnd.draft_time_s, rnd.verify_time_s) < 0:
        raise ValueError(f"{where}: negative times")
    if rnd.cache is not None and not all(len(lengths) == 4 and min(lengths) >= 0
                                         for lengths in (rnd.cache.draft, rnd.cache.target)):
        raise ValueError(f"{where}.cache should hold four lengths >= 0 for each model")
    for name, value in _probabilities(rnd):
        if value is not None and not 0 <= value <= 1.001:  # float32 sums may overshoot 1 by rounding
            raise ValueError(f"{where}: {name} = {value} is not a probability")


def _check_chain(rnd: Round, where: str) -> None:
    """A chain's drafts: n accepted, then one rejection, then discards; the committed tokens follow."""
    if rnd.drafter == TREE and rnd.k:  # its drafting rounds; its prefill (and last step) draft nothing
        raise ValueError(f"{where}: a round of the tree drafter that drafts should record its tree")
    if not (rnd.k == len(rnd.drafts) <= MAX_K and 0 <= rnd.n_accepted <= rnd.k):
        raise ValueError(f"{where}: k, drafts and n_accepted disagree (k at most {MAX_K})")
    n = rnd.n_accepted
    examined = [ACCEPTED] * n + [REJECTED] * (n < rnd.k)
    if [d.fate for d in rnd.drafts] != examined + [DISCARDED] * (rnd.k - len(examined)):
        raise ValueError(f"{where}: the drafts' fates should be {n} accepted, then a rejection and discards "
                         f"({', '.join(_FATES)})")
    if rnd.next_kind != (BONUS if n == rnd.k else REPLACEMENT):
        raise ValueError(f"{where}.next_kind should be {BONUS!r} after a clean sweep, else {REPLACEMENT!r}")
    _check_committed(rnd, [d.token_id for d in rnd.drafts[:n]], where)


def _check_committed(rnd: Round, accepted: list[int], where: str) -> None:
    offered = accepted + [rnd.next_token.token_id]
    if not rnd.committed_ids or rnd.committed_ids != offered[:len(rnd.committed_ids)]:
        raise ValueError(f"{where}.committed_ids should be the accepted drafts, then the {rnd.next_kind} token")


def _check_tree(rnd: Round, where: str) -> None:
    """A tree: a shape its widths give, fates that follow one path from the root, the committed tokens along it."""
    t, k, where = rnd.tree, rnd.k, f"{where}.tree"
    if rnd.drafter != TREE:
        raise ValueError(f"{where}: only the tree drafter's rounds record a tree (drafter {TREE!r})")
    if not DEPTH_BOUND.allows(len(t.widths)) or not all(WIDTH_BOUND.allows(w) for w in t.widths):
        raise ValueError(f"{where}.widths should be {DEPTH_BOUND.describe()} widths, each "
                         f"{WIDTH_BOUND.describe()}")
    if not (k == len(rnd.drafts) == len(t.test_p) == len(t.parents) - 1 == len(t.depth) - 1 <= MAX_TREE_NODES):
        raise ValueError(f"{where}: k, drafts, parents, depth and test_p disagree on the number of nodes (at most "
                         f"{MAX_TREE_NODES} drafted)")
    if t.parents[0] != -1 or t.depth[0] != 0 or any(
            not 0 <= t.parents[i] < i or t.depth[i] != t.depth[t.parents[i]] + 1 for i in range(1, k + 1)):
        raise ValueError(f"{where}: each node's parent should be an earlier node, its depth one more than the "
                         f"parent's (the root, node 0: parent -1, depth 0)")
    kids = Counter(t.parents[1:])
    if any(kids[u] != (t.widths[d] if d < len(t.widths) else 0) for u, d in enumerate(t.depth)):
        raise ValueError(f"{where}: every node at depth d should have widths[d] children")
    _check_tree_walk(rnd, where)


def _check_tree_walk(rnd: Round, where: str) -> None:
    """Along the path each node's children are tested in order up to the accepted one (all of them at the path's
    end, unless it is a leaf: then the next token is the bonus); every other node is discarded."""
    t = rnd.tree
    kids = [[c for c in range(1, len(t.parents)) if t.parents[c] == u] for u in range(len(t.parents))]
    expected, node = [DISCARDED] * rnd.k, 0
    for nxt in [*t.path, None]:
        if nxt is not None and nxt not in kids[node]:
            raise ValueError(f"{where}.path should go from the root to a child, then to its child, and so on")
        tested = kids[node] if nxt is None else kids[node][:kids[node].index(nxt) + 1]
        for c in tested:
            expected[c - 1] = ACCEPTED if c == nxt else REJECTED
        node = nxt if nxt is not None else node
    if [d.fate for d in rnd.drafts] != expected or [p is None for p in t.test_p] != [f == DISCARDED for f in expected]:
        raise ValueError(f"{where}: the nodes' fates (and test_p) should follow the path: each node on it accepted, "
                         f"its tested siblings rejected, the rest discarded (untested: test_p null)")
    if rnd.n_accepted != len(t.path) or rnd.next_kind != (REPLACEMENT if kids[node] else BONUS):
        raise ValueError(f"{where}: n_accepted should be the path's length, next_kind {BONUS!r} at a leaf, else "
                         f"{REPLACEMENT!r}")
    _check_committed(rnd, [d.token_id for d in rnd.accepted_drafts], where.removesuffix(".tree"))


def _probabilities(rnd: Round):
    """(name, value) of every probability a round records (value None where it does not apply)."""
    tokens = [rnd.next_token, *(rnd.residual or []), *(rnd.bonus_candidates or [])]
    for d in rnd.drafts:
        yield from (("p", d.p), ("q", d.q), ("accept_prob", d.accept_prob), ("uniform", d.uniform),
                    ("overlap", d.overlap))
        tokens += d.candidates
    yield from (("test_p", value) for value in (rnd.tree.test_p if rnd.tree else []))
    for t in tokens:
        yield from (("p", t.p), ("q", t.q), ("residual", t.residual))


def token_texts(trace: Trace) -> dict[int, str | None]:
    """Every token id in the trace -> the text recorded for it (None for ids recorded without text, such as
    the prompt's). ValueError for an id out of range, or one id recorded with two texts: one tokenizer
    gives one text per id, so two texts mean the file mixes tokenizers (or was edited)."""
    texts: dict[int, str | None] = {}
    for token_id, text in _tokens(trace):
        if not 0 <= token_id <= MAX_TOKEN_ID:
            raise ValueError(f"malformed trace: token id {token_id} is out of range (0 to {MAX_TOKEN_ID})")
        known = texts.get(token_id)
        if text is not None and known is not None and known != text:
            raise ValueError(f"malformed trace: token id {token_id} is recorded as {short_repr(known)} and as "
                             f"{short_repr(text)}; one tokenizer gives one text per id")
        texts[token_id] = known if text is None else text
    return texts


def _tokens(trace: Trace):
    """(id, text or None) for every token the trace mentions."""
    bare = [*trace.prompt_token_ids, *trace.output_token_ids, *trace.eos_token_ids,
            *(trace.baseline.output_token_ids if trace.baseline else [])]
    for rnd in trace.rounds:
        bare += rnd.committed_ids
        for d in rnd.drafts:
            yield d.token_id, d.text
            yield from ((t.token_id, t.text) for t in d.candidates)
        yield from ((t.token_id, t.text) for t in [rnd.next_token, *(rnd.residual or []),
                                                   *(rnd.bonus_candidates or [])])
        if rnd.tree:
            yield rnd.tree.root_id, rnd.tree.root_text
    yield from ((t, None) for t in bare)

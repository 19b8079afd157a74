"""Reading a trace file strictly: `load_trace` parses an upload (bytes, text or its JSON value) and refuses, with a
ValueError that names the first problem, anything oversized, malformed, or that no run could have recorded
(out-of-range ids or probabilities, rounds that contradict themselves, an id shown with two texts)."""

from __future__ import annotations

import json
import math
from collections import Counter

from specviz.drafters import REGISTRY
from specviz.record.trace import (ACCEPTED, BONUS, DISCARDED, FORMAT, MAX_TURNS, MAX_ROUNDS, MAX_TOKEN_ID,
                                  MAX_TRACE_BYTES, READABLE_VERSIONS, REJECTED, REPLACEMENT, Round, Trace)
from specviz.settings.bounds import DEPTH_BOUND, MAX_K, MAX_TREE_NODES, RUN_BOUNDS, STOP_RULES, THRESHOLD_RULE, \
    WIDTH_BOUND, short_repr


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
    if isinstance(data.get("rounds"), list):  # counted before 10,001 rounds are built only to be refused
        _check_round_count(len(data["rounds"]))
    trace = Trace.from_dict(data)
    check_trace(trace)
    return trace


# --- what the types alone cannot say ---------------------------------------------------------------------

SETTING_NUMBERS = ("k", "temperature", "top_k", "top_p", "seed", "max_new_tokens", "confidence", "tree_budget",
                   "tree_depth")
_FATES = (ACCEPTED, REJECTED, DISCARDED)


def check_trace(trace: Trace) -> None:
    """Refuse a trace whose values could not come from a run: out-of-range ids or probabilities, rounds that
    contradict themselves, an id shown with two texts (two tokenizers mixed). ValueError names the first."""
    _check_round_count(len(trace.rounds))
    _check_settings(trace.settings)
    _check_pass_costs(trace)
    _check_repeats(trace)
    for i, rnd in enumerate(trace.rounds):
        _check_round(rnd, i)
    token_texts(trace)  # raises on an id with two texts or out of range
    if not 0 <= trace.opening < max(1, len(trace.prompt_token_ids)):
        raise ValueError(f"malformed trace: opening is {trace.opening}, but a run's caches can hold from the start "
                         f"only part of its {len(trace.prompt_token_ids)}-token prompt (0 to "
                         f"{max(0, len(trace.prompt_token_ids) - 1)})")
    committed = [t for r in trace.rounds for t in r.committed_ids]
    if trace.output_token_ids != committed:
        raise ValueError("malformed trace: output_token_ids differ from the tokens the rounds committed")


def _check_round_count(n: int) -> None:
    if n > MAX_ROUNDS:
        raise ValueError(f"malformed trace: {n} rounds; the limit is {MAX_ROUNDS}")


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
    if settings.get("stop_rule", THRESHOLD_RULE) not in STOP_RULES:
        raise ValueError(f"malformed trace: settings.stop_rule should be one of {', '.join(STOP_RULES)}")


def _check_pass_costs(trace: Trace) -> None:
    """The cost-aware rule's prices and weighings: numbers a measurement and the rule could give (survive estimates
    are chances, costs and rates not negative, v rising from 1), and only in a run that names the rule."""
    p = trace.pass_costs
    if p is not None and not (p.c >= 0 and p.v and p.v[0] == 1 and p.v == sorted(p.v) and 1 <= p.load <= 10_000
                              and len(p.v) <= MAX_K + 1):
        raise ValueError("malformed trace: pass_costs should hold c >= 0, v rising from v[0] = 1 (at most "
                         f"{MAX_K + 1} values) and a load from 1")
    for i, rnd in enumerate(trace.rounds):
        d = rnd.cost
        if d is None:
            continue
        if p is None or not (d.rate >= 1 and d.expected_cost > 0 and d.expected_tokens >= 1 and all(
                0 <= c.survive <= 1 and c.cost >= 0 for c in d.choices) and len(d.choices) <= MAX_K):
            raise ValueError(f"malformed trace: rounds[{i}].cost should hold chances in 0..1, costs >= 0, a rate of "
                             f"at least 1, and come with the trace's pass_costs")


def _check_repeats(trace: Trace) -> None:
    """Turns of the run and the target alone: as many of each (a turn times both), each a run that made tokens in a
    time above zero, its first token no later than its end; the load averages around them, where measured, not
    negative."""
    r = trace.baseline.repeats if trace.baseline else None
    if r is None:
        return
    runs = [*r.speculative, *r.target]
    if not (1 <= len(r.speculative) == len(r.target) <= MAX_TURNS and 0 <= r.warm_up <= MAX_TURNS and all(
            t.tokens >= 1 and 0 < t.first_s <= t.total_s for t in runs) and r.machine.strip()):
        raise ValueError(f"malformed trace: baseline.repeats should hold 1 to {MAX_TURNS} turns, as many runs of "
                         f"each side, each with tokens and 0 < first_s <= total_s, and name its machine")
    if any(load is not None and load < 0 for load in (r.load_before, r.load_after)):
        raise ValueError("malformed trace: baseline.repeats.load_before and load_after should be load averages >= 0 "
                         "or null")


def _check_round(rnd: Round, i: int) -> None:
    where = f"malformed trace: rounds[{i}]"
    if rnd.index != i:
        raise ValueError(f"{where}.index is {rnd.index}, expected {i}")
    if rnd.drafter is not None and rnd.drafter not in REGISTRY:
        raise ValueError(f"{where}.drafter should be one of {', '.join(REGISTRY)} or null")
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
    if _draws_trees(rnd) and rnd.k:  # its drafting rounds; its prefill (and last step) draft nothing
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


def _draws_distinct(rnd: Round) -> bool:
    return rnd.drafter in REGISTRY and REGISTRY[rnd.drafter].distinct


def _draws_trees(rnd: Round) -> bool:
    return rnd.drafter in REGISTRY and REGISTRY[rnd.drafter].tree


def _check_committed(rnd: Round, accepted: list[int], where: str) -> None:
    offered = accepted + [rnd.next_token.token_id]
    if not rnd.committed_ids or rnd.committed_ids != offered[:len(rnd.committed_ids)]:
        raise ValueError(f"{where}.committed_ids should be the accepted drafts, then the {rnd.next_kind} token")


def _check_tree(rnd: Round, where: str) -> None:
    """A tree: a shape its widths give (or, shaped per round, its parents within its budget), fates that follow one
    path from the root, the committed tokens along it."""
    t, k, where = rnd.tree, rnd.k, f"{where}.tree"
    if not _draws_trees(rnd):
        trees = " or ".join(repr(key) for key, d in REGISTRY.items() if d.tree)
        raise ValueError(f"{where}: only the tree drafter's rounds record a tree (drafter {trees})")
    if not (k == len(rnd.drafts) == len(t.test_p) == len(t.parents) - 1 == len(t.depth) - 1 <= MAX_TREE_NODES):
        raise ValueError(f"{where}: k, drafts, parents, depth and test_p disagree on the number of nodes (at most "
                         f"{MAX_TREE_NODES} drafted)")
    if t.parents[0] != -1 or t.depth[0] != 0 or any(
            not 0 <= t.parents[i] < i or t.depth[i] != t.depth[t.parents[i]] + 1 for i in range(1, k + 1)):
        raise ValueError(f"{where}: each node's parent should be an earlier node, its depth one more than the "
                         f"parent's (the root, node 0: parent -1, depth 0)")
    if REGISTRY[rnd.drafter].shaped:
        _check_shaped(rnd, where)
    else:
        _check_widths(rnd, where)
    _check_tree_walk(rnd, where)


def _check_widths(rnd: Round, where: str) -> None:
    """A tree of fixed widths: within their bounds, every node at depth d with widths[d] children, no budget."""
    t = rnd.tree
    if not DEPTH_BOUND.allows(len(t.widths)) or not all(WIDTH_BOUND.allows(w) for w in t.widths):
        raise ValueError(f"{where}.widths should be {DEPTH_BOUND.describe()} widths, each "
                         f"{WIDTH_BOUND.describe()}")
    kids = Counter(t.parents[1:])
    if any(kids[u] != (t.widths[d] if d < len(t.widths) else 0) for u, d in enumerate(t.depth)):
        raise ValueError(f"{where}: every node at depth d should have widths[d] children")
    if t.budget or t.factors:
        raise ValueError(f"{where}: only a shaped tree records a budget and factors")


def _check_shaped(rnd: Round, where: str) -> None:
    """A tree shaped per round (algorithm/shaped.py): no widths, at most its budget of nodes, breadth-first (depths
    never falling), at most DEPTH_BOUND deep, a factor per node."""
    t = rnd.tree
    if t.widths or not 1 <= t.budget <= MAX_TREE_NODES or not 1 <= rnd.k <= t.budget:
        raise ValueError(f"{where}: a shaped tree records no widths and a budget from 1 to {MAX_TREE_NODES} that its "
                         f"nodes (at least one) stay within")
    if t.depth != sorted(t.depth) or not DEPTH_BOUND.allows(t.deepest) or len(t.factors) != rnd.k:
        raise ValueError(f"{where}: a shaped tree's nodes should be breadth-first, at most {DEPTH_BOUND.high:g} deep, "
                         f"each with its factor")


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
        if nxt is None and _draws_distinct(rnd):  # distinct siblings: a q with no token left ends the tests early
            tested = [c for c in kids[node] if t.test_p[c - 1] is not None] or tested[:1]
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
                    ("overlap", d.overlap), ("confidence", d.confidence))
        tokens += d.candidates
    yield from (("test_p", value) for value in (rnd.tree.test_p if rnd.tree else []))
    yield from (("factors", value) for value in (rnd.tree.factors if rnd.tree else []))
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

"""record/load.py, the strict trace loader: every way a trace file can be wrong that it refuses, each with the exact
message a person reads and nothing half-loaded handed back; then the files it must open: the hand-made traces the
bad rows spoil, every shipped example and the recorded fixture, each round-tripped.

The bad rows spoil one field of a valid trace (tests/helpers.py's two chain rounds, one of them replaced by a tree
round or given the cost-aware rule's record where the row needs it), so each row fails for its own reason only."""

import copy
import json
from pathlib import Path

import pytest

from specviz.drafters import REGISTRY
from specviz.record.load import load_trace, token_texts
from specviz.record.trace import (ACCEPTED, BONUS, DISCARDED, FORMAT_VERSION, MAX_TRACE_BYTES, READABLE_VERSIONS,
                                  REJECTED, CostDecision, DraftChoice, DraftPosition, PassCosts, Repeats, Round,
                                  TimedRun, TokenProb, Trace, TreeRecord)
from tests.helpers import FIXTURE, ROOT, make_trace

EXAMPLES = sorted((ROOT / "assets" / "examples").glob("*.json"))
VERSIONS = ", ".join(map(str, READABLE_VERSIONS))
DRAFTERS = ", ".join(REGISTRY)
TREES = " or ".join(repr(key) for key, d in REGISTRY.items() if d.tree)
NAN, INF = float("nan"), float("inf")
GONE = object()  # spoil(): remove the field


def tree_trace() -> Trace:
    """The hand-made trace with round 2 a tree (widths 2-1: nodes 1, 2 below the root, 3 below 1, 4 below 2):
    node 1 rejected, 2 accepted, then 4 accepted (3, under the rejected node, never tested), then the bonus."""
    trace = make_trace()
    fates = [REJECTED, ACCEPTED, DISCARDED, ACCEPTED]
    drafts = [DraftPosition(20 + i, "abcd"[i], 0.5, 0.4, fate) for i, fate in enumerate(fates)]
    tree = TreeRecord(widths=[2, 1], parents=[-1, 0, 0, 1, 2], depth=[0, 1, 1, 2, 2], root_id=1, root_text="y",
                      path=[2, 4], test_p=[0.3, 0.4, None, 0.5])
    trace.rounds[1] = Round(1, 4, drafts, 2, TokenProb(1, "y", 0.5), BONUS, None, None, [21, 23, 1], 0.1, 0.1,
                            drafter="tree", tree=tree)
    trace.output_token_ids = trace.rounds[0].committed_ids + [21, 23, 1]
    trace.settings["tree_widths"] = [2, 1]
    return trace


def cost_trace() -> Trace:
    """The hand-made trace run with the cost-aware rule: its prices, and round 2's weighing of its one draft."""
    trace = make_trace()
    trace.settings["stop_rule"] = "cost"
    trace.pass_costs = PassCosts(c=0.1, v=[1.0, 1.05], load=1, source="hand-made")
    trace.rounds[1].cost = CostDecision(rate=1.5, choices=[DraftChoice(0.8, 0.15, True)], expected_tokens=1.8,
                                        expected_cost=1.15)
    return trace


def repeats_trace() -> Trace:
    """The hand-made trace with its baseline timed in three turns against reruns of the run."""
    trace = make_trace()
    trace.baseline.repeats = Repeats([TimedRun(7, 0.5, 0.3)] * 3, [TimedRun(7, 1.0, 0.05)] * 3, 1, "a test CPU",
                                     load_before=0.4, load_after=2.1)
    return trace


def data(trace: Trace | None = None) -> dict:
    """A trace's file as its JSON object (the hand-made chain trace unless told)."""
    return json.loads((trace or make_trace()).to_json())


def spoil(path: str, value, base: Trace | None = None) -> dict:
    """The trace's JSON object with the field at `path` ("rounds.1.drafts.0.p") set to value (GONE: removed)."""
    obj = data(base)
    *keys, last = [int(key) if key.isdigit() else key for key in path.split(".")]
    node = obj
    for key in keys:
        node = node[key]
    if value is GONE:
        del node[last]
    else:
        node[last] = value
    return obj


def refused(raw) -> str:
    """load_trace's message for raw, once it refused cleanly: a plain ValueError with no other error chained behind
    it (the message is the whole story), no trace returned, and the caller's object left as it was."""
    before = copy.deepcopy(raw)
    with pytest.raises(ValueError) as caught:
        load_trace(raw)
    error = caught.value
    assert type(error) is ValueError
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)
    assert raw == before  # nothing of it was changed on the way to the refusal
    return str(error)


def many_rounds() -> dict:
    """10 001 rounds, each a prefill that drafted nothing (the least the loader builds before it counts them)."""
    obj = data()
    prefill = {**obj["rounds"][0], "k": 0, "drafts": [], "n_accepted": 0, "committed_ids": [1]}
    obj["rounds"] = [prefill] * 10_001
    return obj


# --- files that are no trace at all -----------------------------------------------------------------------------

NOT_A_TRACE = {  # name -> (the upload, the exact message)
    "not-json": (b"this is not JSON {", "not a specviz trace: the file is not valid JSON (JSONDecodeError)"),
    "empty-file": (b"", "not a specviz trace: the file is not valid JSON (JSONDecodeError)"),
    "not-utf8": (b'\xff\xfe{"format": 1}', "not a specviz trace: the file is not valid JSON (UnicodeDecodeError)"),
    "nested-past-the-stack": (b"[" * 100_000 + b"]" * 100_000,
                              "not a specviz trace: the file is not valid JSON (RecursionError)"),
    "5000-digit-number": (b'{"seed": ' + b"9" * 5000 + b"}",
                          "not a specviz trace: the file is not valid JSON (ValueError)"),
    "too-large": (b" " * (MAX_TRACE_BYTES + 1), "trace file is over 20 MB, the limit"),
    "too-large-text": (" " * (MAX_TRACE_BYTES + 1), "trace file is over 20 MB, the limit"),
    "a-list": (b"[1, 2, 3]", 'not a specviz trace: expected a JSON object with "format": "specviz-trace"'),
    "another-format": ({"format": "other", "format_version": 6},
                       'not a specviz trace: expected a JSON object with "format": "specviz-trace"'),
    "no-format": (spoil("format", GONE), 'not a specviz trace: expected a JSON object with "format": "specviz-trace"'),
    "future-version": (spoil("format_version", 99),
                       f"unsupported trace format_version 99; this specviz reads versions {VERSIONS}"),
    "version-as-text": (spoil("format_version", "6"),
                        f"unsupported trace format_version '6'; this specviz reads versions {VERSIONS}"),
    "no-version": (spoil("format_version", GONE),
                   f"unsupported trace format_version None; this specviz reads versions {VERSIONS}"),
}


@pytest.mark.parametrize("name", list(NOT_A_TRACE))
def test_a_file_that_is_no_trace_is_refused_by_name(name):
    raw, message = NOT_A_TRACE[name]
    assert refused(raw) == message


# --- a trace of the wrong shape or types (strict_json, through the loader) --------------------------------------

WRONG_TYPES = {
    "version-true": (spoil("format_version", True), "trace.format_version should be int, got bool"),
    "no-rounds": (spoil("rounds", GONE), 'trace lacks "rounds"'),
    "a-round-lacks-a-field": (spoil("rounds.1.n_accepted", GONE), 'trace.rounds[1] lacks "n_accepted"'),
    "a-token-lacks-p": (spoil("rounds.0.next_token.p", GONE), 'trace.rounds[0].next_token lacks "p"'),
    "k-as-text": (spoil("rounds.0.k", "4"), "trace.rounds[0].k should be int, got str"),
    "k-as-fraction": (spoil("rounds.0.k", 4.0), "trace.rounds[0].k should be int, got float"),
    "k-as-boolean": (spoil("rounds.0.n_accepted", True), "trace.rounds[0].n_accepted should be int, got bool"),
    "probability-as-text": (spoil("rounds.1.drafts.0.p", "0.4"),
                            "trace.rounds[1].drafts[0].p should be float, got str"),
    "time-as-boolean": (spoil("rounds.0.draft_time_s", True), "trace.rounds[0].draft_time_s should be float, got bool"),
    "prompt-as-number": (spoil("prompt", 5), "trace.prompt should be str, got int"),
    "prompt-null": (spoil("prompt", None), "trace.prompt must not be null"),
    "rounds-as-text": (spoil("rounds", "abc"), "trace.rounds should be a list"),
    "round-as-number": (spoil("rounds.0", 7), "trace.rounds[0] should be an object, got int"),
    "settings-as-list": (spoil("settings", []), "trace.settings should be an object"),
    "ids-with-text": (spoil("prompt_token_ids", [1, "2"]), "trace.prompt_token_ids should be a list of whole numbers"),
    "ids-with-boolean": (spoil("output_token_ids", [True]), "trace.output_token_ids should be a list of whole numbers"),
    "times-with-nan": (spoil("baseline.step_times_s", [0.1, NAN]),
                       "trace.baseline.step_times_s should be a list of finite numbers"),
    "nan-probability": (spoil("rounds.1.drafts.0.p", NAN), "trace.rounds[1].drafts[0].p is not a finite number"),
    "infinite-time": (spoil("rounds.0.verify_time_s", INF), "trace.rounds[0].verify_time_s is not a finite number"),
    "drafted-as-number": (spoil("rounds.1.cost.choices.0.drafted", 1, cost_trace()),
                          "trace.rounds[1].cost.choices[0].drafted should be bool, got int"),
}


def test_nan_in_the_file_itself_is_refused():
    """JSON has no NaN, but Python's reader takes the bare word: the loader refuses it where a number goes."""
    text = make_trace().to_json().replace('"p": 0.4', '"p": NaN', 1)
    assert refused(text.encode()) == "malformed trace: trace.rounds[0].drafts[0].p is not a finite number"


# --- values no run could record -------------------------------------------------------------------------------

IMPOSSIBLE = {
    "10001-rounds": (many_rounds(), "10001 rounds; the limit is 10000"),
    "widths-as-text": (spoil("settings.tree_widths", ["2"]),
                       "settings.tree_widths should be a list of whole numbers or null"),
    "widths-as-booleans": (spoil("settings.tree_widths", [True]),
                           "settings.tree_widths should be a list of whole numbers or null"),
    "a-setting-nested": (spoil("settings.note", {"a": 1}),
                         "settings 'note' should be a plain value (a number, text, true/false or null)"),
    "temperature-as-text": (spoil("settings.temperature", "hot"),
                            "settings.temperature should be a number >= 0, got 'hot'"),
    "seed-as-boolean": (spoil("settings.seed", True), "settings.seed should be a number >= 0, got True"),
    "top-p-nan": (spoil("settings.top_p", NAN), "settings.top_p should be a number >= 0, got nan"),
    "negative-temperature": (spoil("settings.temperature", -1), "settings.temperature should be a number >= 0, got -1"),
    "k-too-large": (spoil("settings.k", 17), "settings.k should be a whole number from 1 to 16"),
    "k-a-fraction": (spoil("settings.k", 2.5), "settings.k should be a whole number from 1 to 16"),
    "unknown-stop-rule": (spoil("settings.stop_rule", "guess"), "settings.stop_rule should be one of threshold, cost"),
    "index-out-of-order": (spoil("rounds.1.index", 5), "rounds[1].index is 5, expected 1"),
    "unknown-drafter": (spoil("rounds.0.drafter", "bush"), f"rounds[0].drafter should be one of {DRAFTERS} or null"),
    "k-and-drafts-disagree": (spoil("rounds.0.k", 3), "rounds[0]: k, drafts and n_accepted disagree (k at most 16)"),
    "more-accepted-than-drafted": (spoil("rounds.1.n_accepted", 5),
                                   "rounds[1]: k, drafts and n_accepted disagree (k at most 16)"),
    "a-discard-accepted": (spoil("rounds.1.drafts.2.fate", ACCEPTED),
                           "rounds[1]: the drafts' fates should be 1 accepted, then a rejection and discards "
                           "(accepted, rejected, discarded)"),
    "an-unknown-fate": (spoil("rounds.0.drafts.0.fate", "lucky"),
                        "rounds[0]: the drafts' fates should be 4 accepted, then a rejection and discards "
                        "(accepted, rejected, discarded)"),
    "replacement-after-a-sweep": (spoil("rounds.0.next_kind", "replacement"),
                                  "rounds[0].next_kind should be 'bonus' after a clean sweep, else 'replacement'"),
    "committed-other-tokens": (spoil("rounds.0.committed_ids", [3]),
                               "rounds[0].committed_ids should be the accepted drafts, then the bonus token"),
    "committed-nothing": (spoil("rounds.1.committed_ids", []),
                          "rounds[1].committed_ids should be the accepted drafts, then the replacement token"),
    "unknown-stop": (spoil("rounds.0.stop", "tired"), 'rounds[0].stop should be null, "eos" or "max_new_tokens"'),
    "negative-time": (spoil("rounds.0.verify_time_s", -0.1), "rounds[0]: negative times"),
    "three-cache-lengths": (spoil("rounds.0.cache", {"draft": [0, 1, 2], "target": [0, 0, 5, 5]}),
                            "rounds[0].cache should hold four lengths >= 0 for each model"),
    "negative-cache-length": (spoil("rounds.0.cache", {"draft": [0, 4, 4, 4], "target": [0, 0, -5, 5]}),
                              "rounds[0].cache should hold four lengths >= 0 for each model"),
    "q-above-1": (spoil("rounds.1.drafts.0.q", 3.5), "rounds[1]: q = 3.5 is not a probability"),
    "negative-p": (spoil("rounds.0.next_token.p", -0.1), "rounds[0]: p = -0.1 is not a probability"),
    "residual-above-1": (spoil("rounds.1.residual", [{"token_id": 1, "text": "y", "p": 0.5, "residual": 2.0}]),
                         "rounds[1]: residual = 2.0 is not a probability"),
    "negative-token-id": (spoil("prompt_token_ids.0", -5), "token id -5 is out of range (0 to 2147483647)"),
    "token-id-past-any-vocabulary": (spoil("prompt_token_ids.0", 2**31),
                                     "token id 2147483648 is out of range (0 to 2147483647)"),
    "two-texts-for-one-id": (spoil("rounds.1.drafts.0.text", "z"),
                             "token id 10 is recorded as 'x' and as 'z'; one tokenizer gives one text per id"),
    "output-not-the-committed": (spoil("output_token_ids", [5]),
                                 "output_token_ids differ from the tokens the rounds committed"),
}

# The cost-aware rule's record: prices a measurement could give, weighings only beside them.
PRICES = "pass_costs should hold c >= 0, v rising from v[0] = 1 (at most 17 values) and a load from 1"
WEIGHING = "rounds[1].cost should hold chances in 0..1, costs >= 0, a rate of at least 1, and come with the " \
           "trace's pass_costs"
COSTS = {
    "v-not-from-1": (spoil("pass_costs.v", [1.2, 1.3], cost_trace()), PRICES),
    "v-falling": (spoil("pass_costs.v", [1.0, 0.9], cost_trace()), PRICES),
    "negative-c": (spoil("pass_costs.c", -0.1, cost_trace()), PRICES),
    "no-load": (spoil("pass_costs.load", 0, cost_trace()), PRICES),
    "a-weighing-without-prices": (spoil("pass_costs", None, cost_trace()), WEIGHING),
    "a-chance-above-1": (spoil("rounds.1.cost.choices.0.survive", 1.5, cost_trace()), WEIGHING),
    "a-rate-below-1": (spoil("rounds.1.cost.rate", 0.5, cost_trace()), WEIGHING),
    "a-negative-cost": (spoil("rounds.1.cost.choices.0.cost", -0.1, cost_trace()), WEIGHING),
}

def no_turns() -> dict:
    obj = data(repeats_trace())
    obj["baseline"]["repeats"]["speculative"] = obj["baseline"]["repeats"]["target"] = []
    return obj


# The repeats: as many turns of each side, each a run with tokens and times, and the machine named.
TURNS = "baseline.repeats should hold 1 to 100 turns, as many runs of each side, each with tokens and 0 < first_s <= " \
        "total_s, and name its machine"
REPEATS = {
    "a-turn-missing": (spoil("baseline.repeats.target", [{"tokens": 7, "total_s": 1.0, "first_s": 0.05}] * 2,
                             repeats_trace()), TURNS),
    "no-turns": (no_turns(), TURNS),
    "no-tokens": (spoil("baseline.repeats.speculative.0.tokens", 0, repeats_trace()), TURNS),
    "zero-time": (spoil("baseline.repeats.target.1.first_s", 0, repeats_trace()), TURNS),
    "first-after-the-end": (spoil("baseline.repeats.target.1.first_s", 2.0, repeats_trace()), TURNS),
    "no-machine": (spoil("baseline.repeats.machine", " ", repeats_trace()), TURNS),
    "negative-warm-up": (spoil("baseline.repeats.warm_up", -1, repeats_trace()), TURNS),
    "tokens-as-fraction": (spoil("baseline.repeats.target.0.tokens", 7.5, repeats_trace()),
                           "trace.baseline.repeats.target[0].tokens should be int, got float"),
    "negative-load": (spoil("baseline.repeats.load_after", -0.5, repeats_trace()),
                      "baseline.repeats.load_before and load_after should be load averages >= 0 or null"),
    "load-as-text": (spoil("baseline.repeats.load_before", "1.2", repeats_trace()),
                     "trace.baseline.repeats.load_before should be float, got str"),
    "load-infinite": (spoil("baseline.repeats.load_before", INF, repeats_trace()),
                      "trace.baseline.repeats.load_before is not a finite number"),
}

# A tree round: the shape its widths give, fates along one path from the root.
FOLLOW = ("the nodes' fates (and test_p) should follow the path: each node on it accepted, its tested siblings "
          "rejected, the rest discarded (untested: test_p null)")
TREE = {
    "a-tree-in-a-chain-round": (spoil("rounds.1.drafter", "model", tree_trace()),
                                f"rounds[1].tree: only the tree drafter's rounds record a tree (drafter {TREES})"),
    "a-tree-drafter-round-without-its-tree": (spoil("rounds.1.tree", None, tree_trace()),
                                              "rounds[1]: a round of the tree drafter that drafts should record its "
                                              "tree"),
    "too-wide": (spoil("rounds.1.tree.widths", [5, 1], tree_trace()),
                 "rounds[1].tree.widths should be a whole number from 1 to 6 widths, each a whole number from 1 to 4"),
    "node-counts-disagree": (spoil("rounds.1.tree.test_p", [0.3], tree_trace()),
                             "rounds[1].tree: k, drafts, parents, depth and test_p disagree on the number of nodes "
                             "(at most 32 drafted)"),
    "a-node-its-own-parent": (spoil("rounds.1.tree.parents.3", 3, tree_trace()),
                              "rounds[1].tree: each node's parent should be an earlier node, its depth one more than "
                              "the parent's (the root, node 0: parent -1, depth 0)"),
    "a-shape-the-widths-do-not-give": (spoil("rounds.1.tree.widths", [1, 2], tree_trace()),
                                       "rounds[1].tree: every node at depth d should have widths[d] children"),
    "a-path-that-skips-a-depth": (spoil("rounds.1.tree.path", [3], tree_trace()),
                                  "rounds[1].tree.path should go from the root to a child, then to its child, and "
                                  "so on"),
    "an-untested-node-accepted": (spoil("rounds.1.drafts.2.fate", ACCEPTED, tree_trace()), f"rounds[1].tree: {FOLLOW}"),
    "an-untested-node-with-test-p": (spoil("rounds.1.tree.test_p.2", 0.2, tree_trace()), f"rounds[1].tree: {FOLLOW}"),
    "accepted-not-the-paths-length": (spoil("rounds.1.n_accepted", 1, tree_trace()),
                                      "rounds[1].tree: n_accepted should be the path's length, next_kind 'bonus' at a "
                                      "leaf, else 'replacement'"),
    "committed-off-the-path": (spoil("rounds.1.committed_ids", [20, 1], tree_trace()),
                               "rounds[1].committed_ids should be the accepted drafts, then the bonus token"),
    "test-p-above-1": (spoil("rounds.1.tree.test_p.0", 1.7, tree_trace()),
                       "rounds[1]: test_p = 1.7 is not a probability"),
    "root-id-out-of-range": (spoil("rounds.1.tree.root_id", -4, tree_trace()),
                             "token id -4 is out of range (0 to 2147483647)"),
}


# Each row above: the type or value a run could not have written, by its path, after "malformed trace: ".
MALFORMED = {**WRONG_TYPES, **IMPOSSIBLE, **COSTS, **REPEATS, **TREE}


def test_every_malformed_row_has_a_name_of_its_own():
    assert len(MALFORMED) == len(WRONG_TYPES) + len(IMPOSSIBLE) + len(COSTS) + len(REPEATS) + len(TREE)


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_trace_is_refused_naming_its_first_problem(name):
    obj, message = MALFORMED[name]
    assert refused(obj) == f"malformed trace: {message}"


# --- files it must open ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [make_trace, tree_trace, cost_trace, repeats_trace])
def test_the_traces_the_rows_above_spoil_open_as_they_were_written(make):
    """The control for every bad row: unspoiled, each opens, from bytes, text or its JSON object alike."""
    trace = make()
    text = trace.to_json()
    assert load_trace(text.encode()) == load_trace(text) == load_trace(json.loads(text)) == trace


def test_turns_timed_before_the_load_average_was_recorded_open_without_it():
    """A version-9 file's repeats hold no load averages (format version 10 added them): it opens, with none."""
    old = spoil("baseline.repeats.load_before", GONE, repeats_trace())
    del old["baseline"]["repeats"]["load_after"]
    old["format_version"] = 9
    repeats = load_trace(old).baseline.repeats
    assert repeats.load_before is None and repeats.load_after is None and len(repeats.target) == 3
    assert load_trace(data(repeats_trace())).baseline.repeats.load_after == 2.1  # a new file keeps them


def test_a_probability_a_float32_sum_pushed_just_past_1_opens():
    assert load_trace(spoil("rounds.0.next_token.p", 1.0005)).rounds[0].next_token.p == 1.0005


def test_the_examples_are_all_here():
    assert sorted(path.stem for path in EXAMPLES) == ["adaptive", "code", "code-heads", "paris", "rewrite", "spices", "story", "story-tree"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.stem)
def test_a_shipped_example_opens_and_round_trips(path: Path):
    raw = path.read_bytes()
    trace = load_trace(raw)
    assert trace.format_version == json.loads(raw)["format_version"] and trace.rounds
    assert load_trace(trace.to_json()) == trace
    assert load_trace(trace.to_json()).to_json() == trace.to_json()


def test_the_recorded_fixture_opens_as_version_1_and_round_trips():
    trace = load_trace(FIXTURE.read_bytes())
    assert trace.format_version == 1 < FORMAT_VERSION and len(trace.rounds) == 7  # an old file keeps its version
    again = load_trace(trace.to_json())
    assert again == trace and again.to_json() == trace.to_json()
    assert {ACCEPTED, REJECTED, DISCARDED} <= {d.fate for r in trace.rounds for d in r.drafts}


def test_token_texts_name_every_id_once():
    texts = token_texts(make_trace())
    assert texts == {1: "y", 10: "x", 11: "x", 12: "x", 13: "x"}  # the prompt's id 1 takes the text its draws gave

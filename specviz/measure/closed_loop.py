"""A busy server, measured: the load driver of `python -m specviz serve-bench` (cli/serve_bench.py). Simulated users in
a closed loop (each sends its next request when its last one ends; at most `requests` each, and none sent after
`seconds`), all served by one batch (engine/batched.py) at once, for each rule (the target alone, fixed K, the
cost-aware rule for a batch) at each number of users, in interleaved turns: the figures a serving benchmark reports.

    runs = serve_runs(engine, Plan(users=(1, 2, 4, 8), rules=("target", "k4", "cost"), kinds=("code", "story")))

Per request: time to first token (its prefill alone, after it was asked), its tokens per second after the first
(what one user sees: interactivity), its tokens. Per run: the tokens every user received over the run's wall time
(aggregate throughput) and the batch's tokens per target pass. The users are threads of nothing: requests on a
queue in this process, no network at all (a server's transport is not what is measured).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import asdict, dataclass, field

from specviz.algorithm.sampling import SamplingSettings
from specviz.engine.batch_prices import BatchPrices
from specviz.engine.batched import Batch, Request, Served
from specviz.record.stats import Spread, after_first, spread
from specviz.settings.bounds import MAX_BATCH, MAX_K
from specviz.settings.prompts import BENCH_PROMPTS

RULE_NAMES = "target, kN (N drafts a round, 1-16), cost"
MOST_TURNS, MOST_SECONDS, MOST_REQUESTS = 20, 3600, 32  # a benchmark stops by itself, bounded in count and time


def rule_k(rule: str) -> tuple[int, bool]:
    """(K, priced): 'target' -> (0, False); 'k4' -> (4, False); 'cost' -> (4, True), the most it may draft."""
    if rule == "target":
        return 0, False
    if rule == "cost":
        return 4, True
    if rule.startswith("k") and rule[1:].isdigit() and 1 <= int(rule[1:]) <= MAX_K:
        return int(rule[1:]), False
    raise ValueError(f"unknown rule {rule!r}: the rules are {RULE_NAMES}")


@dataclass(frozen=True)
class Plan:
    """What a serve-bench runs: each number of users × each rule, `turns` times interleaved."""

    users: tuple[int, ...] = (1, 2, 4, 8)
    rules: tuple[str, ...] = ("target", "k4", "cost")
    kinds: tuple[str, ...] = ("code", "story")
    max_new_tokens: int = 48
    turns: int = 5
    temperature: float = 0.0
    requests: int = 1  # requests each user sends, one after another
    seconds: float = 600.0  # no request is sent after this many seconds of a run

    def __post_init__(self):
        for n in self.users:
            if not isinstance(n, int) or not 1 <= n <= MAX_BATCH:
                raise ValueError(f"users must be whole numbers from 1 to {MAX_BATCH}, got {n!r}")
        for rule in self.rules:
            rule_k(rule)
        for kind in self.kinds:
            if kind not in BENCH_PROMPTS:
                raise ValueError(f"unknown prompt kind {kind!r}; the kinds are {', '.join(BENCH_PROMPTS)}")
        if not (self.users and self.rules and self.kinds):
            raise ValueError("give at least one number of users, one rule and one prompt kind")
        if not 1 <= self.turns <= MOST_TURNS or not 1 <= self.requests <= MOST_REQUESTS:
            raise ValueError(f"turns must be 1-{MOST_TURNS} and requests 1-{MOST_REQUESTS}")
        if not 0 < self.seconds <= MOST_SECONDS or not 1 <= self.max_new_tokens <= 512:
            raise ValueError(f"seconds must be above 0 and at most {MOST_SECONDS}; max new tokens 1-512")
        SamplingSettings(temperature=self.temperature)  # its own bounds


@dataclass
class Run:
    """One rule at one number of users, one turn: what every user got."""

    users: int
    rule: str
    turn: int
    seconds: float
    aggregate_tokens_per_s: float
    tokens_per_pass: float  # tokens the batch's target passes committed, per pass (prefills not counted)
    alpha: float  # drafts kept ÷ drafts examined, over every sequence (0 where nothing was drafted)
    users_detail: list[dict] = field(default_factory=list)  # per request: user, prompt, kind, ttft_s, …
    why: list[str] = field(default_factory=list)  # the cost-aware rule's first rounds, in numbers
    tokens_per_sequence_pass: float = 0.0  # tokens a sequence received per pass that verified it (0: not recorded)


def prompts_for(engine, kinds: tuple[str, ...], users: int) -> list[tuple[str, str, tuple[int, ...]]]:
    """(kind, prompt, its ids) for each user: the kinds in turn, each kind's prompts in turn."""
    from specviz.engine import RunSettings

    out = []
    for u in range(users):
        kind = kinds[u % len(kinds)]
        prompt = BENCH_PROMPTS[kind][(u // len(kinds)) % len(BENCH_PROMPTS[kind])]
        out.append((kind, prompt, tuple(engine.encode(prompt, RunSettings()))))
    return out


def serve_users(batch: Batch, asked: list[list[Request]], seconds: float, stop=None) -> list[tuple[int, Served]]:
    """Closed loop, through the batch's admission loop (Batch.serve): each user's first request at 0, its next as
    soon as its last ends (none after `seconds`), every request seated at once (the batch holds every user) ->
    (user, Served) in the order they ended. `stop` (an Event): set, the loop ends after the round in progress, with
    what had ended by then."""
    queues = [[dataclasses.replace(r, user=u) for r in requests] for u, requests in enumerate(asked)]
    done: list[tuple[int, Served]] = []

    def then(served: Served, now: float) -> Request | None:
        u = served.request.user
        done.append((u, served))
        return queues[u].pop(0) if queues[u] and now < seconds else None

    first = [q.pop(0) for q in queues if q]
    if first:
        batch.serve(first, len(first), then, stop)
    return done


def one_run(engine, plan: Plan, users: int, rule: str, turn: int, prices: BatchPrices | None, stop=None) -> Run:
    """`users` users under `rule`, served together; the cost rule prices by `prices`, and adds its rounds to them."""
    k, priced = rule_k(rule)
    sampling = SamplingSettings(temperature=plan.temperature)
    chosen = prompts_for(engine, plan.kinds, users)
    asked = [[Request(ids, sampling, seed=1000 * turn + 100 * u + r, max_new_tokens=plan.max_new_tokens,
                      label=kind) for r in range(plan.requests)] for u, (kind, _, ids) in enumerate(chosen)]
    batch = Batch(engine.target, engine.draft if k else None, engine.vocab, engine.eos_ids, k,
                  prices if priced else None)
    started = time.perf_counter()
    done = serve_users(batch, asked, plan.seconds, stop)
    seconds = time.perf_counter() - started
    detail = [dict(user=u, request=i, kind=s.request.label, prompt=chosen[u][1], ttft_s=s.first_token_s - s.asked_s,
                   tokens_per_s=after_first(len(s.output_ids), s.first_token_s, s.finished_s) or 0.0,
                   tokens=len(s.output_ids), output_token_ids=s.output_ids)
              for i, (u, s) in enumerate(done)]
    tokens, counts = sum(len(s.output_ids) for _, s in done), batch.counts
    return Run(users, rule, turn, seconds, tokens / seconds, counts.tokens / max(counts.passes, 1),
               counts.accepted / counts.examined if counts.examined else 0.0, detail,
               [c.why() for c in counts.choices[:3]], counts.tokens / max(counts.row_rounds, 1))


def serve_runs(engine, plan: Plan, prices=None, progress=None, stop=None, peer=None) -> list[Run]:
    """Every (users, rule) of the plan, `turns` times, interleaved: turn by turn, each users count, each rule, after
    one short untimed run of each rule at the most users.
    `stop` (an Event): set, the runs end after the round in progress, keeping those whose users all finished.
    `peer` (users, turn) -> Run: a peer's server, after the rules at each users count (measure/peers.ServePeer)."""
    if any(rule_k(r)[1] for r in plan.rules) and prices is None:
        raise ValueError("the cost rule needs the pair's measured costs (measure/pass_timing.measure_costs)")
    runs, total = [], plan.turns * len(plan.users) * (len(plan.rules) + bool(peer))
    warm = dataclasses.replace(plan, max_new_tokens=min(plan.max_new_tokens, 4))  # each rule's shapes once, untimed:
    for rule in plan.rules:  # a CPU's first pass of a shape pays for choosing its kernels, so its clock is not kept
        one_run(engine, warm, max(plan.users), rule, plan.turns, prices and BatchPrices(prices), stop)
    measured = prices and BatchPrices(prices)  # what the cost rule's rounds cost, kept across its runs as a server would
    for turn in range(plan.turns):
        for users in plan.users:
            for rule in plan.rules:
                run = one_run(engine, plan, users, rule, turn, measured, stop)
                if stop is not None and stop.is_set():
                    return runs
                runs.append(run)
                _said(progress, runs, total)
            if peer is not None:
                runs.append(peer(users, turn))
                _said(progress, runs, total)
    return runs


def _said(progress, runs: list[Run], total: int) -> None:
    """The last run, as a progress line."""
    if progress:
        run = runs[-1]
        progress(len(runs) / total, f"turn {run.turn + 1}: {run.users} users, {run.rule}: "
                                    f"{run.aggregate_tokens_per_s:.1f} tokens/s in all")


# --- the report ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Line:
    """One (users, rule) over its turns: medians and ranges."""

    users: int
    rule: str
    aggregate: Spread  # tokens/s over every user, over the turns
    per_user: Spread  # a request's tokens/s after its first, the turn's median, over the turns
    ttft: Spread  # a request's time to first token, the turn's median, over the turns
    tokens_per_pass: float  # median over the turns


def lines(runs: list[Run]) -> list[Line]:
    out = []
    for users in sorted({r.users for r in runs}):
        for rule in dict.fromkeys(r.rule for r in runs):
            mine = [r for r in runs if r.users == users and r.rule == rule]
            if mine:
                out.append(Line(users, rule, spread([r.aggregate_tokens_per_s for r in mine]),
                                spread([statistics.median(d["tokens_per_s"] for d in r.users_detail) for r in mine]),
                                spread([statistics.median(d["ttft_s"] for d in r.users_detail) for r in mine]),
                                statistics.median(r.tokens_per_pass for r in mine)))
    return out


def measured_crossover(table: list[Line], rule: str) -> int | None:
    """The fewest users at which `rule`'s aggregate tokens/s falls below the target alone's beyond what the turns vary
    (Spread.below: one turn's 7.1 against 7.1 is no crossover); None: at no number of users measured."""
    target = {line.users: line.aggregate for line in table if line.rule == "target"}
    for line in table:
        if line.rule == rule and line.users in target and line.aggregate.below(target[line.users]):
            return line.users
    return None


def runs_alpha(runs: list[Run], rule: str) -> float | None:
    """The median α of `rule`'s runs that drafted (every prompt kind): what its crossover is predicted at."""
    drafted = [r.alpha for r in runs if r.rule == rule and r.alpha > 0]
    return min(statistics.median(drafted), 0.999) if drafted else None


def greedy_same(runs: list[Run]) -> bool:
    """At temperature 0: whether every rule, at every number of users, gave each prompt the same tokens (each must be
    the target alone's)."""
    seen: dict[str, list[int]] = {}
    for run in runs:
        for d in run.users_detail:
            if seen.setdefault(d["prompt"], d["output_token_ids"]) != d["output_token_ids"]:
                return False
    return True


def predicted_crossovers(runs: list[Run], profile) -> dict[str, int | None]:
    """Each drafting rule's crossover as the Costs tab predicts it (pass_timing.crossover_batch, from the profile
    with no longer pass cheaper: CostProfile.steady) at its K and what its runs measured a round gives a sequence:
    for a fixed K, the median of their tokens per sequence per pass (E itself: acceptance falls along a round, so
    E(α, K) of the runs' α would overstate it); for the cost rule, whose K varies, E(α, K) at the most it drafts and
    the median α of its runs (every prompt kind)."""
    from specviz.measure.pass_timing import crossover_batch

    out = {}
    for rule in dict.fromkeys(r.rule for r in runs):
        k, priced = rule_k(rule)
        alpha = runs_alpha(runs, rule)
        if not (k and profile is not None and alpha is not None):
            continue
        measured = [r.tokens_per_sequence_pass for r in runs if r.rule == rule and r.alpha > 0
                    and r.tokens_per_sequence_pass > 0]
        tokens = statistics.median(measured) if measured and not priced else None
        out[rule] = crossover_batch(profile.steady(), alpha, k, tokens)
    return out


def report(runs: list[Run], plan: Plan, machine: str, predicted: dict[str, int | None]) -> str:
    """The table a serving benchmark prints, the machine named, each figure a median with its range over turns."""
    table = lines(runs)
    rows = [f"{'users':>5}  {'rule':<9} {'aggregate tokens/s':>26}  {'per user tokens/s':>24}  "
            f"{'time to first token s':>24}  {'tokens/pass':>11}"]
    for line in table:
        per_pass = f"{line.tokens_per_pass:.2f}" if line.tokens_per_pass else "–"  # a peer's passes are not counted
        rows.append(f"{line.users:>5}  {line.rule:<9} {line.aggregate.text(1):>26}  {line.per_user.text(1):>24}  "
                    f"{line.ttft.text(2):>24}  {per_pass:>11}")
    said = [f"serve-bench on {machine}: {plan.turns} interleaved turns, {plan.requests} request(s) a user, "
            f"{plan.max_new_tokens} new tokens, temperature {plan.temperature}, prompts {', '.join(plan.kinds)}; "
            f"median (least–most) over turns", *rows]
    for rule in plan.rules:
        if rule != "target" and "target" in plan.rules:
            found = measured_crossover(table, rule)
            said.append(f"{rule}: drafting's aggregate first falls below the target alone's (beyond what the turns "
                        f"vary) at "
                        f"{found if found else 'no number of users measured'}"
                        + (f" (the Costs tab's prediction: {_users(predicted[rule])})" if rule in predicted else ""))
    if plan.temperature == 0:  # specviz's rules (a peer's are its own: see measure/peers.ServePeer.contrast)
        said.append("greedy: every rule gave every prompt the same tokens" if greedy_same(
            [r for r in runs if r.rule in plan.rules]) else
                    "greedy: the rules' tokens DIFFER for some prompt (a bug: each must equal the target alone's)")
    return "\n".join(said)


def _users(n: int | None) -> str:
    return f"{n} users" if n else "not within the batches measured"


def as_json(runs: list[Run], plan: Plan, machine: str, profile=None) -> dict:
    """Every run and the profile that priced the cost rule and the prediction (None: not measured)."""
    return {"machine": machine, "plan": asdict(plan), "runs": [asdict(r) for r in runs],
            "profile": asdict(profile) if profile is not None else None}

"""The cost-aware rule in the engine: its prices from a measured profile, exact in greedy, K = 0 rounds where drafting
cannot pay, and a profile that cannot price the run (missing, negative, NaN, another device) falling back to the
threshold rule with the reason in the trace."""

import dataclasses
import json
import math

import pytest

from harness.tiny_models import noisy_copy, tiny_model
from specviz.engine import Engine, RunSettings
from specviz.engine.pass_costs import TOKENS, prices
from specviz.record.cost_profile import CostProfile

PROMPT = "def fib(n):"
COST = dict(adaptive=True, stop_rule="cost", k=8, max_new_tokens=40)


def made_up(engine, draft_s=0.1, per_token=0.0) -> CostProfile:
    """A profile of this engine: a one-token target pass 1 s, each further token per_token s, a draft step draft_s."""
    return CostProfile(engine.device, engine.dtype, engine.draft_name, engine.target_name, 16, list(TOKENS),
                       [1 + per_token * (n - 1) for n in TOKENS], [1], [1.0], [draft_s])


def fix_prices(engine, profile: CostProfile) -> None:
    """The engine priced by `profile` throughout its runs (not repriced by what its rounds paid: Engine.clock_prices)."""
    engine.pass_costs, engine.clock_prices = profile, False


def test_the_short_measurement_prices_this_pair(engine):
    profile = engine.measure_pass_costs()
    assert profile.problem(engine.device, engine.dtype, engine.target_name) is None
    assert profile.tokens == list(TOKENS) and all(t > 0 for t in profile.target_s) and profile.draft_batch_s[0] > 0


def test_prices_are_steps_of_the_target_and_grow_with_the_load(engine):
    p = made_up(engine, draft_s=0.2, per_token=0.5)
    one = prices(p, 0.2, 4, load=1)
    assert one.c == pytest.approx(0.2) and one.v == pytest.approx([1.0, 1.5, 2.0, 2.5, 3.0])
    two = prices(p, 0.2, 4, load=2)  # two runs in flight: a verify pass reads 2·(n + 1) tokens, a step t(2)
    assert two.v[1] == pytest.approx(p.t(4) / p.t(2)) and two.c == pytest.approx(0.2 * (p.t(2) / 1.0) / p.t(2))
    assert two.load == 2 and "on cpu" in two.source


def test_a_slow_point_does_not_price_every_longer_pass_dear(engine):
    """t(5) timed while the machine was busy (4.8 s, the rest 1 s) would price v(4) to v(6) dear; each v(n) is the
    least at n or beyond, so t(8) evens them, and t(2), faster than the step itself, is priced at the step."""
    p = made_up(engine)
    noisy = dataclasses.replace(p, target_s=[4.8 if n == 5 else 0.9 if n == 2 else 1.0 for n in TOKENS])
    assert prices(noisy, 0.1, 8, load=1).v == [1.0] * 9
    assert prices(noisy, 0.1, 8, load=1).v != [noisy.t(n + 1) / noisy.t(1) for n in range(9)]  # as measured: dear


def test_greedy_output_is_the_targets_and_rounds_record_their_weighing(engine):
    fix_prices(engine, made_up(engine, draft_s=0.05))
    trace = engine.run(PROMPT, RunSettings(temperature=0, **COST), baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids
    assert trace.pass_costs.c == pytest.approx(0.05) and trace.rule_note is None
    weighed = [r for r in trace.rounds[1:] if r.cost]
    assert len(weighed) == len(trace.rounds) - 1 and trace.rounds[0].cost is None  # round 1 is the prefill
    for r in weighed:
        drafted = [c for c in r.cost.choices if c.drafted]
        assert len(drafted) == r.k or r.drafts[-1].token_id in trace.eos_token_ids
        assert r.cost.expected_cost == pytest.approx(r.k * 0.05 + trace.pass_costs.v[r.k])


def test_where_no_draft_can_pay_rounds_are_plain_target_steps(engine):
    fix_prices(engine, made_up(engine, draft_s=2.0))  # a draft step dearer than two target steps
    trace = engine.run(PROMPT, RunSettings(temperature=0, **COST), baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids
    ks = [r.k for r in trace.rounds[1:]]
    assert ks.count(0) >= len(ks) - 3  # the first rounds draft (the prior) and learn; a probe may draft one
    assert all(not r.cost.choices[0].drafted for r in trace.rounds[1:] if r.k == 0 and r.cost.choices)  # last: 1 left


@pytest.mark.parametrize("spoil, said", [
    (lambda p: dataclasses.replace(p, device="cuda:0"), "not of this run's"),
    (lambda p: dataclasses.replace(p, target_s=[math.nan] * len(p.target_s)), "not a number"),
    (lambda p: dataclasses.replace(p, draft_batch_s=[-0.1]), "negative"),
    (lambda p: dataclasses.replace(p, target_s=[], tokens=[]), "missing"),
    (lambda p: dataclasses.replace(p, target="another-target"), "another-target"),
])
def test_a_profile_that_cannot_price_the_run_falls_back_to_the_threshold(engine, spoil, said):
    fix_prices(engine, spoil(made_up(engine)))
    trace = engine.run(PROMPT, RunSettings(temperature=0, **COST))
    assert said in trace.rule_note and "confidence threshold instead" in trace.rule_note
    assert trace.pass_costs is None and all(r.cost is None for r in trace.rounds)
    assert any(d.confidence is not None for r in trace.rounds for d in r.drafts)  # the threshold rule drafted


def test_the_first_run_measures_when_nothing_was_measured(engine):
    assert engine.pass_costs is None
    trace = engine.run(PROMPT, RunSettings(temperature=0, **COST))
    assert engine.pass_costs is not None and trace.pass_costs.source.startswith("a short measurement")


def test_a_busier_server_drafts_less(engine):
    """Four runs in flight: each verify pass reads four times the tokens, where this made-up pair's passes grow
    dear (a pass over n > 8 tokens costs 0.4 s more per token), so the same run drafts less and says at which load."""
    tokens = [1, 2, 4, 8, 16, 32, 64]
    fix_prices(engine, CostProfile(engine.device, engine.dtype, engine.draft_name, engine.target_name, 16, tokens,
                                    [1.0 + 0.4 * max(0, n - 8) for n in tokens], [1, 2, 4, 8], [1.0, 1.0, 1.0, 1.0],
                                    [0.05, 0.05, 0.05, 0.05]))
    settings = RunSettings(temperature=0, **COST)
    alone, busy = engine.run(PROMPT, settings, load=1), engine.run(PROMPT, settings, load=4)
    assert alone.pass_costs.load == 1 and busy.pass_costs.load == 4
    assert busy.pass_costs.v[3] > alone.pass_costs.v[3] == 1.0  # 16 tokens at load 4, 4 alone
    assert sum(r.k for r in busy.rounds) < sum(r.k for r in alone.rounds)
    assert busy.output_token_ids == alone.output_token_ids  # greedy: the same text either way


def test_the_short_measurement_feeds_only_ids_and_positions_the_pair_has(tokenizer):
    """A pair with 40 token ids and 48 positions (the packaged pair has 151936 and 32768): the measurement once fed
    ids up to 73 (IndexError in the embedding) and read 81 positions; now a run under the cost-aware rule prices and
    finishes, its profile's context short enough for the longest timed pass."""
    target = tiny_model(seed=3, vocab=40, positions=48)
    engine = Engine(noisy_copy(target, 0.2), target, tokenizer, "small-draft", "small-target")
    trace = engine.run("abcabcab", RunSettings(temperature=0, **dict(COST, max_new_tokens=12)))
    assert trace.rule_note is None and trace.pass_costs is not None and trace.output_token_ids
    assert engine.pass_costs.context + TOKENS[-1] <= engine.max_positions == 48


def test_the_rule_is_repriced_by_what_its_rounds_paid(engine):
    """Issue 62: priced by the load's short measurement alone, the rule ran 0.83× the target alone on the EPYC. Now
    each round is weighed at the clock of the rounds before it (Engine.clock_for, batch_prices.py at B = 1): a clock
    that says a draft step costs half a plain round and a verify pass 0.1 more a draft prices round 2 so (round 1,
    the prefill, is not weighed), and the run's own rounds join the clock; the output stays the target's."""
    from collections import deque

    engine.pass_costs = made_up(engine, draft_s=0.05)
    clock = engine.clock_for(engine.draft)
    clock.drafts[1] = deque([0.5] * 8, maxlen=8)
    for k in range(COST["k"] + 1):
        clock.rests[1, k] = deque([1.0 + 0.1 * k] * 8, maxlen=8)
    trace = engine.run(PROMPT, RunSettings(temperature=0, **COST), baseline=True)
    assert trace.output_token_ids == trace.baseline.output_token_ids
    second = trace.rounds[1].cost
    assert second.c == pytest.approx(0.5) and second.v == pytest.approx([1.0 + 0.1 * k for k in range(9)])
    assert trace.pass_costs.c == pytest.approx(0.05)  # what the run began with, as the trace says
    assert min(clock.rests[1, 0]) < 0.5  # a tiny pair's plain rounds take milliseconds: they joined the clock
    assert engine.clock_for(engine.draft) is clock  # kept across runs on the engine


def test_the_load_time_measurement_is_remembered_per_machine_pair_and_kernels(engine, tmp_path, monkeypatch):
    """Issue 64, item 15: a later start read nothing of the first and timed the pair again (about 50 s on 2 cores).
    The first load measures and remembers; the next reads the same figures and says they were remembered; another
    pair, or a file that does not read, is measured again."""
    from specviz.engine import pass_costs

    # the measurement as its times rise (a tiny pair's passes take about as long at 1 token as at 17: their noise
    # alone can look slowed, which the next test covers)
    monkeypatch.setattr(pass_costs, "measure_pass_costs",
                        lambda e: dataclasses.replace(made_up(e, per_token=0.1), source=pass_costs.SHORT))
    first = pass_costs.remembered_or_measured(engine, tmp_path)
    assert first.source == pass_costs.SHORT and (tmp_path / pass_costs.REMEMBERED_FILE).exists()
    again = pass_costs.remembered_or_measured(engine, tmp_path)
    assert again.source == pass_costs.REMEMBERED and again.target_s == first.target_s
    assert engine.draft_name in next(iter(json.loads((tmp_path / pass_costs.REMEMBERED_FILE).read_text())))
    engine.target_name = "another-target"
    assert pass_costs.remembered_or_measured(engine, tmp_path).source == pass_costs.SHORT  # another pair: measured
    (tmp_path / pass_costs.REMEMBERED_FILE).write_text("{not json")
    assert pass_costs.remembered_or_measured(engine, tmp_path).source == pass_costs.SHORT


def test_a_measurement_slowed_by_other_work_is_never_remembered(engine, tmp_path, monkeypatch):
    """A t(1) stalled by other work, evened, prices every pass up to a cheaper longer one as free: a profile so
    measured priced a two-token verify at 1.0 step for every later load (2026-12-06). It prices its own load alone
    and says why; a remembered one so slowed is measured again; one whose times rise is remembered."""
    from specviz.engine import pass_costs

    def profile(times):
        return dataclasses.replace(made_up(engine), target_s=times, source=pass_costs.SHORT)

    rising = [0.070, 0.102, 0.111, 0.112, 0.175, 0.192, 0.254, 0.411]
    slowed = [0.151, 0.161, 0.137, 0.149, 0.181, 0.204, 0.221, 0.382]
    assert profile(rising).slowed() is None
    assert "137.0 ms where a shorter one took 161.0" in profile(slowed).slowed()
    assert profile(slowed).steady().v(1) == 1.0  # what evening makes of it: a second token free
    measured = [profile(slowed), profile(rising)]
    monkeypatch.setattr(pass_costs, "measure_pass_costs", lambda e: measured.pop(0))
    first = pass_costs.remembered_or_measured(engine, tmp_path)
    file = tmp_path / pass_costs.REMEMBERED_FILE
    assert first.target_s == slowed and first.notes[0].startswith("not remembered: the target's pass measured")
    assert not file.exists() or not json.loads(file.read_text())
    second = pass_costs.remembered_or_measured(engine, tmp_path)  # measured again: it rises, and is remembered
    assert second.target_s == rising and not second.notes and not measured
    assert pass_costs.remembered_or_measured(engine, tmp_path).source == pass_costs.REMEMBERED
    key = next(iter(json.loads(file.read_text())))
    file.write_text(json.dumps({key: {**json.loads(file.read_text())[key], "target_s": slowed}}))  # a busy moment's
    measured = [profile(rising)]
    assert pass_costs.remembered_or_measured(engine, tmp_path).target_s == rising and not measured  # measured again


def test_the_target_alone_s_steps_time_the_clock_s_unit(engine):
    """A run that drafts in every round never times a round of K = 0: its clock's unit, and so what it charges a second
    token of a pass, came from the load's measurement alone. The target alone's steps, where the engine times them,
    are that unit measured (the first, which encodes the prompt, is not one)."""
    fix_prices(engine, made_up(engine, per_token=0.5))
    engine.clock_prices = True
    clock = engine.clock_for(engine.draft)
    assert not clock.measured(1, 0)
    base = engine.baseline(PROMPT, RunSettings(temperature=0, max_new_tokens=12))
    assert clock.measured(1, 0)
    assert list(clock.rests[1, 0]) == base.step_times_s[1:][-len(clock.rests[1, 0]):]
    assert clock.rest(1, 0) < 0.5  # a tiny pair's steps take milliseconds: the made-up profile's 1 s is gone

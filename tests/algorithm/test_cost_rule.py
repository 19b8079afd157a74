"""The cost-aware stop rule worked by hand: what it weighs, when it stops, K = 0, the probe, what it learns."""

import pytest

from specviz.algorithm.acceptance import PRIOR, PROBE_EVERY_AT_ANY_PRICE, Positions
from specviz.algorithm.cost_rule import PRIOR_AT_HALF, CostRule, fit_gamma


def drafts_of(rule: CostRule, confidences: list[float], most: int = 8) -> int:
    """Run one round's drafting with these draft confidences (as many as it asks for); how many it drafted."""
    rule.start_round()
    n = 0
    while n < len(confidences) and rule.draft_more(most):
        rule.drafted(confidences[n])
        n += 1
    return n


def test_a_fresh_rule_drafts_while_the_drafts_so_far_are_likely_to_survive():
    rule = CostRule(c=0.1, v=[1.0] * 9)  # a flat verify: each draft costs only its step
    assert drafts_of(rule, [0.9, 0.9, 0.05, 0.9]) == 3  # 0.9 × 0.9 × 0.05 = 0.04 < 1 × 0.1: no fourth
    first, *_, last = rule._choices
    assert first.survive == pytest.approx(1.0) and first.cost == pytest.approx(0.1)  # the prior: one survival
    assert last.survive == pytest.approx(0.9 * 0.9 * 0.05) and not last.drafted
    assert last.gain == pytest.approx(max(sum(0.9 * 0.9 * 0.05 - 0.1 for _ in range(j)) for j in range(1, 6)))


def test_an_expensive_verify_makes_k_zero_a_plain_target_step():
    rule = CostRule(c=0.3, v=[1 + 0.5 * n for n in range(9)])  # v(4) = 3, as on the AVX2 float32 CPU
    rule.positions = Positions([9], [4])  # 5 of 10 (with the prior) survived at position 1
    assert drafts_of(rule, [0.9]) == 0
    choice, = rule._choices
    assert choice.survive == pytest.approx(0.5) and choice.cost == pytest.approx(0.8) and not choice.drafted
    record = rule.end_round([], 0, 1)
    assert record.expected_tokens == 1 and record.expected_cost == 1.0 and rule.plain_in_a_row == 1


def test_after_probe_every_plain_rounds_one_draft_measures_again():
    rule = CostRule(c=0.3, v=[1 + 0.5 * n for n in range(9)])
    rule.positions = Positions([20], [0])  # none of 20 survived: drafting never pays
    for _ in range(PROBE_EVERY_AT_ANY_PRICE):
        assert drafts_of(rule, [0.5]) == 0
        rule.end_round([], 0, 1)
    assert drafts_of(rule, [0.5, 0.5]) == 1  # the probe, then the rule stops again
    assert rule._choices[0].probe and rule._choices[0].drafted and not rule._choices[1].drafted


def test_a_dear_first_draft_that_pays_with_those_after_it_is_drafted():
    """A measured v that rises for the first draft and hardly after: alone the first does not pay, with the next
    ones it does (the look-ahead in `gain`)."""
    rule = CostRule(c=0.1, v=[1.0] + [1.5] * 8)
    rule.tokens, rule.cost = 20, 10.0  # the run so far: 2 tokens per step
    assert drafts_of(rule, [0.95] * 8) > 1
    first = rule._choices[0]
    assert first.survive < rule.rate * first.cost and first.gain > 0 and first.drafted


def test_the_round_teaches_the_rule_its_acceptance_and_rate():
    rule = CostRule(c=0.1, v=[1.0, 1.1, 1.2])
    drafts_of(rule, [0.5, 0.5], most=2)
    record = rule.end_round([0.5, 0.5], n_accepted=1, committed=2)  # the first survived, the second was rejected
    assert record.expected_cost == pytest.approx(2 * 0.1 + 1.2)
    assert (rule.positions.examined, rule.positions.kept) == ([1, 1], [1, 0])
    assert rule.positions.acceptance(2) == pytest.approx(PRIOR / (1 + PRIOR))
    assert rule.examined == [(0.5, True), (0.5, False)] and rule.gamma == pytest.approx(1.0, abs=1e-6)  # as sure as
    assert rule.rate == pytest.approx(2 / 1.4)                                                          # it said


@pytest.mark.parametrize("examined, side", [
    ([], 0), ([(0.5, True), (0.5, False)], 0),  # no drafts, or as many survived as the draft expected: γ = 1
    ([(0.3, True)] * 3 + [(0.6, True)] * 3 + [(0.6, False)], -1),  # most survived though the draft was unsure
    ([(0.8, False)] * 3 + [(0.8, True)] * 5, 1),  # 3 of 8 sure drafts lost: it is less sure than it says
])
def test_gamma_makes_the_runs_estimates_add_up_to_its_survivals(examined, side):
    gamma = fit_gamma(examined)
    estimated = sum(sure ** gamma for sure, _ in examined) + PRIOR_AT_HALF * 0.5 ** gamma
    assert estimated == pytest.approx(sum(kept for _, kept in examined) + PRIOR_AT_HALF * 0.5, abs=1e-6)
    assert (gamma > 1 + 1e-6) - (gamma < 1 - 1e-6) == side


def test_a_draft_that_must_catch_up_first_is_charged_its_share_of_it():
    """After plain rounds the draft's first step reads the tokens they committed: that catch-up serves every round
    left, so the first draft is charged lag ÷ (rounds left), and a draft that pays alone may not pay with it."""
    fresh, lagging = CostRule(c=0.3, v=[1.0] * 9), CostRule(c=0.3, v=[1.0] * 9)
    for rule in (fresh, lagging):
        rule.positions = Positions([9], [4])  # half survive at position 1: 0.5 > 0.3, a first draft pays alone
    assert drafts_of(fresh, [0.9], most=1) == 1
    lagging.start_round(catch_up=2.0, left=6)  # 2 steps of catch-up, 6 tokens left: 6 ÷ 1.5 = 4 rounds share it
    assert not lagging.draft_more(1)
    choice, = lagging._choices
    assert choice.cost == pytest.approx(0.3 + 2.0 / 4)  # c + v(1) − v(0) + its share
    record = lagging.end_round([], 0, 1)
    assert record.catch_up == pytest.approx(0.5) and record.expected_cost == 1.0  # a plain round pays no catch-up


def test_repriced_rules_weigh_and_record_the_new_prices():
    """A rule repriced from what its rounds paid (engine/batch_prices.py) weighs at the new prices and records them, so
    the round's note redoes its arithmetic with the prices it used."""
    cheap, dear = CostRule(c=0.1, v=[1.0] * 9), CostRule(c=0.1, v=[1.0] * 9)
    for rule in (cheap, dear):
        rule.positions = Positions([9], [4])  # half survive at position 1
    dear.reprice(0.6, [1.0, 1.0])  # a draft step dearer than the 0.5 tokens it adds
    assert drafts_of(cheap, [0.9], most=1) == 1 and drafts_of(dear, [0.9], most=1) == 0
    record = dear.end_round([], 0, 1)
    assert (record.c, record.v) == (0.6, [1.0, 1.0]) and record.expected_cost == 1.0

"""settings/needs.py: which setting only applies with another. Each need is met exactly when its setting does
something; an unmet one is refused only when given; its sentence names the setting, what it needs and how to set it,
in the words of the place that asks; a drafter need lists exactly the drafters that meet it."""

import doctest

import pytest

from specviz.settings import needs
from specviz.settings.needs import NEEDS, Asked, DrafterFacts, refusal, unmet, why_off

MODEL = DrafterFacts("model", False, True, True, frozenset())
LOOKUP = DrafterFacts("lookup", False, False, False, frozenset())
LAYERS = DrafterFacts("layers", False, False, True, frozenset({"draft_layers"}))
TREE = DrafterFacts("tree", True, True, True, frozenset({"tree_widths"}))
HEADS = DrafterFacts("heads", False, False, True, frozenset(), own_passes=False)  # drafts from the verify pass
DRAFTERS = (MODEL, LOOKUP, LAYERS, TREE)


def asked(adaptive=False, stop_rule="threshold", temperature=0.0, drafter=MODEL) -> Asked:
    return Asked(adaptive, stop_rule, temperature, drafter)


def test_the_doctests():
    assert doctest.testmod(needs).failed == 0


# (setting, asked without what it needs, asked with it)
PAIRS = [
    ("k", asked(drafter=TREE), asked()),
    ("adaptive", asked(drafter=LOOKUP), asked(drafter=LAYERS)),
    ("adaptive", asked(drafter=TREE), asked()),
    ("adaptive", asked(stop_rule="cost", drafter=HEADS), asked(stop_rule="threshold", drafter=HEADS)),
    ("stop_rule", asked(), asked(adaptive=True)),
    ("confidence", asked(), asked(adaptive=True)),
    ("confidence", asked(adaptive=True, stop_rule="cost"), asked(adaptive=True)),
    ("draft_layers", asked(), asked(drafter=LAYERS)),
    ("tree_widths", asked(drafter=LAYERS), asked(drafter=TREE)),
    ("draft_weights", asked(drafter=LOOKUP), asked(drafter=TREE)),
    ("draft_weights", asked(drafter=LAYERS), asked()),
    *((name, asked(), asked(temperature=0.7)) for name in ("top_k", "top_p", "seed")),
]


@pytest.mark.parametrize("setting, without, with_", PAIRS)
def test_a_need_is_unmet_without_what_it_needs_and_met_with_it(setting, without, with_):
    assert [n.setting for n in unmet({setting}, without)] == [setting]
    assert unmet({setting}, with_) == []


def test_only_the_settings_given_are_refused():
    bare = asked(drafter=LOOKUP)  # nothing applies but the chain's K
    assert unmet(set(), bare) == [] and unmet({"k", "temperature", "max_new_tokens"}, bare) == []
    assert [n.setting for n in unmet(set(NEEDS), bare)] == [s for s in NEEDS if s != "k"]  # in the table's order


def test_the_contract_refuses_only_what_sweeps_and_records_never_carry():
    """RunSettings asks contract_only: K beside a tree, the seed at temperature 0 and the load option stay out."""
    assert {n.setting for n in unmet(set(NEEDS), asked(drafter=TREE), contract_only=True)} == {
        "adaptive", "stop_rule", "confidence", "draft_layers", "tree_budget", "tree_depth"}


def flag(setting):
    return "--" + setting.replace("_", "-")


@pytest.mark.parametrize("setting, without, with_", PAIRS)
def test_a_refusal_names_the_setting_what_it_needs_and_how(setting, without, with_):
    need = unmet({setting}, without)[0]
    said = refusal(need, flag, DRAFTERS)
    assert said.startswith(f"{flag(setting)} applies only {need.when}: ")
    assert flag(need.other) in said and said.endswith(f"or leave {flag(setting)} out (it would do nothing)")
    assert why_off(need) == f"Applies only {need.when}"


@pytest.mark.parametrize("setting, keys", [("k", "model, lookup or layers"), ("adaptive", "model or layers"),
                                           ("draft_layers", "layers"), ("tree_widths", "tree"),
                                           ("draft_weights", "model or tree")])
def test_a_drafter_need_lists_the_drafters_that_meet_it(setting, keys):
    assert f"set --drafter to {keys}, or leave" in refusal(NEEDS[setting], flag, DRAFTERS)


def test_the_other_settings_words():
    assert "turn on --adaptive," in refusal(NEEDS["stop_rule"], flag)
    assert "set --stop-rule to threshold," in refusal(NEEDS["confidence"], flag)
    assert "set --temperature above 0," in refusal(NEEDS["seed"], flag)
    assert refusal(NEEDS["seed"], str).startswith("seed applies only when sampling")  # the API's words: field names


def test_adaptive_k_with_medusa_heads_stops_only_by_the_threshold():
    """The cost-aware rule prices draft passes and heads run none (the rule RunSettings once held apart): a refusal
    that knows the rest of the request offers exactly the changes that meet the need there."""
    heads_cost = asked(adaptive=True, stop_rule="cost", drafter=HEADS)
    need = unmet({"adaptive"}, heads_cost)[0]
    said = refusal(need, flag, (*DRAFTERS, HEADS), heads_cost)
    assert "with Medusa heads or the EAGLE layer only by the confidence threshold" in said
    assert said.endswith("set --drafter to model or layers, or set --stop-rule to threshold, or leave --adaptive out "
                         "(it would do nothing)")
    tree_threshold = asked(adaptive=True, drafter=TREE)  # a tree: heads would do, the stop rule would not
    said = refusal(unmet({"adaptive"}, tree_threshold)[0], flag, (*DRAFTERS, HEADS), tree_threshold)
    assert "set --drafter to model, layers or heads, or leave" in said and "--stop-rule to" not in said

"""The drafter registry: each drafter declared once, and its key written as a string only there, so the page, the
CLI, the API, the bench and the Lab all read it from the registry."""

import ast
from pathlib import Path

import pytest

from specviz.drafters import CHAINS, DEFAULT, REGISTRY, SHAPED_TREES, drafter, recorded
from specviz.drafters.base import DRAFT_MODEL, EARLIER_TEXT, TARGET_LAYERS, TARGET_STATE
from specviz.drafters.lookup import prompt_lookup
from tests.helpers import ROOT

PACKAGE = ROOT / "specviz"


def test_each_drafter_is_declared_once_with_its_own_key_and_label():
    # what traces and API clients use (issue 35 added the Medusa heads and the EAGLE layer, as chains and as trees)
    # (issue 45 the trees shaped per round, for the draft model, the heads and the EAGLE layer)
    assert list(REGISTRY) == ["model", "lookup", "layers", "tree", "distinct", "shaped", "heads", "heads-tree",
                              "heads-shaped", "eagle", "eagle-tree", "eagle-shaped"]
    assert len({d.label for d in REGISTRY.values()}) == len(REGISTRY)
    assert all(key == d.key for key, d in REGISTRY.items())
    assert {d.source for d in REGISTRY.values()} == {DRAFT_MODEL, EARLIER_TEXT, TARGET_LAYERS, TARGET_STATE}
    assert DEFAULT is REGISTRY["model"] and list(CHAINS) == ["model", "lookup", "layers", "heads", "eagle"]
    assert all(d.proposed for d in CHAINS.values())  # every chain drafter says what it proposed
    assert REGISTRY["lookup"].propose is prompt_lookup and not REGISTRY["lookup"].has_draft_cache
    assert [key for key, d in REGISTRY.items() if d.tree] == ["tree", "distinct", "shaped", "heads-tree",
                                                              "heads-shaped", "eagle-tree", "eagle-shaped"]
    assert list(SHAPED_TREES) == ["shaped", "heads-shaped", "eagle-shaped"]
    assert REGISTRY["distinct"].distinct and not REGISTRY["heads"].has_draft_cache
    assert {d.trained for d in REGISTRY.values() if d.source == TARGET_STATE} == {"medusa", "eagle"}


def test_an_unknown_drafter_is_refused_by_name():
    with pytest.raises(ValueError, match="drafter must be one of model, lookup, layers, tree, distinct, shaped, heads, "
                                         "heads-tree, heads-shaped, eagle, eagle-tree, eagle-shaped, got 'medusa'"):
        drafter("medusa")
    assert recorded({}) is DEFAULT and recorded({"drafter": "lookup"}) is REGISTRY["lookup"]


def test_the_round_view_sentences_count_in_words():
    assert REGISTRY["model"].proposed(1, "“·a”", "d") == "The draft model proposed 1 token, one at a time: “·a”."
    assert "copied 3 tokens" in REGISTRY["lookup"].proposed(3, "x", "d")
    said = REGISTRY["heads"].proposed(3, "x", "3 Medusa heads")
    assert "Medusa heads 1 to 3 proposed 3 tokens at once" in said and "no draft model ran" in said
    assert "Medusa head 1 proposed 1 token" in REGISTRY["heads"].proposed(1, "x", "1 Medusa head")
    said = REGISTRY["eagle"].proposed(3, "x", "an EAGLE-style layer")
    assert "The EAGLE layer proposed 3 tokens, one a step (steps 1 to 3)" in said and "no draft model ran" in said
    assert [REGISTRY["eagle"].card_said(i) for i in (0, 1)] == [
        "Proposed by EAGLE step 1, from the target's own features (no draft model)",
        "Proposed by EAGLE step 2, from the target's own features and the layer's guess after them (no draft model)"]
    assert "self-speculation: t, its first 7 of 28 layers" in REGISTRY["layers"].proposed(2, "x",
                                                                                      "t, its first 7 of 28 layers")


def _string_constants(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            parent = parents.get(node)
            if isinstance(parent, ast.Call) and getattr(parent.func, "id", "") in ("getattr", "hasattr", "setattr"):
                continue  # an attribute's name (model.model, inner.layers), not a drafter
            yield node.lineno, node.value


@pytest.mark.parametrize("path", sorted(p for p in PACKAGE.rglob("*.py") if "drafters" not in p.parts),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_drafter_key_is_written_only_in_the_registry(path):
    found = [(line, text) for line, text in _string_constants(path) if text in REGISTRY]
    assert not found, f"{path.name} writes drafter keys as strings at {found}: read them from specviz.drafters"

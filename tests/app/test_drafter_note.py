"""An untrained drafter says so when chosen (issue 46): the page's note under the drafter names what is missing and
the command that trains it, read from the weights' folder (no model loads); a trained drafter, any other drafter and
bad input get no note."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from specviz.app.actions import ModelActions
from specviz.drafters import EAGLE_SHAPED, HEADS, HEADS_TREE, MODEL, TREE
from specviz.drafters.trained import MEDUSA
from specviz.models.pairs import DEFAULT_PRESET, PRESETS
from specviz.engine.trained import PROVENANCE, WEIGHTS, Provenance, trained_folder
from specviz.models.packaged import PACKAGED_PREFIX


@pytest.fixture
def actions(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))  # where trained weights would be: nothing yet
    return ModelActions(get_engine=None, presets=[DEFAULT_PRESET], out=None)


@pytest.mark.parametrize("drafter", [HEADS.key, HEADS_TREE.key, EAGLE_SHAPED.key])
def test_an_untrained_drafter_says_so_with_the_command(actions, drafter):
    note = actions.drafter_note(drafter, DEFAULT_PRESET)
    assert "sv-status-error" in note and "trained for" in note and "python -m specviz train-drafters" in note
    assert ("--kind eagle" in note) == drafter.startswith("eagle")


@pytest.mark.parametrize("drafter, preset", [(MODEL.key, DEFAULT_PRESET), (TREE.key, DEFAULT_PRESET),
                                             ("no such drafter", DEFAULT_PRESET), (HEADS.key, "no such pair"),
                                             (None, None), ([HEADS.key], DEFAULT_PRESET)])
def test_no_note_for_other_drafters_or_bad_input(actions, drafter, preset):
    assert actions.drafter_note(drafter, preset) == ""


def test_trained_heads_need_no_note(actions, tmp_path):
    name = PRESETS[DEFAULT_PRESET].target.removeprefix(PACKAGED_PREFIX)
    folder = trained_folder(tmp_path, name, MEDUSA)
    folder.mkdir(parents=True)
    (folder / WEIGHTS).write_bytes(b"")  # the note reads the provenance and that the weights are there, nothing more
    (folder / PROVENANCE).write_text("{}")
    assert "unreadable" in actions.drafter_note(HEADS.key, DEFAULT_PRESET)  # said, not a traceback
    (folder / PROVENANCE).write_text(json.dumps(asdict(Provenance(MEDUSA, name, "0" * 16, 3, 1536, "", 0, 0, 0, 0.0))))
    assert actions.drafter_note(HEADS.key, DEFAULT_PRESET) == ""

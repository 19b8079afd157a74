"""Model loading: folders, presets, refusal of bad ids, mismatched tokenizers and corrupted chunks."""

import os

import pytest

from specviz import models
from specviz.models import PackagedGGUF, check_same_tokenizer, load_pair, resolve_model


@pytest.fixture
def tiny_folders(tmp_path, tiny_pair, tokenizer):
    paths = []
    for name, model in zip(("draft", "target"), tiny_pair):
        folder = tmp_path / name
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        paths.append(str(folder))
    return paths


def test_load_pair_from_local_folders(tiny_folders):
    pair = load_pair(draft=tiny_folders[0], target=tiny_folders[1], dtype="float32")
    assert pair.device == "cpu" and pair.dtype == "float32"
    assert pair.draft.config.num_hidden_layers == 2 and pair.tokenizer.decode([5, 6]) == "de"


@pytest.mark.parametrize("bad, word", [("", "empty"), ("no such model!", "unknown model"),
                                       ("packaged:Nope", "unknown packaged model")])
def test_bad_model_ids_are_named(bad, word):
    with pytest.raises(ValueError, match=word):
        resolve_model(bad)


def test_unknown_hub_id_fails_fast_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="could not load"):
        models.load_tokenizer("specviz-test/does-not-exist")


def test_unknown_preset_and_half_a_pair():
    with pytest.raises(ValueError, match="unknown preset"):
        load_pair("gpt-9")
    with pytest.raises(ValueError, match="both draft and target"):
        load_pair(draft="x/y")


def test_tokenizer_mismatch_is_refused(tokenizer):
    from transformers import AutoTokenizer

    qwen = AutoTokenizer.from_pretrained(models.prepare_packaged("Qwen2.5-Coder-0.5B-Instruct"))
    with pytest.raises(ValueError, match="tokenizer mismatch"):
        check_same_tokenizer(tokenizer, qwen, ("tiny", "qwen"))
    check_same_tokenizer(qwen, qwen, ("qwen", "qwen"))


def test_corrupted_chunks_are_refused_and_leave_no_cache(tmp_path, monkeypatch):
    real = models.PACKAGED["Qwen2.5-Coder-0.5B-Instruct"]
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    monkeypatch.setitem(models.PACKAGED, "Broken", PackagedGGUF("Broken", real.packages, real.size, "0" * 64))
    with pytest.raises(ValueError, match="corrupted or partial"):
        models.prepare_packaged("Broken")
    assert os.listdir(tmp_path) == []  # no half-written folder a later start could trust


def test_dtype_and_device_choices():
    assert models.pick_dtype("float32", "cpu") == "float32"
    assert models.pick_dtype("auto", "cuda") == "bfloat16"
    with pytest.raises(ValueError, match="dtype"):
        models.pick_dtype("int3", "cpu")
    with pytest.raises(ValueError, match="device"):
        models.pick_device("tpu")

"""What a hosted instance exposes: no code runs from a model or a file, uploads are bounded, only offered pairs
can be named. (Trace files and prompts full of markup, and naming a pair the page does not offer:
tests/app/test_bad_input.py. Interrupted preparation and the sha256 check: tests/models/test_pairs.py.)"""

import pickle
import re
from pathlib import Path

import pytest

import app
from specviz.models import pairs as models
from specviz.app import serving
from specviz.record.trace import MAX_TRACE_BYTES
from specviz.record.load import load_trace
from tests.helpers import ROOT

SOURCES = sorted((ROOT / "specviz").rglob("*.py")) + [Path(app.__file__)]  # every folder of the package
# Each of these can run code from a file: unpickling (torch.load without weights_only, pickle, joblib, numpy's
# allow_pickle), a model's own Python (trust_remote_code), or a string as code.
FORBIDDEN = {
    "pickle": r"\bimport pickle\b|\bpickle\.|\bcPickle\b|\bdill\b|\bjoblib\b|\bmarshal\.loads\b",
    "torch.load": r"\btorch\.load\(|weights_only",
    "numpy pickles": r"allow_pickle",
    "remote code": r"trust_remote_code\s*=\s*(?!False\b)",
    "code from strings": r"(?<![\w.])(eval|exec)\(",
}


@pytest.mark.parametrize("what", list(FORBIDDEN))
def test_no_load_path_can_run_code_from_a_file(what):
    hits = [f"{path.name}:{n}: {line.strip()}" for path in SOURCES
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(FORBIDDEN[what], line)]
    assert not hits, f"{what}:\n" + "\n".join(hits)


def test_the_grep_finds_what_it_looks_for():
    """The negative control: each pattern matches the line it is meant to forbid."""
    lines = {"pickle": "import pickle", "torch.load": "torch.load(path)",
             "numpy pickles": "np.load(f, allow_pickle=True)", "remote code": "from_pretrained(p, trust_remote_code=1)",
             "code from strings": "eval(text)"}
    assert all(re.search(FORBIDDEN[what], line) for what, line in lines.items())
    assert not re.search(FORBIDDEN["remote code"], "trust_remote_code=False")


class Boom:
    """Unpickling this runs code (it touches a file): what a malicious pytorch_model.bin would do."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def test_a_pickled_checkpoint_is_refused_without_being_unpickled(tmp_path, tiny_pair, tokenizer):
    folder, ran = tmp_path / "model", tmp_path / "code-ran"
    tiny_pair[1].config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    with open(folder / "pytorch_model.bin", "wb") as f:
        pickle.dump({"weights": Boom(str(ran))}, f)
    with pytest.raises(ValueError, match="could not load model"):
        models.load_model(str(folder), "cpu", "float32")
    assert not ran.exists()


def test_uploads_are_bounded_by_the_server_and_by_the_loader():
    assert serving.launch_kwargs()["max_file_size"] == MAX_TRACE_BYTES
    with pytest.raises(ValueError, match="over 20 MB, the limit"):
        load_trace(b" " * (MAX_TRACE_BYTES + 1))


def test_a_hosted_page_can_offer_only_some_pairs(monkeypatch, capsys):
    offline = "qwen2.5-coder-0.5b-1.5b-offline"
    monkeypatch.setenv("SPECVIZ_PRESETS", f"{offline}, smollm2-135m-1.7b")
    args = app.parse_args([])
    assert args.presets == [offline, "smollm2-135m-1.7b"] and args.preset == offline
    assert app.parse_args(["--presets", "smollm2-135m-1.7b"]).preset == "smollm2-135m-1.7b"
    for argv, message in [(["--presets", "gpt-9"], "unknown preset 'gpt-9'"),
                          (["--presets", offline, "--preset", "smollm2-135m-1.7b"], "is not one of --presets")]:
        with pytest.raises(SystemExit):
            app.parse_args(argv)
        assert message in capsys.readouterr().err



def test_a_malformed_room_store_is_refused_at_start_and_the_default_needs_no_server(monkeypatch, capsys, tmp_path):
    from specviz.app.room_hub import RoomHub
    from specviz.lecture.room_disk import DiskStore
    from specviz.lecture.room_setting import FORMS

    monkeypatch.setenv("SPECVIZ_ROOMS", "redis://localhost/0")  # no port: not the form
    with pytest.raises(SystemExit):
        app.parse_args([])
    assert FORMS in capsys.readouterr().err
    monkeypatch.delenv("SPECVIZ_ROOMS")
    assert app.parse_args([]).rooms is None and app.parse_args(["--rooms", "memory"]).rooms == "memory"
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))  # unset: rooms on disk in the cache folder, nothing to start
    hub = RoomHub()
    serving.keep_rooms(None, hub)
    assert isinstance(hub.rooms.store, DiskStore) and hub.rooms.store.path == tmp_path / "rooms.sqlite"

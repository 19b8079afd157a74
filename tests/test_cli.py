"""The CLI on tiny models saved to folders. Two tests run `python -m specviz` in a subprocess, as a user does (the
module's entry point end to end, each paying a fresh interpreter's imports of torch and transformers); the others
call its entry function, `specviz.cli.main`, in this process with the same arguments: the same code, with its
standard output, standard error and exit status captured."""

import json
import subprocess
import sys

import pytest
from transformers.utils import logging as hf_logging

from specviz import cli as specviz_cli

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models run on one thread


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_pair, tokenizer):
    root = tmp_path_factory.mktemp("models")
    out = []
    for name, model in zip(("draft", "target"), tiny_pair):
        model.save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
        out.append(str(root / name))
    return out


def cli(*args):
    """`python -m specviz ARGS` in a fresh interpreter (with this process's environment)."""
    return subprocess.run([sys.executable, "-m", "specviz", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture
def main(capsys, monkeypatch):
    """`python -m specviz ARGS` in this process: the exit status `main` returns, or argparse's SystemExit code, with
    what it printed. main() sets TOKENIZERS_PARALLELISM and turns transformers' progress bars off for the process:
    both are put back after the test."""
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    bars = hf_logging.is_progress_bar_enabled()

    def run(*args):
        capsys.readouterr()
        try:
            code = specviz_cli.main(list(args))
        except SystemExit as e:
            code = e.code
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["python", "-m", "specviz", *args], code, out, err)

    yield run
    if bars:
        hf_logging.enable_progress_bar()


@pytest.mark.slow  # a subprocess, as a user runs it
def test_run_prints_rounds_summary_and_writes_json(folders, tmp_path):
    path = tmp_path / "t.json"
    r = cli("run", "--prompt", "def fib(n):", "--draft", folders[0], "--target", folders[1], "--k", "3",
            "--temperature", "0", "--max-new-tokens", "20", "--dtype", "float32", "--baseline", "--json", str(path))
    assert r.returncode == 0, r.stderr
    assert "acceptance rate" in r.stdout and "tokens per target pass" in r.stdout and "speedup" in r.stdout
    assert "greedy output identical to target-only: yes" in r.stdout
    assert "runs each, interleaved)" in r.stdout and "timed on" in r.stdout  # the default: 5 turns, the machine named
    assert "5 runs each, interleaved" in r.stdout or "NOT A RESULT" in r.stdout
    data = json.loads(path.read_text())
    assert len(data["baseline"]["repeats"]["speculative"]) == 5 and data["baseline"]["repeats"]["warm_up"] == 1
    for key in ("settings", "rounds", "prompt_token_ids", "output_token_ids", "output_text"):
        assert key in data
    assert data["settings"]["k"] == 3 and len(data["output_token_ids"]) == 20


@pytest.mark.parametrize("args, word", [
    (["--k", "0"], "k must"), (["--k", "17"], "k must"), (["--temperature", "-1"], "temperature"),
    (["--top-p", "1.5"], "top_p"), (["--top-k", "-1"], "top_k"), (["--max-new-tokens", "100000"], "context"),
    (["--prompt", "  "], "prompt is empty"),
    (["--drafter", "tree", "--tree", "5-1"], "width at depth 1 must be a whole number from 1 to 4"),
    (["--drafter", "tree", "--tree", "2-2-2-2-2"], "at most 32"),
    (["--drafter", "tree", "--tree", "2-x"], "whole numbers separated by '-'"),
    (["--drafter", "lookup", "--tree", "2-1"], "--tree applies only with a tree drafter: set --drafter to tree, distinct or heads-tree"),
    (["--drafter", "tree", "--adaptive"], "--adaptive applies only with a chain drafter that runs a model"),
    (["--drafter", "heads"], "No Medusa heads are trained for"),  # said before the models load
    (["--drafter", "heads-tree"], "train them once with `python -m specviz train-heads`"),
    (["--baseline", "--repeats", "0"], "--repeats should be a whole number from 1 to 100, got 0"),
])
def test_bad_input_is_one_line_and_nonzero(main, folders, args, word):
    base = ["run", "--prompt", "hi", "--draft", folders[0], "--target", folders[1], "--dtype", "float32"]
    r = main(*base, *args)
    assert r.returncode == 2
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and word in errors[0] and r.stderr.strip().endswith(errors[0]), r.stderr


def test_tree_drafter_prints_its_rounds_and_records_its_trees(main, folders, tmp_path):
    path = tmp_path / "tree.json"
    r = main("run", "--prompt", "def fib(n):", "--draft", folders[0], "--target", folders[1], "--drafter", "tree",
            "--tree", "3-2-1", "--temperature", "0", "--max-new-tokens", "12", "--dtype", "float32", "--baseline", "--json", str(path))
    assert r.returncode == 0, r.stderr
    assert "tree 3-2-1 ·" in r.stdout and "tree 3-2-1: " in r.stdout and "not examined)" in r.stdout
    assert "greedy output identical to target-only: yes" in r.stdout
    assert "runs each, interleaved)" in r.stdout and "timed on" in r.stdout  # the default: 5 turns, the machine named
    assert "5 runs each, interleaved" in r.stdout or "NOT A RESULT" in r.stdout
    data = json.loads(path.read_text())
    assert len(data["baseline"]["repeats"]["speculative"]) == 5 and data["baseline"]["repeats"]["warm_up"] == 1
    assert data["settings"]["tree_widths"] == [3, 2, 1] and data["rounds"][1]["tree"]["widths"] == [3, 2, 1]


def test_unknown_preset(main):
    r = main("run", "--prompt", "hi", "--preset", "nope")
    assert r.returncode == 2 and "unknown preset" in r.stderr


def test_the_cost_aware_rule_says_why_under_each_round(main, folders, tmp_path):
    path = tmp_path / "cost.json"
    r = main("run", "--prompt", "def fib(n):", "--draft", folders[0], "--target", folders[1], "--adaptive",
            "--stop-rule", "cost", "--k", "6", "--temperature", "0", "--max-new-tokens", "24", "--dtype", "float32", "--baseline",
            "--json", str(path))
    assert r.returncode == 0, r.stderr
    assert "Cost-aware K (" in r.stdout and "greedy output identical to target-only: yes" in r.stdout
    assert "cost-aware K: speculation off in" in r.stdout  # the summary's account
    data = json.loads(path.read_text())
    assert data["settings"]["stop_rule"] == "cost" and data["pass_costs"]["source"].startswith("a short measurement")
    bad = main("run", "--prompt", "hi", "--draft", folders[0], "--target", folders[1], "--stop-rule", "guess")
    assert bad.returncode == 2 and "invalid choice: 'guess'" in bad.stderr


@pytest.mark.slow  # training in a subprocess, as a user runs it
def test_train_heads_then_draft_with_them(main, folders, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))  # the trained heads are saved here, and read from here
    train = cli("train-heads", "--target", folders[1], "--heads", "2", "--tokens", "5120", "--minutes", "2",
                "--dtype", "float32")
    assert train.returncode == 0, train.stderr
    assert "min left" in train.stderr and "100% heads learn" in train.stderr  # the progress bar, to its end
    assert "2 Medusa heads for" in train.stdout and "held out:" in train.stdout and "head 2 (the token 2 past" in train.stdout
    assert "of a one-token target pass" in train.stdout  # what a draft costs, measured
    saved = list(tmp_path.glob("drafting-heads/*/medusa/provenance.json"))
    assert len(saved) == 1 and json.loads(saved[0].read_text())["heldout_tokens"] == 512
    r = main("run", "--prompt", "def fib(n):", "--draft", folders[0], "--target", folders[1], "--drafter", "heads",
             "--max-new-tokens", "20", "--dtype", "float32", "--temperature", "0", "--baseline")
    assert r.returncode == 0, r.stderr
    assert "greedy output identical to target-only: yes" in r.stdout and "K=2" in r.stdout


def test_train_heads_refuses_bad_numbers(main, folders):
    r = main("train-heads", "--target", folders[1], "--minutes", "0")
    assert r.returncode == 2 and "train-heads wants 0 < --minutes <= 600" in r.stderr

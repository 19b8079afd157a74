"""The CLI end to end on tiny models saved to folders (a subprocess, as a user runs it)."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # each test runs the CLI in a subprocess, as a user does


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
    return subprocess.run([sys.executable, "-m", "specviz", *args], capture_output=True, text=True, timeout=300)


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
    (["--drafter", "lookup", "--tree", "2-1"], "--tree applies only with a tree drafter: set --drafter to tree, distinct, heads-tree or "
                                     "eagle-tree"),
    (["--drafter", "tree", "--adaptive"], "--adaptive applies only with a chain drafter that runs a model"),
    (["--drafter", "heads"], "No Medusa heads are trained for"),  # said before the models load
    (["--drafter", "heads-tree"], "train them once with `python -m specviz train-heads`"),
    (["--drafter", "eagle"], "No EAGLE-style layer is trained for"),
    (["--drafter", "eagle-tree"], "train it once with `python -m specviz train-heads --kind eagle`"),
    (["--baseline", "--repeats", "0"], "--repeats should be a whole number from 1 to 100, got 0"),
])
def test_bad_input_is_one_line_and_nonzero(folders, args, word):
    base = ["run", "--prompt", "hi", "--draft", folders[0], "--target", folders[1], "--dtype", "float32"]
    r = cli(*base, *args)
    assert r.returncode == 2
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and word in errors[0] and r.stderr.strip().endswith(errors[0]), r.stderr


def test_tree_drafter_prints_its_rounds_and_records_its_trees(folders, tmp_path):
    path = tmp_path / "tree.json"
    r = cli("run", "--prompt", "def fib(n):", "--draft", folders[0], "--target", folders[1], "--drafter", "tree",
            "--tree", "3-2-1", "--temperature", "0", "--max-new-tokens", "20", "--dtype", "float32", "--baseline", "--json", str(path))
    assert r.returncode == 0, r.stderr
    assert "tree 3-2-1 ·" in r.stdout and "tree 3-2-1: " in r.stdout and "not examined)" in r.stdout
    assert "greedy output identical to target-only: yes" in r.stdout
    assert "runs each, interleaved)" in r.stdout and "timed on" in r.stdout  # the default: 5 turns, the machine named
    assert "5 runs each, interleaved" in r.stdout or "NOT A RESULT" in r.stdout
    data = json.loads(path.read_text())
    assert len(data["baseline"]["repeats"]["speculative"]) == 5 and data["baseline"]["repeats"]["warm_up"] == 1
    assert data["settings"]["tree_widths"] == [3, 2, 1] and data["rounds"][1]["tree"]["widths"] == [3, 2, 1]


def test_unknown_preset(folders):
    r = cli("run", "--prompt", "hi", "--preset", "nope")
    assert r.returncode == 2 and "unknown preset" in r.stderr


def test_the_cost_aware_rule_says_why_under_each_round(folders, tmp_path):
    path = tmp_path / "cost.json"
    r = cli("run", "--prompt", "def fib(n):", "--draft", folders[0], "--target", folders[1], "--adaptive",
            "--stop-rule", "cost", "--k", "6", "--temperature", "0", "--max-new-tokens", "24", "--dtype", "float32", "--baseline",
            "--json", str(path))
    assert r.returncode == 0, r.stderr
    assert "Cost-aware K (" in r.stdout and "greedy output identical to target-only: yes" in r.stdout
    assert "cost-aware K: speculation off in" in r.stdout  # the summary's account
    data = json.loads(path.read_text())
    assert data["settings"]["stop_rule"] == "cost" and data["pass_costs"]["source"].startswith("a short measurement")
    bad = cli("run", "--prompt", "hi", "--draft", folders[0], "--target", folders[1], "--stop-rule", "guess")
    assert bad.returncode == 2 and "invalid choice: 'guess'" in bad.stderr


def test_train_heads_then_draft_with_them(folders, tmp_path):
    """Medusa heads, then an EAGLE layer on the teacher's data the first training cached (the target reads nothing)."""
    env = {**__import__("os").environ, "SPECVIZ_CACHE": str(tmp_path)}
    for kind, drafter, said, unit in (("medusa", "heads", "2 Medusa heads for", "head"),
                                      ("eagle", "eagle", "an EAGLE-style layer for", "EAGLE step")):
        train = subprocess.run([sys.executable, "-m", "specviz", "train-heads", "--kind", kind, "--target", folders[1],
                                "--heads", "2", "--tokens", "5120", "--minutes", "2", "--dtype", "float32"],
                               capture_output=True, text=True, timeout=300, env=env)
        assert train.returncode == 0, train.stderr
        assert "min left" in train.stderr and "100% held-out check" in train.stderr  # the progress bar, to its end
        assert said in train.stdout and "held out:" in train.stdout and f"{unit} 2 (the token 2 past" in train.stdout
        assert "of a one-token target pass" in train.stdout and "phases on" in train.stdout  # costs and times
        saved = list(tmp_path.glob(f"drafting-heads/*/{kind}/provenance.json"))
        assert len(saved) == 1 and json.loads(saved[0].read_text())["heldout_tokens"] == 512
        if kind == "eagle":
            assert "0 windows read now, 20 from the cache" in train.stdout
        r = subprocess.run([sys.executable, "-m", "specviz", "run", "--prompt", "def fib(n):", "--draft", folders[0],
                            "--target", folders[1], "--drafter", drafter, "--max-new-tokens", "20", "--dtype",
                            "float32", "--temperature", "0", "--baseline"], capture_output=True, text=True,
                           timeout=300, env=env)
        assert r.returncode == 0, r.stderr
        assert "greedy output identical to target-only: yes" in r.stdout and "K=2" in r.stdout


def test_train_heads_refuses_bad_numbers(folders):
    r = cli("train-heads", "--target", folders[1], "--minutes", "0")
    assert r.returncode == 2 and "train-heads wants 0 < --minutes <= 600" in r.stderr

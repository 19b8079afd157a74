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
    (["--drafter", "lookup", "--tree", "2-1"], "--tree applies only with a tree drafter of fixed widths: set "
                                     "--drafter to tree, distinct, heads-tree or eagle-tree"),
    (["--drafter", "tree", "--tree-budget", "8"], "--tree-budget applies only with a shaped tree drafter"),
    (["--drafter", "tree", "--adaptive"], "--adaptive applies only with a chain drafter that runs a model"),
    (["--drafter", "heads"], "No Medusa heads are trained for"),  # said before the models load
    (["--drafter", "heads-tree"], "train them once with `python -m specviz train-drafters`"),
    (["--drafter", "eagle"], "No EAGLE-style layer is trained for"),
    (["--drafter", "eagle-tree"], "train it once with `python -m specviz train-drafters --kind eagle`"),
    (["--baseline", "--repeats", "0"], "--repeats should be a whole number from 1 to 100, got 0"),
    # the rule's flags are refused whenever typed without the rule they choose, at their defaults too: the user
    # asked for a rule that would not run
    (["--stop-rule", "cost"], "--stop-rule applies only with adaptive K: turn on --adaptive"),
    (["--stop-rule", "threshold"], "--stop-rule applies only with adaptive K: turn on --adaptive"),
    (["--confidence", "0.25"], "--confidence applies only with adaptive K stopping by the confidence threshold"),
    (["--adaptive", "--confidence", "0.25"], "set --stop-rule to threshold, or leave --confidence out"),
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
def test_train_drafters_then_draft_with_them(main, folders, tmp_path, monkeypatch):
    """Medusa heads, then an EAGLE layer on the teacher's data the first training cached (the target reads nothing)."""
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))  # the trained heads are saved here, and read from here
    for kind, drafter, said, unit in (("medusa", "heads", "2 Medusa heads for", "head"),
                                      ("eagle", "eagle", "an EAGLE-style layer for", "EAGLE step")):
        train = cli("train-drafters", "--kind", kind, "--target", folders[1], "--heads", "2", "--prompts", "32",
                    "--tokens", "5120", "--minutes", "2", "--dtype", "float32")
        assert train.returncode == 0, train.stderr
        assert "min left" in train.stderr and "100% held-out check" in train.stderr  # the progress bar, to its end
        assert said in train.stdout and "held out:" in train.stdout and f"{unit} 2 (the token 2 past" in train.stdout
        assert "of a one-token target pass" in train.stdout and "phases on" in train.stdout  # costs and times
        saved = list(tmp_path.glob(f"drafting-heads/*/{kind}/provenance.json"))
        held = json.loads(saved[0].read_text())["heldout_tokens"] if len(saved) == 1 else 0
        assert held > 0 and f"and {held:,} held out" in train.stdout
        if kind == "eagle":  # what the target answered and read for the heads, read again from the cache
            assert "(0 answers now, 32 from the cache)" in train.stdout and "0 windows read now, 40 from the cache" \
                in train.stdout
        r = main("run", "--prompt", "def fib(n):", "--draft", folders[0], "--target", folders[1], "--drafter", drafter,
                 "--max-new-tokens", "20", "--dtype", "float32", "--temperature", "0", "--baseline")
        assert r.returncode == 0, r.stderr
        assert "greedy output identical to target-only: yes" in r.stdout and "K=2" in r.stdout


def test_train_drafters_refuses_bad_numbers(main, folders):
    r = main("train-drafters", "--target", folders[1], "--minutes", "0")
    assert r.returncode == 2 and "train-drafters wants 0 < --minutes <= 600" in r.stderr
    r = main("train-drafters", "--target", folders[1], "--prompts", "-1")
    assert r.returncode == 2 and "--prompts >= 0" in r.stderr


def test_train_heads_still_runs_train_drafters_and_says_nothing_more(main, folders):
    """The command's name until issue 61 still runs it, word for word: the scripts and notes written before work."""
    for args, code in ((("--target", folders[1], "--minutes", "0"), 2), (("--kind", "eagle", "--help"), 0)):
        new, old = main("train-drafters", *args), main("train-heads", *args)
        assert new.returncode == old.returncode == code and new.stdout + new.stderr
        assert (old.stdout, old.stderr) == (new.stdout, new.stderr)


def test_the_speedup_lines_give_the_ceiling_and_refuse_a_speedup_above_it():
    """The hand-made trace: ceiling 5.00x (7 tokens in 0.200 s of passes over the target alone's 7 tok/s); turns at
    5.20x are NOT A RESULT, at 2.00x a result."""
    from specviz.view.trace_text import speedup_lines
    from specviz.record.trace import Repeats, TimedRun
    from tests.helpers import make_trace

    def lines(alone_s):
        trace = make_trace()
        trace.baseline.repeats = Repeats([TimedRun(7, 0.5, 0.05)] * 5, [TimedRun(7, alone_s, alone_s / 10)] * 5, 1,
                                         "a test CPU")
        return "\n".join(speedup_lines(trace))

    fine, above = lines(1.0), lines(2.6)
    assert ("speedup 2.00x (2.00–2.00, 5 runs each, interleaved); ceiling per turn not recorded (the run shown's "
            "ceiling: 7 tokens in 0.200 s of passes = 35.0 tok/s ÷ 7.00 tok/s alone = 5.00x)") in fine
    assert "NOT A RESULT" not in fine
    assert "speedup 5.20x (5.20–5.20, 5 runs each, interleaved): NOT A RESULT, above its ceiling 5.00x" in above


# --- flags that apply only with another: refused with what they need (settings/needs.py) -------------------------

BENCH_VALUES = {"preset": ["--preset", "qwen-0.5b-1.5b"], "dtype": ["--dtype", "float32"],
                "draft_weights": ["--draft-weights", "int8"], "ks": ["--ks", "1,2"],
                "adaptive_k": ["--adaptive-k", "6"], "lookup_ks": ["--lookup-ks", "2"], "tree": ["--tree", "2-1"],
                "draft_layers": ["--draft-layers", "14"], "layers_k": ["--layers-k", "3"],
                "modes": ["--modes", "greedy"], "temperature": ["--temperature", "0.5"], "types": ["--types", "code"],
                "prompts_per_type": ["--prompts-per-type", "2"], "repeats": ["--repeats", "3"],
                "max_new_tokens": ["--max-new-tokens", "16"], "no_peer": ["--no-peer"], "rules": ["--rules"],
                "verify_cost": ["--verify-cost", "3"], "quick": ["--quick"], "drafters": ["--drafters"],
                "alpha_from": ["--alpha-from", "results.json"], "peers": ["--peers", "llama.cpp"],
                "record_peers": ["--record-peers"]}
# what each need's `other` is set to: (without what the setting needs, with it)
BENCH_OTHER = {"gpu_projection": (["--gpu-projection"], []), "quick": (["--quick"], []), "rules": (["--rules"], []),
               "drafters": (["--drafters"], []),
               "tiny": (["--tiny"], []), "draft_layers": ([], ["--draft-layers", "14"]),
               "modes": (["--modes", "greedy"], ["--modes", "sampled"]), "peers": ([], ["--peers", "llama.cpp"])}


def bench_check(*args):
    """The bench's flag check alone, as main runs it before the bench (no model loads)."""
    import argparse

    from specviz.cli.flags import changed_flags, refuse_unneeded_bench_flags
    from specviz.measure.bench_flags import add_bench_args
    p = argparse.ArgumentParser()
    add_bench_args(p)
    a = p.parse_args(list(args))
    refuse_unneeded_bench_flags(a, changed_flags(add_bench_args, a))


def bench_pairs():
    from specviz.measure.bench_flags import BENCH_NEEDS
    for need in BENCH_NEEDS:
        if need.other == "gpu_projection" and need.setting == "alpha_from":
            without, with_ = [], ["--gpu-projection"]
        else:
            without, with_ = BENCH_OTHER[need.other]
        if need.setting == "layers_k" and need.other != "draft_layers":  # its own need besides: rows to apply to
            with_ = [*with_, "--draft-layers", "14"]
        yield pytest.param(need, BENCH_VALUES[need.setting], without, with_, id=f"{need.setting}-{need.other}")


@pytest.mark.parametrize("need, typed, without, with_", list(bench_pairs()))
def test_a_bench_flag_that_would_do_nothing_is_refused_and_with_what_it_needs_passes(need, typed, without, with_):
    from specviz.cli.flags import flag
    with pytest.raises(ValueError) as e:
        bench_check(*typed, *without)
    assert str(e.value).startswith(f"{flag(need.setting)} applies only {need.when}: ")
    assert flag(need.other) in str(e.value) and str(e.value).endswith("(it would do nothing)")
    bench_check(*typed, *with_)  # no refusal at all


def test_a_bench_flag_at_its_default_is_never_refused_as_for_run():
    bench_check("--layers-k", "4", "--modes", "greedy", "--temperature", "0.7")  # at their defaults: passed
    bench_check("--quick", "--layers-k", "2")  # the smoke run drafts with 1 layer: it takes effect


def test_the_bench_refuses_before_loading_anything(main, monkeypatch):
    from specviz.models import pairs

    monkeypatch.setattr(pairs, "load_pair", lambda *a, **k: pytest.fail("the pair was loaded before the refusal"))
    r = main("bench", "--alpha-from", "results.json", "--out", "unused")
    assert r.returncode == 2 and "error: --alpha-from applies only with --gpu-projection" in r.stderr
    r = main("bench", "--types", "code,poem", "--out", "unused")
    assert r.returncode == 2 and "error: --types must name prompt kinds of code, factual, story, rewrite, json, got " \
                                 "poem" in r.stderr


def test_the_run_command_refuses_adaptive_k_with_heads_and_the_cost_rule():
    import argparse

    from specviz.cli.run import add_run_args, run_settings
    p = argparse.ArgumentParser()
    add_run_args(p)
    with pytest.raises(ValueError, match=r"^--adaptive applies only .*Medusa heads or the EAGLE layer only by the confidence threshold.*: "
                                         r"set --drafter to model or layers, or set --stop-rule to threshold, or leave "
                                         r"--adaptive out"):
        run_settings(p.parse_args(["--prompt", "x", "--drafter", "heads", "--adaptive"]))
    settings = run_settings(p.parse_args(["--prompt", "x", "--drafter", "heads", "--adaptive", "--stop-rule",
                                          "threshold"]))
    assert settings.adaptive and settings.stop_rule == "threshold"


def test_costs_prints_the_curve_and_what_a_draft_from_the_targets_state_costs(main, monkeypatch, tiny_pair, tokenizer):
    """`costs` on the tiny pair (the packaged pair's load and full grid would take minutes): the t(n)/t(1) line, and
    the draft parts' line, each part in milliseconds as the Costs tab prints it."""
    from types import SimpleNamespace

    from specviz.models import pairs
    from specviz.measure import pass_timing

    pair = SimpleNamespace(draft=tiny_pair[0], target=tiny_pair[1], tokenizer=tokenizer, draft_name="tiny-draft",
                           target_name="tiny-target", dtype="float32", dtype_why="")
    monkeypatch.setattr(pairs, "load_pair", lambda *a, **k: pair)
    real = pass_timing.measure_costs
    monkeypatch.setattr(pass_timing, "measure_costs", lambda e, progress=None: real(
        e, context=16, tokens=(1, 2, 5), batches=(1, 2), repeats=1, progress=progress))
    r = main("costs", "--k", "4")
    assert r.returncode == 0, r.stderr
    assert "tiny-draft → tiny-target" in r.stdout and "t(n) / t(1)" in r.stdout
    line = next(line for line in r.stdout.splitlines() if line.startswith("a draft from the target's own state: "))
    assert " ms · a head's block " in line and " ms · 3 heads " in line and "EAGLE-style layer" in line

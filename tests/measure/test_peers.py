"""measure/peers.py and measure/peer_figures.py without a model: --peers' values and refusals, the wheel absent, one
llama.cpp request's chunks in figures, its rows beside specviz's in the bench's report, and each user's output against
its prompt alone. The short run on the packaged files is tests/measure/test_peers_real.py."""

import argparse
import sys

import pytest

from specviz.measure import peers
from specviz.measure.bench import _row, bar_rows
from specviz.measure.bench_report import markdown_report
from specviz.measure.peer_figures import Completion, completion_of, contrast_line, differed, peer_values
from specviz.measure.closed_loop import Plan, Run, report, serve_runs
from specviz.record.trace import Baseline

pytestmark = pytest.mark.usefixtures("one_thread")


def test_peers_are_named_once_and_anything_else_is_refused_naming_them():
    assert peers.parse_peers("llama.cpp") == ("llama.cpp",)
    assert peers.parse_peers(" llama.cpp, llama.cpp ") == ("llama.cpp",)
    for bad in ("vllm", "llama.cpp,vllm", " , "):
        with pytest.raises(argparse.ArgumentTypeError, match="the peers are: llama.cpp"):
            peers.parse_peers(bad)


@pytest.mark.parametrize("command", ["bench", "serve-bench"])
def test_a_bad_peer_stops_the_command_line_with_the_peers_there_are(command, capsys):
    from specviz.cli.main import main

    with pytest.raises(SystemExit) as stopped:
        main([command, "--peers", "llama"])
    assert stopped.value.code == 2
    assert "argument --peers: unknown peer 'llama'; the peers are: llama.cpp" in capsys.readouterr().err


def test_peers_are_refused_before_anything_loads_where_they_cannot_run(capsys):
    from specviz.cli.main import main

    assert main(["bench", "--peers", "llama.cpp", "--tiny"]) == 2  # random weights: nothing to compare
    assert "--peers applies only without --tiny" in capsys.readouterr().err
    assert main(["serve-bench", "--peers", "llama.cpp", "--temperature", "0.7"]) == 2
    assert "decodes greedily" in capsys.readouterr().err
    assert main(["serve-bench", "--peers", "llama.cpp", "--preset", "smollm2-135m-1.7b"]) == 2
    assert "HuggingFaceTB/SmolLM2-135M-Instruct is not packaged" in capsys.readouterr().err
    assert peers.peers_to_run((), (None, None, None), greedy=False) == ()  # none asked: nothing checked


def test_without_the_wheel_the_peer_says_how_to_install_it_and_the_rest_runs(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # `import xllamacpp` raises ImportError
    why = peers.wheel_missing()
    assert why and "pip install -r requirements-peers.txt" in why and "libgomp1" in why and "The rest runs" in why
    assert peers.peers_to_run(("llama.cpp",), (None, None, None), greedy=True) == ()
    assert capsys.readouterr().out.strip() == why


def test_a_slot_too_small_for_the_request_is_refused_before_llama_cpp_is_asked():
    server = peers.LlamaServer.__new__(peers.LlamaServer)  # no model: the check comes first
    server.context = peers.slot_context(8)
    with pytest.raises(ValueError, match="do not fit llama.cpp's slot"):
        server.complete([1] * (peers.PROMPT_ROOM + 1), 8)
    remote = peers.RemoteServer.__new__(peers.RemoteServer)  # the bench's: refused in this process, before the child is asked
    remote.context = peers.slot_context(8)
    with pytest.raises(ValueError, match="do not fit llama.cpp's slot"):
        remote.complete([1] * (peers.PROMPT_ROOM + 1), 8)


def chunk(text, timings=None):
    out = {"choices": [{"text": text, "index": 0}]}
    return {**out, "timings": timings} if timings else out


TIMINGS = {"prompt_n": 20, "prompt_ms": 400.0, "predicted_n": 5, "predicted_ms": 200.0, "draft_n": 8,
           "draft_n_accepted": 6, "predicted_per_second": 20.0}


def test_a_streamed_request_in_figures():
    """Asked at 10.0 s; its first token back at 10.5, its last at 10.75: 5 tokens in 0.75 s with the prefill; 20
    prompt tokens in 0.4 s; 4 tokens after the first in 0.2 s (llama.cpp's own predicted_per_second); 6 of 8 kept."""
    c = completion_of([(10.5, chunk("def")), (10.5, chunk("")), (10.6, chunk(" f")), (10.75, chunk("(x)", TIMINGS))],
                      asked_s=10.0)
    assert c.text == "def f(x)" and c.tokens == 5 and c.prompt_tokens == 20
    assert c.wall_s == pytest.approx(0.75) and c.first_s == pytest.approx(0.5)
    assert c.tokens_per_s == pytest.approx(5 / 0.75) and c.prefill_tokens_per_s == pytest.approx(50)
    assert c.decode_tokens_per_s == pytest.approx(TIMINGS["predicted_per_second"])
    assert c.after_first == pytest.approx(4 / 0.25) and c.acceptance == pytest.approx(0.75)
    alone = completion_of([(1.0, chunk("x", {**TIMINGS, "predicted_n": 1, "draft_n": 0}))], asked_s=0.0)
    assert alone.acceptance is None and alone.decode_tokens_per_s is None and alone.after_first == 0


def test_an_error_or_an_answer_without_timings_is_said():
    with pytest.raises(ValueError, match="llama.cpp refused the request: the prompt is too long"):
        completion_of([(1.0, {"error": {"code": 400, "message": "the prompt is too long"}})], 0.0)
    with pytest.raises(ValueError, match="no timings"):
        completion_of([(1.0, chunk("x"))], 0.0)


def completion(wall, draft_n=0):
    return Completion("text", 8, 20, wall, wall / 4, 100.0, 500.0, draft_n, draft_n // 2)


def baseline(tokens_per_s):
    """8 tokens, the first in an eighth of the time: after it, the same tokens/s."""
    total = 8 / tokens_per_s
    return Baseline([1] * 8, "", total / 8, total, tokens_per_s, [total / 8] * 8)


def test_llama_cpps_rows_carry_their_figures_and_speedups_pair_runs_of_one_turn():
    results = {"target-only": [baseline(4.0), baseline(2.0)], "transformers target-only": [3.0, 1.0],
               peers.ALONE: [completion(1.0), completion(2.0)],
               peers.SPECULATIVE: [completion(0.5, draft_n=8), completion(4.0, draft_n=4)]}
    rows = {r.config: r for r in bar_rows("code", "greedy", {"chain": []}, results)}
    assert rows["transformers target-only"].tokens_per_s == 2.0 and rows["transformers target-only"].alpha is None
    alone, spec = rows[peers.ALONE], rows[peers.SPECULATIVE]
    assert alone.tokens_per_s == pytest.approx(6.0) and alone.speedup == pytest.approx(2.0)  # 8/1 ÷ 4, 8/2 ÷ 2
    assert alone.prefill_tokens_per_s == pytest.approx(200) and alone.decode_tokens_per_s == pytest.approx(14)
    assert alone.ttft_s == pytest.approx(0.375) and alone.alpha is None
    assert spec.alpha == pytest.approx(0.5) and spec.spreads["tps"] == [2.0, 16.0]
    assert spec.speedup == pytest.approx((16 / 4 + 2 / 2) / 2)
    assert rows["target-only"].decode_tokens_per_s == pytest.approx(3.0)  # the median of 4 and 2
    env = {"draft": "d", "target": "t", "device": "cpu", "dtype": "float32", "torch": "x", "transformers": "y",
           "threads": 2, "max_new_tokens": 8, "repeats": 2, "date": "today",
           "peers": {"wheel": "xllamacpp 1", "cpu_build": "AVX2 (the wheel's)"}}
    text = markdown_report(list(rows.values()), None, env)
    assert "llama.cpp beside specviz (xllamacpp 1, its CPU build AVX2 (the wheel's)" in text
    assert (f"| code | {peers.SPECULATIVE} | 9.00 (2.00–16.00) | 2.50 (1.00–4.00)× | 200.0 (200.0–200.0) | "
            "0.56 (0.12–1.00) | 14.00 (14.00–14.00) | 0.50 (0.50–0.50) |") in text
    assert "llama.cpp beside specviz" not in markdown_report(list(rows.values()), None, {**env, "peers": None})
    assert peer_values([3.0, 1.0]) == {"tps": [3.0, 1.0]}


def served(users, rule, outputs, key="output_token_ids", turn=0):
    detail = [dict(user=u, request=u, kind="code", prompt=f"p{u % 2}", ttft_s=0.5, tokens_per_s=10.0, tokens=4,
                   **{key: out}) for u, out in enumerate(outputs)]
    return Run(users, rule, turn, 1.0, 40.0, 0.0, 0.0, detail)


def test_each_user_is_compared_with_its_prompt_alone():
    alone = {"p0": "a", "p1": "b"}
    runs = [served(1, "llama.cpp", ["z"], "text"), served(2, "llama.cpp", ["a", "b"], "text"),
            served(4, "llama.cpp", ["a", "x", "a", "y"], "text"), served(4, "llama.cpp", ["a", "x", "q", "b"], "text")]
    found = differed(runs, alone, "text")
    assert found == {2: [], 4: ["user 2 (code)", "user 4 (code)", "user 3 (code)"]}  # one user alone: not compared
    assert contrast_line("llama.cpp", found) == ("llama.cpp: at 2 users every output equalled its prompt alone's; at "
                                                 "4 users user 2 (code), user 4 (code), user 3 (code) differed")
    assert contrast_line("specviz", {}) == "specviz: no run of two users or more to compare"


def test_a_peers_users_join_the_serve_report_without_counting_as_specviz(tiny_pair, tokenizer):
    from specviz.engine import Engine

    engine = Engine(*tiny_pair, tokenizer, "tiny-draft", "tiny-target")
    plan = Plan(users=(1, 2), rules=("target",), kinds=("code",), max_new_tokens=3, turns=2)
    asked = []

    def peer(users, turn):
        asked.append((users, turn))
        return served(users, peers.SERVED, [[9]] * users, turn=turn)  # tokens no specviz rule gave
    said = []
    runs = serve_runs(engine, plan, progress=lambda done, line: said.append((done, line)), peer=peer)
    assert asked == [(1, 0), (2, 0), (1, 1), (2, 1)]  # in the turns, after the rules at each number of users
    assert len(said) == 8 and said[-1] == (1.0, "turn 2: 2 users, llama.cpp: 40.0 tokens/s in all")
    assert [(r.turn, r.users, r.rule) for r in runs] == [(t, u, rule) for t in range(2) for u in (1, 2)
                                                        for rule in ("target", peers.SERVED)]
    text = report(runs, plan, "this machine", {})
    assert "greedy: every rule gave every prompt the same tokens" in text  # the peer's tokens are not specviz's
    line = next(line for line in text.splitlines() if line.split()[:2] == ["2", peers.SERVED])
    assert line.split()[-1] == "–" and "40.0 (40.0–40.0)" in line  # its passes are not counted


def test_a_one_token_run_has_no_decode_speed_in_its_row():
    """A request of one token has no decoding: its row leaves the decode column empty, rather than filling it with the
    whole run's tokens/s under the decode heading."""
    one = Completion("x", 1, 10, 0.5, 0.5, 50.0, 0.0)
    values = peer_values([one, one])
    assert "decode_tps" in values and values["decode_tps"] == [None, None]
    row = _row("code", "greedy", peers.ALONE, None, values, [2.0, 2.0])
    assert row.decode_tokens_per_s is None and row.tokens_per_s == pytest.approx(2.0)

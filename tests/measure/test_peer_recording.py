"""measure/peer_recording.py: the shipped recording of llama.cpp beside specviz (assets/costs/peers.json) holds every
row of the bench's table "llama.cpp beside specviz" of the run it was written from (tests/fixtures'
results.json), each figure that run's median and range; the writer round-trips; a file missing, oversized or
malformed reads as None; and `bench --record-peers` is refused without `--peers llama.cpp`."""

import argparse
import json

import pytest

from specviz.measure import peer_recording
from specviz.measure.bench_report import Row, beside_llama_row
from specviz.measure.peer_recording import FIGURES, record_peers, recorded_peers
from tests.helpers import PEERS_RESULTS


def results() -> tuple[list[Row], dict]:
    data = json.loads(PEERS_RESULTS.read_text())
    return [Row(**r) for r in data["rows"]], data["env"]


def test_the_shipped_recording_holds_every_row_of_the_runs_table_at_its_medians():
    rows, env = results()
    shown = [r for r in rows if beside_llama_row(r)]
    shipped = recorded_peers()
    assert shipped is not None and len(shipped.rows) == len(shown) == 10
    assert {r.config for r in shipped.rows} == {"target-only", "specviz K=4", "specviz cost-aware K≤12",
                                                "llama.cpp target alone", "llama.cpp speculative n_max=4"}
    for mine, theirs in zip(shipped.rows, shown):
        assert (mine.prompt_type, mine.config, mine.runs) == (theirs.prompt_type, theirs.config, theirs.runs)
        for name, key in FIGURES.items():
            median = getattr(theirs, name)
            got = getattr(mine, name)
            if median is None:
                assert got is None, (mine.config, name)
            else:
                assert (got.median, [got.low, got.high]) == (median, theirs.spreads.get(key, [median, median]))
    llama = next(r for r in shipped.rows if (r.prompt_type, r.config) == ("code", "llama.cpp target alone"))
    assert f"{llama.tokens_per_s.median:.2f}" == "24.38" and f"{llama.speedup.median:.2f}" == "2.03"  # report.md's
    assert (shipped.recorded, shipped.wheel, shipped.threads, shipped.tokens) == (
        env["date"], env["peers"]["wheel"], env["threads"], env["max_new_tokens"])
    assert shipped.cpu_flags == env["cpu_flags"] and "AVX2" in shipped.cpu_build and "AMD EPYC" in shipped.machine
    assert peer_recording.RECORDED.stat().st_size <= peer_recording.MAX_BYTES


def test_the_shipped_file_is_what_the_writer_makes_of_that_run(tmp_path):
    """Byte for byte: the shipped file was written by record_peers from the fixture's rows, nothing edited by hand."""
    rows, env = results()
    path = tmp_path / "peers.json"
    record_peers(rows, env, recorded_peers().machine, path)
    assert path.read_bytes() == peer_recording.RECORDED.read_bytes()


def made_up_rows() -> list[Row]:
    """Two prompt kinds: specviz's target alone, the cost-aware rule (one turn, no spreads kept), llama.cpp's two
    runs, a sampled row and a transformers row (neither shown)."""
    rows = []
    for kind, base in (("code", 10.0), ("json", 8.0)):
        rows += [Row(kind, "target-only", "greedy", None, base, 1.0, spreads={"tps": [base - 1, base + 1]}, runs=3,
                     ttft_s=0.8, decode_tokens_per_s=base + 2),
                 Row(kind, "specviz cost-aware K≤12", "greedy", 3.0, base * 1.2, 1.21, alpha=0.9, runs=3),
                 Row(kind, "llama.cpp target alone", "greedy", None, 2 * base, 1.9, runs=3, ttft_s=0.6),
                 Row(kind, "llama.cpp speculative n_max=4", "greedy", None, base, 1.01, alpha=0.8, runs=3,
                     spreads={"alpha": [0.7, 0.85], "speedup": [0.9, 1.1]}),
                 Row(kind, "specviz K=4", "sampled", 4, base, 1.0),
                 Row(kind, "transformers assisted (default K)", "greedy", None, base, 0.7)]
    return rows


ENV = {"date": "2026-12-07", "cpu_flags": "avx2", "threads": 2, "max_new_tokens": 16, "draft": "d", "target": "t",
       "peers": {"peer": "llama.cpp", "wheel": "xllamacpp 1.0", "cpu_build": "AVX2 (the wheel's)", "n_max": 4}}


def test_the_writer_round_trips(tmp_path):
    path = tmp_path / "peers.json"
    written = record_peers(made_up_rows(), ENV, "a <b>machine</b>", path)
    back = recorded_peers(path)
    assert back == written and back.machine == "a <b>machine</b>" and back.pair == "d → t"
    assert [(r.prompt_type, r.config) for r in back.rows] == [
        (kind, config) for kind in ("code", "json") for config in ("target-only", "specviz cost-aware K≤12",
                                                                   "llama.cpp target alone",
                                                                   "llama.cpp speculative n_max=4")]
    spec = back.rows[3]
    assert (spec.alpha.median, spec.alpha.low, spec.alpha.high, spec.alpha.runs) == (0.8, 0.7, 0.85, 3)
    assert (spec.speedup.low, spec.speedup.high) == (0.9, 1.1) and spec.decode_tokens_per_s is None
    assert back.rows[0].tokens_per_s.low == 9.0 and back.rows[0].alpha is None  # no drafts, no acceptance


def test_a_run_without_llama_cpps_rows_is_not_recorded(tmp_path):
    path = tmp_path / "peers.json"
    specviz_only = [r for r in made_up_rows() if not r.config.startswith("llama.cpp")]
    for rows, env in ((specviz_only, ENV), (made_up_rows(), {**ENV, "peers": None})):
        with pytest.raises(ValueError, match="no llama.cpp rows to record"):
            record_peers(rows, env, "m", path)
    assert not path.exists()


def broken(data: dict) -> list:
    """Each a way the file can be wrong, as (what is wrong, the text written)."""
    row = data["rows"][0]

    def with_row(**change):
        return json.dumps({**data, "rows": [{**row, **change}, *data["rows"][1:]]})
    return [("not json", "{rows: ["), ("not an object", "[]"), ("no rows", json.dumps({**data, "rows": []})),
            ("no llama.cpp row", json.dumps({**data, "rows": [r for r in data["rows"]
                                                              if not r["config"].startswith("llama.cpp")]})),
            ("a figure of two", with_row(tokens_per_s=[1.0, 2.0])),
            ("a median outside its range", with_row(tokens_per_s=[3.0, 1.0, 2.0])),
            ("not a number", with_row(speedup=["1", 1, 1])), ("NaN", with_row(speedup=[float("nan")] * 3)),
            ("a required figure missing", with_row(tokens_per_s=None)), ("a count of 0", with_row(runs=0)),
            ("a count that is a switch", with_row(runs=True)), ("a config not text", with_row(config=4)),
            ("a machine not text", json.dumps({**data, "machine": ["x"]})),
            ("the date missing", json.dumps({k: v for k, v in data.items() if k != "recorded"})),
            ("oversized", json.dumps({**data, "pad": "x" * peer_recording.MAX_BYTES}))]


def test_a_file_missing_oversized_or_malformed_reads_as_none(tmp_path):
    path = tmp_path / "peers.json"
    record_peers(made_up_rows(), ENV, "m", path)
    data = json.loads(path.read_text())
    assert recorded_peers(tmp_path / "missing.json") is None
    for what, text in broken(data):
        path.write_text(text)
        assert recorded_peers(path) is None, what
    path.write_text(json.dumps(data))  # the control: the same file, whole, reads
    assert recorded_peers(path) is not None


def bench_flags(*args):
    from specviz.cli.flags import changed_flags, refuse_unneeded_bench_flags
    from specviz.measure.bench_flags import add_bench_args
    p = argparse.ArgumentParser()
    add_bench_args(p)
    a = p.parse_args(list(args))
    refuse_unneeded_bench_flags(a, changed_flags(add_bench_args, a))
    return a


def test_record_peers_without_peers_is_refused_with_what_it_needs():
    with pytest.raises(ValueError) as e:
        bench_flags("--record-peers")
    assert str(e.value) == ("--record-peers applies only with --peers llama.cpp (it records llama.cpp's rows beside "
                            "specviz's): set --peers to llama.cpp, or leave --record-peers out (it would do nothing)")
    assert bench_flags("--record-peers", "--peers", "llama.cpp").record_peers is True
    assert bench_flags("--peers", "llama.cpp").record_peers is False  # a run of the peers records nothing unasked

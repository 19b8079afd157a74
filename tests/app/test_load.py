"""Load: 16 sessions at once on tiny models (harness/load.py drives them, as it does for tools/load_test.py), and
memory over 30 generations.

The app is served in this process, so the test sees the server's side too: how many generations overlapped
(counted in the engine), its resident memory, its session states and its trace download folder.
"""

import gc
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"  # gradio_client must not look anything up on the hub

from gradio_client import Client  # noqa: E402

from specviz.app import serving
from specviz.app import trace_files as trace_io
from specviz.app import page as ui # noqa: E402
from specviz.engine import Engine, RunSettings  # noqa: E402
from harness.endpoints import generate  # noqa: E402
from harness.tiny_models import noisy_copy, tiny_model  # noqa: E402
from harness import load  # noqa: E402
from harness.browser import free_port  # noqa: E402

pytestmark = [pytest.mark.usefixtures("one_thread"),  # tiny models gain nothing from a second thread
              pytest.mark.slow]  # many sessions and many generations
SESSIONS = 16
SETTINGS = RunSettings(k=4, temperature=0.7, max_new_tokens=16)
NAVIGATION = ("previous_round", "next_round", "show_round")


@pytest.fixture(scope="module")
def engine(tokenizer):
    target = tiny_model(seed=2)
    return Engine(noisy_copy(target, 0.2), target, tokenizer, "tiny-draft", "tiny-target")


@pytest.fixture(scope="module")
def prompts():
    return [f"def f{i}(n):" for i in range(SESSIONS)]


@pytest.fixture(scope="module")
def expected(engine, prompts):
    """What each session's prompt and seed give run alone, on the engine directly."""
    return load.expected_tokens(engine, prompts, SETTINGS)


def test_navigation_never_queues_with_model_runs():
    demo = ui.build_demo(lambda preset, progress: None, {"tiny": "Tiny"}, "tiny", concurrency=3)
    fns = {fn.api_name: fn for fn in demo.fns.values()}
    for name in NAVIGATION:  # no limit and no group: a step starts at once, whatever else is running
        assert fns[name].concurrency_limit is None and fns[name].concurrency_id != serving.MODEL_RUNS, name
    model_runs = [fn for fn in demo.fns.values() if fn.concurrency_id == serving.MODEL_RUNS]
    assert {fn.api_name for fn in model_runs} >= {"generate", "baseline", "compare_drafters"}
    assert all(fn.concurrency_limit == 3 for fn in model_runs)  # the Lab's comparison too: one shared limit
    with pytest.raises(ValueError, match="concurrency"):
        ui.build_demo(lambda preset, progress: None, {"tiny": "Tiny"}, "tiny", concurrency=0)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("concurrency", [serving.DEFAULT_CONCURRENCY, 2])
def test_sixteen_sessions_at_once(engine, prompts, expected, concurrency):
    """16 clients press Generate at once (own prompt and seed), then step through all their rounds."""
    overlap = load.Overlap()
    overlap.watch(engine)
    demo, url = load.serve(lambda preset, progress: engine, {"tiny": "Tiny"}, "tiny", concurrency)
    try:
        report = load.run_load(url, overlap, prompts, SETTINGS, "tiny", expected, timeout=400)
    finally:
        demo.close()
        del engine.start  # the engine's own method again
    print(f"\nconcurrency {concurrency}: {report}\n{load.table(report)}")
    assert report["unfinished"] == 0 and report["errors"] == []
    assert report["mismatched"] == []  # every session got the trace its own prompt and seed give alone
    assert report["runs"] == SESSIONS and report["most_at_once"] == concurrency  # the queue held to the setting
    # Steps were served while generations ran, and none waited for them. (Put the steps in the model's queue
    # and none is served during a run, and each waits for every run ahead of it: several, at the median.)
    assert report["steps"] >= SESSIONS and report["steps_during_generation"] >= SESSIONS
    assert report["busy_step_p95"] < report["gen_p50"] / 2


def rss_bytes() -> int:
    """This process's resident memory, from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


@pytest.mark.timeout(600)
def test_memory_stays_flat_over_20_generations(engine, monkeypatch):
    """20 generations, each by a new session that then leaves: resident memory grows by under 5 % after the
    first, and what the server keeps per session is bounded (session states, trace download files)."""
    monkeypatch.setattr(trace_io, "KEEP_DOWNLOADS", 4)  # small bounds, so that 20 runs pass them 5 times over
    kwargs = {**serving.launch_kwargs(), "state_session_capacity": 4}
    assert serving.launch_kwargs()["state_session_capacity"] == serving.SESSIONS_KEPT
    demo = ui.build_demo(lambda preset, progress: engine, {"tiny": "Tiny"}, "tiny")
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                            quiet=True, **kwargs)
    downloads = Path(trace_io._DOWNLOADS.name)
    rss = []
    client = Client(url, verbose=False, download_files=False)
    try:
        for i in range(20):
            client.reset_session()  # a new session; the last one's heartbeat ends, as when a tab is closed
            final = generate(client, f"def g{i}(n):", seed=i)
            assert "Done" in final["status"] and f"def g{i}(n):" in final["stage"]
            gc.collect()
            rss.append(rss_bytes())
        sessions = len(demo.state_holder.session_data)
        files = list(downloads.glob("*/specviz-trace.json"))
        folders = list(downloads.iterdir())
    finally:
        client.close()
        demo.close()
    growth = (rss[-1] - rss[0]) / rss[0]
    print(f"\nRSS after generation 1: {rss[0] / 2**20:.0f} MiB, after 20: {rss[-1] / 2**20:.0f} MiB "
          f"({growth:+.1%}); peak {max(rss) / 2**20:.0f} MiB; sessions kept {sessions}, trace files {len(files)}")
    assert growth < 0.05
    assert sessions <= 4  # the least recently used sessions were dropped
    assert len(files) <= 4 and len(folders) == len(files)  # the download folder holds the newest few


def test_concurrency_comes_from_the_flag_or_the_environment(monkeypatch):
    import app

    assert app.parse_args([]).concurrency == serving.DEFAULT_CONCURRENCY == 1
    assert app.parse_args(["--concurrency", "2"]).concurrency == 2
    monkeypatch.setenv("SPECVIZ_CONCURRENCY", "3")
    assert app.parse_args([]).concurrency == 3
    with pytest.raises(SystemExit):
        app.parse_args(["--concurrency", "0"])

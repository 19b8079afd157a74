"""measure/recorded_costs.py and the Costs tab before a live measurement: the shipped recording of the packaged
pair is drawn, marked as recorded (its date, machine and dtype), and the tab's text names no repository path."""

import dataclasses
import json
import re

import pytest

from specviz.measure import cost_charts, pass_timing, recorded_costs

PATHS = re.compile(r"docs/|assets/|specviz/|tests/|tools/|\.md\b|\.json\b|\.py\b")  # what a repository path looks like


@pytest.fixture
def small_grid(monkeypatch):
    real = pass_timing.measure_costs  # the tiny pair on a small grid: seconds
    monkeypatch.setattr(pass_timing, "measure_costs", lambda engine, progress=None: real(
        engine, context=16, tokens=(1, 2, 3, 5, 8), batches=(1, 2), repeats=2, progress=progress))


def test_a_recording_is_written_marked_and_read_back(engine, small_grid, tmp_path):
    path = tmp_path / "costs" / "packaged.json"
    written = recorded_costs.record_costs(engine, path)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d on .+ cores .+", written.recorded) and "the recording of" in written.source
    back = recorded_costs.recorded_costs(path)
    assert back is not None and json.loads(json.dumps(dataclasses.asdict(back))) == json.loads(path.read_text())
    assert back.target_s == written.target_s and back.extreme(True).target_s  # its spread reads as a live one's
    said = cost_charts.readout(back, 0.8, 4)
    assert f"A recording made {written.recorded}" in said and "Measured on" not in said
    assert f"recorded {written.recorded.split(' ')[0]} (cpu)" in cost_charts.ratio_figure(back).layout.title.text


@pytest.mark.parametrize("spoil", [
    lambda obj: obj.update(target_s="fast"),  # a wrong type
    lambda obj: obj.update(recorded=""),  # a live measurement is not a recording
    lambda obj: obj.update(target_s=[0.0] * len(obj["target_s"])),  # a time of zero
    lambda obj: obj.pop("tokens"),  # a field missing
])
def test_a_spoilt_recording_is_not_drawn(engine, small_grid, tmp_path, spoil):
    path = tmp_path / "packaged.json"
    recorded_costs.record_costs(engine, path)
    obj = json.loads(path.read_text())
    spoil(obj)
    path.write_text(json.dumps(obj))
    assert recorded_costs.recorded_costs(path) is None
    assert recorded_costs.recorded_costs(tmp_path / "missing.json") is None
    path.write_text("{" * 10)
    assert recorded_costs.recorded_costs(path) is None


def test_the_shipped_recording_is_the_packaged_pairs_and_is_drawn_first():
    pytest.importorskip("gradio")
    from specviz.app import costs_tab

    shipped = recorded_costs.recorded_costs()
    assert shipped is not None and shipped.target == "Qwen2.5-Coder-1.5B-Instruct" and shipped.repeats >= 3
    assert recorded_costs.RECORDED.stat().st_size <= recorded_costs.MAX_BYTES
    status = costs_tab.first_status(shipped)
    assert f"made {shipped.recorded}" in status and shipped.dtype in status and "avx" in shipped.recorded
    readout, ratio, batch = costs_tab.show_costs(shipped, 0.8, 4)
    assert "A recording made" in readout and ratio.data and batch.data
    for text in (status, costs_tab.EXPLAIN, costs_tab.NO_GPU, costs_tab.first_status(None), readout):
        assert not PATHS.search(text), text


def test_a_recording_says_how_busy_the_machine_was_meanwhile():
    """Other work only: this process's own CPU time is not counted (the load average would count it)."""
    assert recorded_costs._load_words(None) == ""
    assert recorded_costs._load_words(0.04) == ", nothing else running (other work 0.04 cores)"
    busy = recorded_costs._load_words(recorded_costs.BUSY_CORES + 1.25)
    assert busy == ", other work keeping 1.5 cores busy meanwhile (it slows every pass)"
    # 3 s of the machine's CPU over 2 s of wall clock, 2 s of them this process's: 0.5 cores of other work
    assert recorded_costs._other_work((100.0, 10.0, 0.0), (103.0, 12.0, 2.0)) == 0.5
    assert recorded_costs._other_work((100.0, 10.0, 0.0), (102.0, 12.0, 2.0)) == 0.0  # all of it its own
    assert recorded_costs._other_work(None, (1.0, 1.0, 1.0)) is None
    now = recorded_costs._cpu_seconds()
    assert now is not None and all(v >= 0 for v in now)  # this machine has /proc/stat


def test_the_batch_prediction_prices_the_latest_runs_own_drafter_or_says_whose_c():
    """After Code, Medusa heads (its own c 0.026), the tab took that run's α and K and priced them with the draft
    model's c (0.30), saying "does not pay even at batch 1" of a run that paid 1.13× (issue 64, item 6). The tab now
    takes the run's drafter with its own c (its timings, against its baseline's step) and prices with it; with no
    baseline the run's c is not known and the readout says whose c the prediction is; a run of the draft model
    changes nothing."""
    pytest.importorskip("gradio")
    from specviz.app import costs_tab
    from specviz.lecture.examples import load_example
    from specviz.measure.measured import measured_point
    from specviz.view.style import significant

    shipped, heads = recorded_costs.recorded_costs(), load_example("code-heads")
    alpha, k, drafter = costs_tab.from_trace(heads)
    assert drafter.name == heads.draft_model and drafter.c == measured_point(heads).steady.c < shipped.c / 5
    readout, _, batch = costs_tab.show_costs(shipped, alpha, k, drafter)
    priced = shipped.drafting_with(drafter.name, drafter.c)
    assert priced.c == pytest.approx(drafter.c) and priced.target_s == shipped.target_s
    at_one = pass_timing.speedup_at_batch(priced, alpha, k, 1)
    assert f"costs c = {significant(drafter.c, 2)} of one" in readout and f"<b>{at_one:.2f}×</b>" in readout
    # its own, cheaper c predicts more than the draft model's did (the mix that said a run paying 1.13x lost at batch 1)
    assert at_one > pass_timing.speedup_at_batch(shipped, alpha, k, 1)
    assert ("does not pay even at batch 1" in readout) == (at_one < 1) and "Whose c" not in readout
    assert any(line.name == f"α = {alpha:.2f}, K = {k}, c = {significant(drafter.c, 2)}" for line in batch.data)
    _, _, unknown = costs_tab.from_trace(dataclasses.replace(heads, baseline=None))
    assert unknown.c is None
    said = costs_tab.show_costs(shipped, alpha, k, unknown)[0]
    assert "Whose c:" in said and f"costs c = {significant(shipped.c, 2)} of one" in said
    code = load_example("code")
    assert costs_tab.from_trace(code)[2] is None  # the draft model: the measurement's own c
    assert f"a draft step of {shipped.draft} costs" in costs_tab.show_costs(shipped, 0.8, 4, None)[0]

"""app.py: the first pair starts loading with the server, and a failed load leaves the app serving."""

import app


def test_the_first_pair_loads_in_the_background():
    calls = []
    app.load_in_background(lambda preset, progress: calls.append((preset, progress)), "tiny").join(timeout=10)
    assert calls == [("tiny", None)]


def test_a_failed_background_load_is_reported_not_raised(capsys):
    def fail(preset, progress):
        raise ValueError(f"cannot reach the hub for {preset}")

    thread = app.load_in_background(fail, "qwen2.5-0.5b-7b")
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert "cannot reach the hub for qwen2.5-0.5b-7b" in capsys.readouterr().out


def test_on_zerogpu_the_pair_loads_in_the_main_thread_and_is_the_only_one_offered(monkeypatch, capsys):
    """ZeroGPU's CUDA stand-in works in the main thread only: a load in another thread could not reach the GPU."""
    import threading

    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert app.on_zerogpu()
    calls = []
    args = app.parse_args(["--preset", "smollm2-135m-1.7b"])

    def loader(preset, progress):
        calls.append((preset, threading.current_thread()))

    app.load_for_zerogpu(loader, args)
    assert calls == [("smollm2-135m-1.7b", threading.main_thread())]
    assert loader.measure_at_load is False  # no GPU in the main process to time: the first run measures in its call
    assert args.presets == ["smollm2-135m-1.7b"]
    assert "offers only the pair loaded at start" in capsys.readouterr().out
    monkeypatch.setenv("SPACES_ZERO_GPU", "false")
    assert not app.on_zerogpu()


def test_the_runs_in_flight_are_counted_across_sessions():
    """What the cost-aware rule prices drafts at: every Generate going now, whatever its session."""
    from specviz.app.serving import Runs

    runs = Runs()
    with runs.running("a"):
        with runs.running(None):
            assert runs.in_flight() == 2
        assert runs.in_flight() == 1
    assert runs.in_flight() == 0


def test_the_model_line_says_which_type_is_the_activations_and_which_the_weights():
    """Issue 64, item 10: "recorded on cpu · float32 · gguf-int4 kernels" did not say whose type float32 was: the
    activations' are float32, the weights' what the path multiplies (models/kernels.py's row for it)."""
    from specviz.app.actions import trace_info
    from specviz.lecture.examples import load_example

    line = trace_info(load_example("code"))
    assert ("recorded on cpu · activations float32 · weights 4-bit where the GGUF file holds Q4_K, else float16 "
            "(gguf-int4 kernels) · draft") in line, line

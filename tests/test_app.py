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

"""The ZeroGPU contract, checked on CPU with a stand-in `spaces` module.

On ZeroGPU each call of a `@spaces.GPU` function is pickled to a worker process (forked from the app) and what
it returns or yields is pickled back (spaces 0.51, zero/wrappers.py). The stand-in does the same round trip in
process: it records every decorated function with its duration, pickles the arguments and every result, and
fails the call when anything crossing is unpicklable or holds a tensor (on ZeroGPU a CUDA tensor cannot cross,
and a CPU one means weights or logits are being shipped instead of plain data). Negative controls prove the
checker fails on a tensor whose device is cuda, a lock, a lambda and a generator.
"""

from __future__ import annotations

import importlib
import io
import pickle
import sys
import threading
import types
from dataclasses import fields

import pytest
import torch

from specviz.measure import costs
from specviz.engine import Engine, RunSettings
from tests.helpers import generate_settings

# The app's modules, each with the name the tests reach it by (`zero.<name>`: the names they had before the folders).
APP_MODULES = {"specviz.app.serving": "serving", "specviz.app.actions": "actions", "specviz.app.lab_tab": "lab_ui",
               "specviz.app.costs_tab": "costs_ui", "specviz.app.page": "ui"}
MAX_DURATION_S = 300  # the most ZeroGPU grants a signed-in user per call (hub discussions; it is not documented)


class CrossingError(AssertionError):
    pass


class _Checker(pickle.Pickler):
    """Pickles like the worker queue does, and looks at every object on the way (persistent_id sees each)."""

    def persistent_id(self, obj):
        if isinstance(obj, torch.Tensor):
            raise CrossingError(f"a tensor on {obj.device.type} ({tuple(obj.shape)}) would cross the GPU boundary")
        if isinstance(obj, torch.nn.Module):
            raise CrossingError(f"a model ({type(obj).__name__}) would cross the GPU boundary")
        return None


def cross(value, what: str):
    """value as the other side of the boundary receives it (a pickled copy); CrossingError when it cannot go."""
    buffer = io.BytesIO()
    try:
        _Checker(buffer).dump(value)
    except CrossingError:
        raise
    except Exception as e:  # PicklingError, TypeError ("cannot pickle '_thread.lock'"), AttributeError (lambdas)
        raise CrossingError(f"{what} cannot be pickled: {type(e).__name__}: {e}") from None
    return pickle.loads(buffer.getvalue())


class FakeSpaces(types.ModuleType):
    """`spaces` as ZeroGPU has it, minus the GPU: GPU(fn) or GPU(duration=...)(fn), recording each call."""

    def __init__(self):
        super().__init__("spaces")
        self.decorated: dict[str, object] = {}  # function name -> its duration (a number or a callable)
        self.calls: list[tuple[str, float]] = []  # (function name, the duration asked for that call)

    def GPU(self, task=None, *, duration=None):
        if task is None:
            return lambda fn: self._wrap(fn, duration)
        return self._wrap(task, duration)

    def _wrap(self, fn, duration):
        import inspect

        self.decorated[fn.__name__] = duration

        def asked(args, kwargs):
            seconds = duration(*args, **kwargs) if callable(duration) else duration
            self.calls.append((fn.__name__, 60 if seconds is None else seconds))  # spaces' default is 60 s

        if inspect.isgeneratorfunction(fn):
            def generator(*args, **kwargs):
                args, kwargs = cross((args, kwargs), f"the arguments of {fn.__name__}")
                asked(args, kwargs)
                for item in fn(*args, **kwargs):
                    yield cross(item, f"a value {fn.__name__} yields")
            return generator

        def regular(*args, **kwargs):
            args, kwargs = cross((args, kwargs), f"the arguments of {fn.__name__}")
            asked(args, kwargs)
            return cross(fn(*args, **kwargs), f"what {fn.__name__} returns")
        return regular


@pytest.fixture(scope="module")
def zero():
    """The app modules imported afresh with the stand-in `spaces`; the originals are put back afterwards."""
    import specviz.app

    saved = {name: sys.modules.pop(name) for name in APP_MODULES if name in sys.modules}
    fake = FakeSpaces()
    sys.modules["spaces"] = fake
    try:
        fresh = {short: importlib.import_module(name) for name, short in APP_MODULES.items()}
        yield types.SimpleNamespace(spaces=fake, **fresh)
    finally:
        del sys.modules["spaces"]
        for name in APP_MODULES:
            sys.modules.pop(name, None)
        for name, module in saved.items():
            sys.modules[name] = module
            setattr(specviz.app, name.rsplit(".", 1)[1], module)


@pytest.fixture(scope="module")
def loader(zero, tiny_pair, tokenizer):
    """The app's own EngineCache, over two tiny "presets" (one pair kept at a time, as in the app)."""
    draft, target = tiny_pair

    def load_pair(preset, progress=None):
        return types.SimpleNamespace(draft=draft, target=target, tokenizer=tokenizer, draft_name=f"{preset}-draft",
                                     target_name=f"{preset}-target", dtype="float32")

    return zero.serving.EngineCache(load_pair)


# --- the checker itself -------------------------------------------------------------------------------------

class _CudaLooking(torch.Tensor):
    """A CPU tensor that says it is on cuda (this machine has no GPU): what a model's output is on ZeroGPU."""

    @property
    def device(self):
        return torch.device("cuda")


@pytest.mark.parametrize("bad", ["cuda tensor", "cpu tensor", "model", "lock", "lambda", "generator"])
def test_negative_controls_the_checker_refuses_what_cannot_cross(bad):
    value = {"cuda tensor": lambda: torch.Tensor._make_subclass(_CudaLooking, torch.zeros(3)),
             "cpu tensor": lambda: torch.zeros(3),
             "model": lambda: torch.nn.Linear(2, 2),
             "lock": threading.Lock,
             "lambda": lambda: (lambda x: x),
             "generator": lambda: (i for i in range(3))}[bad]()
    with pytest.raises(CrossingError):
        cross({"nested": [value]}, bad)
    fake = FakeSpaces()
    with pytest.raises(CrossingError):
        fake.GPU(duration=5)(lambda: value)()  # the same value returned from a decorated call
    assert cross({"plain": [1, "a", RunSettings()]}, "plain data")["plain"][2] == RunSettings()


def test_every_model_call_is_decorated_with_a_duration(zero):
    s = zero.serving
    assert set(zero.spaces.decorated) == {"stream_traces", "run_baseline", "stream_comparison", "measure_pair_costs"}
    assert all(duration is not None for duration in zero.spaces.decorated.values())
    settings = RunSettings(max_new_tokens=512)  # the most the page allows
    assert s._run_duration(None, "", settings) == s.run_seconds(512) <= MAX_DURATION_S
    assert s.run_seconds(64) == 28  # the docstring's worked example
    default_compare = s._compare_duration(None, "", RunSettings(max_new_tokens=32), (1, 2, 4, 8))
    assert default_compare == s.run_seconds(32, runs=13) <= MAX_DURATION_S  # the Lab's defaults: 1 + 3 drafters x 4 K


# --- each call that runs a model, through the page's own handlers ---------------------------------------------

def _page_outputs(zero):
    import gradio as gr

    from specviz.app.round_view import RoundView

    with gr.Blocks():
        return zero.actions.RunOutputs(gr.State(), gr.HTML(), gr.HTML(), gr.DownloadButton(),
                                       RoundView(*(gr.HTML() for _ in fields(RoundView))), gr.Checkbox())


def test_streaming_generate_and_baseline_cross_as_plain_data(zero, loader):
    zero.spaces.calls.clear()
    out = _page_outputs(zero)
    actions = zero.actions.ModelActions(loader, ["tiny-a", "tiny-b"], out)
    *_, last = actions.generate("def fib(n):", "tiny-a", **generate_settings(temperature=0.0, max_new_tokens=12),
                                progress=_quiet)
    trace = last[out.trace]
    assert trace.rounds and trace.target_model == "tiny-a-target"
    timed = actions.baseline(trace, "tiny-a", progress=_quiet)
    assert timed[out.trace].baseline.output_token_ids == trace.output_token_ids  # greedy: the same tokens
    assert [name for name, _ in zero.spaces.calls] == ["stream_traces", "run_baseline"]
    assert [seconds for _, seconds in zero.spaces.calls] == [zero.serving.run_seconds(12)] * 2


def test_the_labs_comparison_crosses_as_plain_data(zero, loader):
    zero.spaces.calls.clear()
    frames = list(zero.lab_ui.compare_handler(loader)("def f(x):", [1, 2], 6, 0, "tiny-a", progress=_quiet))
    assert [len(table) for _, table, _ in frames] == [1, 2, 3, 4, 5, 6, 7]  # the baseline, then 3 drafters × 2 Ks
    assert zero.spaces.calls == [("stream_comparison", zero.serving.run_seconds(6, runs=7))]


def test_the_cost_measurement_crosses_as_plain_data(zero, loader, monkeypatch):
    real = costs.measure_costs
    monkeypatch.setattr(costs, "measure_costs", lambda e, progress=None: real(
        e, context=16, tokens=(1, 2, 5), batches=(1, 2), repeats=1, progress=progress))
    zero.spaces.calls.clear()
    seen = []
    profile, said = zero.costs_ui.measure_handler(loader, zero.serving.CostCache())(
        "tiny-a", False, progress=lambda fraction, desc="": seen.append((fraction, desc)))
    assert isinstance(profile, costs.CostProfile) and profile.target == "tiny-a-target", said
    assert seen and seen[-1] == (1.0, "measured")  # the steps came back over the boundary, as data
    assert zero.spaces.calls == [("measure_pair_costs", zero.serving.COSTS_S)]


def test_a_preset_switch_after_start_resolves_the_new_pair(zero, loader):
    """A switch loads the new pair outside any GPU call; the next call names it and finds it, the old is gone."""
    out = _page_outputs(zero)
    actions = zero.actions.ModelActions(loader, ["tiny-a", "tiny-b"], out)
    *_, first = actions.generate("def f", "tiny-a", **generate_settings(k=2, temperature=0.0, max_new_tokens=4),
                                   progress=_quiet)
    before = loader.loaded("tiny-a")
    zero.spaces.calls.clear()
    *_, second = actions.generate("def f", "tiny-b", **generate_settings(k=2, temperature=0.0, max_new_tokens=4),
                                   progress=_quiet)
    assert first[out.trace].target_model == "tiny-a-target" and second[out.trace].target_model == "tiny-b-target"
    assert loader.loaded("tiny-a") is None and loader.loaded("tiny-b") is not before  # one pair kept
    ref = zero.serving.engine_ref(loader, "tiny-b")
    assert pickle.loads(pickle.dumps(ref)).engine() is loader.loaded("tiny-b")
    assert len(pickle.dumps(ref)) < 300  # a name, not weights


def test_the_checker_catches_an_engine_passed_across(zero, loader):
    """What the code did before EngineRef: the Engine itself as an argument would ship its models."""
    decorated = FakeSpaces().GPU(duration=5)(lambda engine: None)
    with pytest.raises(CrossingError, match="model|tensor"):
        decorated(loader("tiny-a"))


def _quiet(*args, **kwargs):
    return None

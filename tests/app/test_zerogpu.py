"""The ZeroGPU contract, checked on CPU with a stand-in `spaces` module, and the stand-in checked against the real one.

On ZeroGPU each call of a `@spaces.GPU` function is pickled to a worker process (forked from the app) and what
it returns or yields is pickled back (spaces 0.51.3, zero/wrappers.py). The stand-in does the same round trip in
process: it records every decorated function with its duration, pickles the arguments and every result, and
fails the call when anything crossing is unpicklable or holds a tensor (on ZeroGPU a CUDA tensor cannot cross,
and a CPU one means weights or logits are being shipped instead of plain data). Negative controls prove the
checker fails on a tensor whose device is cuda, a lock, a lambda and a generator.

It also answers as ZeroGPU does when the visitor's quota is short or a worker fails (zero/client.py's `schedule`,
zero/wrappers.py): the same `gr.Error` titles and messages, set per test (`Quota`, `WorkerFault`). The real package
(pinned in requirements-test.txt) is the reference: its decorator's signature, its client's refusals for the same
answers from the scheduler, and the app built with it outside ZeroGPU, where its `GPU` is a no-op.
"""

from __future__ import annotations

import base64
import importlib
import inspect
import io
import json
import pickle
import sys
import threading
import types
from contextlib import closing, contextmanager
from dataclasses import dataclass, fields, replace
from datetime import timedelta
from pathlib import Path

import gradio as gr
import pytest
import spaces as real_spaces  # the real package, imported before any test puts the stand-in in its place
import torch
from gradio.queueing import Queue
from spaces.zero import api as real_api
from spaces.zero import client as real_client

from specviz.app import gpu_time
from specviz.app.pair_cache import EngineCache
from specviz.engine import Engine, RunSettings
from specviz.engine.repeats import PAGE_TURNS
from specviz.lab import compare
from specviz.measure import pass_timing
from specviz.app import errors
from harness.endpoints import generate_settings, text

# The app's modules, each with the name the tests reach it by (`zero.<name>`: the names they had before the folders).
APP_MODULES = {"specviz.app.serving": "serving", "specviz.app.actions": "actions", "specviz.app.lab_tab": "lab_ui",
               "specviz.app.costs_tab": "costs_ui", "specviz.app.page": "ui"}


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


# --- what ZeroGPU answers: the quota and the worker --------------------------------------------------------------

@dataclass(frozen=True)
class Quota:
    """What ZeroGPU's scheduler knows of the visitor when a call asks for `requested` seconds."""

    left_s: int = 10**6  # the visitor's quota left today
    retry_in: timedelta = timedelta(minutes=41, seconds=12)  # when the asked time is back
    auth: str | None = None  # None: not signed in; "regular": a free account; "pro"
    token: bool = True  # the call carries the visitor's X-IP-Token (the page's calls do: Gradio >= 5.16.1)
    max_s: int = gpu_time.MAX_CALL_S  # the most one call may ask
    pending: bool = False  # the visitor's credits are all held by calls still running

    def refusal(self, requested: int) -> gr.Error | None:
        """The error spaces 0.51.3 raises for this answer to a call from the page (zero/client.py, `schedule`),
        or None when the call may run."""
        if self.pending:
            return gr.Error("You have too many ZeroGPU credits allocated to running tasks. Try again once some of "
                            "those tasks have completed.", title=errors.PENDING_CREDITS)
        if requested > self.max_s:
            return gr.Error(f"The requested GPU duration ({requested}s) is larger than the maximum allowed",
                            title=errors.ILLEGAL_DURATION)
        if requested <= self.left_s:
            return None
        if not self.token:
            return gr.Error("Space app has reached its GPU limit. Try re-running outside of examples if it happened "
                            "after clicking one", title=errors.QUOTA_EXCEEDED)
        quota = {"regular": "free ZeroGPU", "pro": "Pro ZeroGPU"}.get(self.auth, "ZeroGPU")
        return gr.Error(f"You have exceeded your {quota} quota ({requested}s requested vs. {self.left_s}s left). "
                        f"Try again in {self.retry_in}. ", title=errors.QUOTA_EXCEEDED)


@dataclass(frozen=True)
class WorkerFault:
    """The GPU worker failing after `after` results: its process ending ("abort"), or the run raising the
    exception class `raises` (spaces passes on only its name, zero/wrappers.py)."""

    after: int = 0
    raises: str | None = None  # None: the worker process ended

    def error(self) -> gr.Error:
        return gr.Error(self.raises or errors.WORKER_ABORTED, title=errors.WORKER_ERROR)


class FakeSpaces(types.ModuleType):
    """`spaces` as ZeroGPU has it, minus the GPU: GPU(fn) or GPU(duration=..., size=...)(fn), recording each call,
    refusing it as `quota` says and failing it as `fault` says."""

    def __init__(self):
        super().__init__("spaces")
        self.decorated: dict[str, object] = {}  # function name -> its duration (a number or a callable)
        self.calls: list[tuple[str, float]] = []  # (function name, the duration asked for that call)
        self.quota, self.fault = Quota(), None

    def GPU(self, task=None, *, duration=None, size=None, **kwargs):
        if kwargs:  # the real one's type for them is EmptyKwargs: the app must pass none
            raise TypeError(f"spaces.GPU takes no keyword {sorted(kwargs)}")
        if not callable(task):  # as the real one reads @spaces.GPU(45) and @spaces.GPU("xlarge")
            size, duration = (task, duration) if isinstance(task, str) else (size, duration if task is None else task)
            return lambda fn: self._wrap(fn, duration, size)
        return self._wrap(task, duration, size)

    def _asked(self, name, duration, size, args, kwargs) -> None:
        """Record the call's duration and refuse it as ZeroGPU would (an xlarge GPU counts twice)."""
        seconds = duration(*args, **kwargs) if callable(duration) else duration
        seconds = 60 if seconds is None else seconds  # spaces' default is 60 s
        seconds = seconds.seconds if isinstance(seconds, timedelta) else seconds
        self.calls.append((name, seconds))
        if (refusal := self.quota.refusal(round(seconds) * (2 if size == "xlarge" else 1))) is not None:
            raise refusal

    def _run(self, results):
        """The task's results (a generator) as the worker sends them back: an exception of the task becomes the
        worker's error, named by its class (a gr.Error passes as it is)."""
        try:
            with closing(results):
                for n, item in enumerate(results):
                    if self.fault and n == self.fault.after:
                        raise self.fault.error()
                    yield item
        except gr.Error:
            raise
        except Exception as e:
            raise gr.Error(type(e).__name__, title=errors.WORKER_ERROR) from e
        if self.fault:  # it made fewer results than the fault waits for: it fails at the end
            raise self.fault.error()

    def _wrap(self, fn, duration, size):
        self.decorated[fn.__name__] = duration

        def called(*args, **kwargs):
            args, kwargs = cross((args, kwargs), f"the arguments of {fn.__name__}")
            self._asked(fn.__name__, duration, size, args, kwargs)
            return args, kwargs

        if inspect.isgeneratorfunction(fn):
            def generator(*args, **kwargs):
                args, kwargs = called(*args, **kwargs)
                for item in self._run(fn(*args, **kwargs)):
                    yield cross(item, f"a value {fn.__name__} yields")
            return generator

        def regular(*args, **kwargs):
            args, kwargs = called(*args, **kwargs)
            (value,) = self._run(_returned(fn, args, kwargs))
            return cross(value, f"what {fn.__name__} returns")
        return regular


def _returned(fn, args, kwargs):
    """A regular function's one result, as a generator: both kinds go through one worker loop."""
    yield fn(*args, **kwargs)


@contextmanager
def app_with(spaces_module):
    """The app modules imported afresh with `spaces_module` as `spaces`; the originals are put back afterwards."""
    import specviz.app

    saved = {name: sys.modules.pop(name) for name in APP_MODULES if name in sys.modules}
    saved_spaces = sys.modules.get("spaces")
    sys.modules["spaces"] = spaces_module
    try:
        yield types.SimpleNamespace(spaces=spaces_module, **{short: importlib.import_module(name)
                                                              for name, short in APP_MODULES.items()})
    finally:
        sys.modules.pop("spaces")
        if saved_spaces is not None:
            sys.modules["spaces"] = saved_spaces
        for name in APP_MODULES:
            sys.modules.pop(name, None)
        for name, module in saved.items():
            sys.modules[name] = module
            setattr(specviz.app, name.rsplit(".", 1)[1], module)


@pytest.fixture(scope="module")
def zero():
    """The app modules imported afresh with the stand-in `spaces`."""
    with app_with(FakeSpaces()) as app:
        yield app


@pytest.fixture
def spaces_answer(zero):
    """Each test sets the quota and the fault it needs; they are put back afterwards."""
    yield zero.spaces
    zero.spaces.quota, zero.spaces.fault = Quota(), None
    zero.spaces.calls.clear()


@pytest.fixture(scope="module")
def loader(zero, tiny_pair, tokenizer):
    """The app's own EngineCache, over two tiny "presets" (one pair kept at a time, as in the app)."""
    draft, target = tiny_pair

    def load_pair(preset, progress=None):
        return types.SimpleNamespace(draft=draft, target=target, tokenizer=tokenizer, draft_name=f"{preset}-draft",
                                     target_name=f"{preset}-target", dtype="float32")

    return EngineCache(load_pair)


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


def test_every_model_call_is_decorated_with_a_duration(zero, loader):
    s = zero.serving
    assert set(zero.spaces.decorated) == {"stream_traces", "run_baseline", "stream_comparison", "measure_pair_costs",
                                          "serve_live"}
    assert all(duration is not None for duration in zero.spaces.decorated.values())
    loader("tiny-a")  # a duration is asked once the pair is loaded, as in the page
    ref = s.engine_ref(loader, "tiny-a")
    settings = RunSettings(max_new_tokens=512)  # the most the page allows
    assert s._generate_duration(ref, "", settings) == gpu_time.generate_seconds(settings) == 81 <= gpu_time.MAX_CALL_S
    assert gpu_time.generate_seconds(RunSettings(max_new_tokens=64)) == 28  # the docstring's worked example
    runnable = compare.runnable(ref.engine())[0]  # what the Lab passes: untrained heads left out
    default_compare = s._compare_duration(ref, "", RunSettings(max_new_tokens=32), (1, 2, 4, 8), drafters=runnable)
    assert default_compare == 70  # the Lab's defaults: 1 + 3 drafters x 4 K = 13 runs of 32 tokens, 20 + 49.9 s


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
    *_, last = actions.generate("def fib(n):", "tiny-a", **generate_settings(temperature=0.0, max_new_tokens=12))
    trace = last[out.trace]
    assert trace.rounds and trace.target_model == "tiny-a-target"
    timed = actions.baseline(trace, "tiny-a", progress=_quiet)
    assert timed[out.trace].baseline.output_token_ids == trace.output_token_ids  # greedy: the same tokens
    assert [name for name, _ in zero.spaces.calls] == ["stream_traces", "run_baseline"]
    asked = gpu_time.generate_seconds(RunSettings(max_new_tokens=12))
    turns = gpu_time.baseline_seconds(RunSettings(max_new_tokens=12), None, PAGE_TURNS)
    assert turns == round(20 + PAGE_TURNS * 2 * 12 * 0.12)  # unmeasured: each turn reruns the run and the target alone
    assert [seconds for _, seconds in zero.spaces.calls] == [asked, turns]
    assert len(timed[out.trace].baseline.repeats.target) == PAGE_TURNS


def test_the_labs_comparison_crosses_as_plain_data(zero, loader):
    zero.spaces.calls.clear()
    frames = list(zero.lab_ui.compare_handler(loader)("def f(x):", [1, 2], 6, 0, "tiny-a", progress=_quiet))
    assert [len(table) for _, table, _ in frames] == [1, 2, 3, 4, 5, 6, 7]  # the baseline, then 3 drafters × 2 Ks
    plan = compare.plan((1, 2), compare.runnable(zero.serving.engine_ref(loader, "tiny-a").engine())[0])  # untrained heads left out, as the Lab does
    asked = gpu_time.comparison_seconds(RunSettings(max_new_tokens=6), plan)
    assert zero.spaces.calls == [("stream_comparison", asked)]


def test_the_cost_measurement_crosses_as_plain_data(zero, loader, monkeypatch):
    real = pass_timing.measure_costs
    monkeypatch.setattr(pass_timing, "measure_costs", lambda e, progress=None: real(
        e, context=16, tokens=(1, 2, 5), batches=(1, 2), repeats=1, progress=progress))
    zero.spaces.calls.clear()
    seen = []
    profile, said = zero.costs_ui.measure_handler(loader, zero.serving.CostCache())(
        "tiny-a", False, progress=lambda fraction, desc="": seen.append((fraction, desc)))
    assert isinstance(profile, pass_timing.CostProfile) and profile.target == "tiny-a-target", said
    assert seen and seen[-1] == (1.0, "measured")  # the steps came back over the boundary, as data
    assert zero.spaces.calls == [("measure_pair_costs", gpu_time.COSTS_S)]


def test_a_preset_switch_after_start_resolves_the_new_pair(zero, loader):
    """A switch loads the new pair outside any GPU call; the next call names it and finds it, the old is gone."""
    out = _page_outputs(zero)
    actions = zero.actions.ModelActions(loader, ["tiny-a", "tiny-b"], out)
    *_, first = actions.generate("def f", "tiny-a", **generate_settings(k=2, temperature=0.0, max_new_tokens=4))
    before = loader.loaded("tiny-a")
    zero.spaces.calls.clear()
    *_, second = actions.generate("def f", "tiny-b", **generate_settings(k=2, temperature=0.0, max_new_tokens=4))
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


# --- the quota and the worker's faults, through the page's own handlers -------------------------------------

def _actions(zero, loader):
    out = _page_outputs(zero)
    return zero.actions.ModelActions(loader, ["tiny-a", "tiny-b"], out), out


def _generate(actions, tokens: int, **settings):
    return list(actions.generate("def fib(n):", "tiny-a", **generate_settings(temperature=0.0, max_new_tokens=tokens,
                                                                             **settings)))


def test_a_short_quota_refuses_generate_in_plain_words_and_keeps_the_trace(zero, loader, spaces_answer):
    actions, out = _actions(zero, loader)
    shown = _generate(actions, 12)[-1][out.trace]  # the trace on the page before the quota runs short
    spaces_answer.quota = Quota(left_s=23)  # not signed in: ZeroGPU's message offers no tier
    asked = gpu_time.generate_seconds(RunSettings(max_new_tokens=64))
    (frame,) = _generate(actions, 64)
    said = text(frame[out.status])
    assert set(frame) == {out.status}  # every other output, the trace first, stays as it was
    assert "Generate did not run: ZeroGPU refused the run" in said
    assert f"it asks {asked} s of GPU time and 23 s of your daily quota are left" in said
    assert "back in 41 min 12 s" in said and "signing in to Hugging Face" in said
    assert all(hint in said for hint in ("Recorded examples", "Room", "docs/hosting.md", "stays as it was"))
    *_, last = _generate(actions, 2)  # a short run asks 20 s: it fits in what is left
    assert last[out.trace].rounds and shown.rounds


def test_a_signed_in_visitor_is_not_told_to_sign_in(zero, loader, spaces_answer):
    actions, out = _actions(zero, loader)
    spaces_answer.quota = Quota(left_s=5, auth="regular", retry_in=timedelta(hours=2, minutes=3))
    (frame,) = _generate(actions, 12)
    assert "back in 2 h 3 min" in text(frame[out.status]) and "signing in" not in text(frame[out.status])


def test_an_ask_over_the_maximum_says_what_asks_less(zero, loader, spaces_answer):
    actions, out = _actions(zero, loader)
    spaces_answer.quota = Quota(max_s=25)
    (frame,) = _generate(actions, 64)
    assert "it asks 28 s of GPU time, more than one call may ask; fewer new tokens" in text(frame[out.status])


def test_a_worker_that_ends_mid_run_leaves_the_rounds_so_far(zero, loader, spaces_answer):
    actions, out = _actions(zero, loader)
    spaces_answer.fault = WorkerFault(after=2)
    last = _generate(actions, 24, k=1)[-1]
    said = text(last[out.status])
    assert len(last[out.trace].rounds) == 2 and out.download in last  # viewable and downloadable
    assert "Generation stopped after round 2: the GPU worker stopped before the run finished" in said
    assert "The 2 rounds before it stay viewable" in said


def test_a_baseline_the_worker_fails_names_the_cause_and_keeps_the_trace(zero, loader, spaces_answer):
    actions, out = _actions(zero, loader)
    trace = _generate(actions, 6)[-1][out.trace]
    spaces_answer.fault = WorkerFault(raises="OutOfMemoryError")
    refused = actions.baseline(trace, "tiny-a", progress=_quiet)
    assert set(refused) == {out.status}
    assert "out of memory on the GPU (OutOfMemoryError); fewer new tokens" in text(refused[out.status])
    assert "stays as it was" in text(refused[out.status])


def test_the_labs_comparison_refused_or_cut_short_keeps_its_rows(zero, loader, spaces_answer):
    compare_drafters = zero.lab_ui.compare_handler(loader)
    spaces_answer.quota = Quota(left_s=10)
    (said, table, chart), = compare_drafters("def f(x):", [1, 2], 6, 0, "tiny-a", progress=_quiet)
    assert "the comparison did not run: ZeroGPU refused the run" in text(said) and "10 s of your daily" in text(said)
    assert isinstance(table, dict) and table.get("__type__") == "update"  # gr.skip(): the table on the page stays
    spaces_answer.quota, spaces_answer.fault = Quota(), WorkerFault(after=3)
    *frames, (said, table, chart) = compare_drafters("def f(x):", [1, 2], 6, 0, "tiny-a", progress=_quiet)
    assert len(frames) == 3 and "the comparison stopped after 3 runs: the GPU worker stopped" in text(said)


def test_the_cost_measurement_refused_says_why(zero, loader, spaces_answer):
    spaces_answer.quota = Quota(left_s=30, token=False)  # a call without the visitor's token: the Space's own limit
    profile, said = zero.costs_ui.measure_handler(loader, zero.serving.CostCache())("tiny-a", False, progress=_quiet)
    assert isinstance(profile, dict) and profile.get("__type__") == "update"  # gr.skip(): no profile replaced
    assert "Space app has reached its GPU limit" in text(said) and "Recorded examples" in text(said)


@pytest.mark.parametrize("message", [
    "Something ZeroGPU says that this code has never seen",
    "You have exceeded your free ZeroGPU quota (60s requested vs. 23s left). Try again in a while. ",
    "You have exceeded your ZeroGPU runs limit. "])
def test_a_message_this_code_cannot_read_is_shown_as_spaces_wrote_it(message):
    said = errors.message_of(gr.Error(message, title=errors.QUOTA_EXCEEDED))
    assert said.startswith(f"{errors.QUOTA_EXCEEDED}: {message.strip()}") and "Recorded examples" in said


# --- the GPU time each call asks for ----------------------------------------------------------------------------

SLOW_GPU = gpu_time.PairSpeed(target_tokens_per_s=10.0, draft_step_ratio=0.5)  # slower than any GPU of the docs


def test_a_short_run_asks_less_than_a_long_one_and_no_ask_passes_the_maximum():
    short, long = RunSettings(max_new_tokens=16), RunSettings(max_new_tokens=512)
    for speed in (None, SLOW_GPU):
        assert gpu_time.generate_seconds(short, speed) < gpu_time.generate_seconds(long, speed)
    biggest = RunSettings(max_new_tokens=512, k=16)  # the page's largest request, on a slow GPU
    assert gpu_time.generate_seconds(biggest, SLOW_GPU) == gpu_time.MAX_CALL_S
    every_k = compare.plan(compare.ALL_KS, layers=(7, 14))  # the Lab's largest comparison
    assert gpu_time.comparison_seconds(replace(long, max_new_tokens=128), every_k) == gpu_time.MAX_CALL_S


def test_a_measured_speed_makes_the_ask_follow_k_the_drafter_and_the_pair(zero, loader, monkeypatch,
                                                                          spaces_answer):
    monkeypatch.setitem(gpu_time.MEASURED, ("tiny-a", "cpu"), SLOW_GPU)
    seconds = {(drafter, k): gpu_time.generate_seconds(RunSettings(max_new_tokens=64, k=k, drafter=drafter),
                                                       SLOW_GPU)
               for drafter, k in [("model", 1), ("model", 8), ("lookup", 8), ("layers", 8)]}
    assert seconds["lookup", 8] < seconds["model", 1] < seconds["model", 8] < seconds["layers", 8]
    assert gpu_time.generate_seconds(RunSettings(max_new_tokens=64, k=4), SLOW_GPU) == 20 + round(1.5 * 64 * 3 / 10)
    actions, out = _actions(zero, loader)
    _generate(actions, 12, k=2)  # tiny-a is measured "on this GPU" (the cpu): its ask is the measured one
    assert spaces_answer.calls[-1] == ("stream_traces", 20 + round(1.5 * 12 * 2 / 10))
    list(actions.generate("def f", "tiny-b", **generate_settings(k=2, temperature=0.0, max_new_tokens=12)))
    assert spaces_answer.calls[-1] == ("stream_traces", gpu_time.generate_seconds(RunSettings(max_new_tokens=12)))


# --- the stand-in against the real package ----------------------------------------------------------------------

def test_the_stand_ins_gpu_takes_what_the_real_one_takes():
    spaces = real_spaces

    def shape(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert shape(spaces.GPU) == shape(FakeSpaces().GPU)  # task positional; duration, size keyword-only; **kwargs
    seconds = lambda prompt: 5  # noqa: E731  (a duration may be a callable of the call's arguments)
    for gpu in (spaces.GPU, FakeSpaces().GPU):
        forms = [gpu, gpu(duration=5), gpu(duration=timedelta(seconds=5)), gpu(duration=seconds),
                 gpu(size="large"), gpu(duration=5, size="xlarge")]
        assert all(form(_echo)("x") == "x" for form in forms)
    assert all(spaces.GPU(**kw)(_echo) is _echo for kw in ({}, {"duration": seconds}))  # off ZeroGPU: a no-op


def _real_refusal(monkeypatch, quota: Quota, requested: int) -> gr.Error:
    """What the real client raises when ZeroGPU's scheduler answers as `quota` says, to a call from the page."""
    api, client = real_api, real_client

    class Scheduler:
        def schedule(self, **_):
            approved = "pending-overquota-exceeded" if quota.pending else None
            wait = timedelta(seconds=-1) if requested > quota.max_s else quota.retry_in  # < 0: an illegal duration
            return api.QuotaInfos(left=quota.left_s, wait=wait), api.ScheduleMetadata(auth=quota.auth,
                                                                                      approve_result=approved)

    class Headers(dict):  # the client reads headers with .get and checks they have a __dict__
        pass

    monkeypatch.setattr(client, "api_client", Scheduler)
    monkeypatch.setattr(client.utils, "self_cgroup_device_path", lambda: "")
    token = "x." + base64.urlsafe_b64encode(json.dumps({}).encode()).decode().rstrip("=") + ".x"
    headers = Headers({"x-gradio-user": "app", **({"x-ip-token": token} if quota.token else {})})
    with pytest.raises(gr.Error) as raised:
        client.schedule(task_id=0, request=types.SimpleNamespace(headers=headers),
                        duration=timedelta(seconds=requested))
    return raised.value


NO_NVIDIA = "ignore:Error while reading infos from Nvidia driver FS"  # spaces looks for a GPU here, then takes H200's


@pytest.mark.filterwarnings(NO_NVIDIA)
@pytest.mark.parametrize("quota", [Quota(left_s=23), Quota(left_s=23, auth="regular"), Quota(left_s=0, auth="pro"),
                                   Quota(left_s=23, token=False), Quota(max_s=30), Quota(pending=True)],
                         ids=["visitor", "free account", "pro", "no token", "illegal duration", "pending credits"])
def test_the_stand_in_refuses_as_the_real_client_does(monkeypatch, quota):
    real, fake = _real_refusal(monkeypatch, quota, 60), quota.refusal(60)
    assert (real.title, real.message) == (fake.title, fake.message)


@pytest.mark.filterwarnings(NO_NVIDIA)
def test_the_page_reads_the_real_clients_messages_from_an_api_call_too(monkeypatch):
    """Called from the API (no x-gradio-user: app) spaces adds where to get more quota; the numbers still read."""
    monkeypatch.setattr(real_client, "_is_api_call", lambda request: True)
    real = _real_refusal(monkeypatch, Quota(left_s=23, auth="regular", retry_in=timedelta(days=1, seconds=5)), 60)
    assert "Subscribe to Hugging Face PRO" in real.message
    assert errors.parse_quota_refusal(real.message) == errors.QuotaRefusal(60, 23, 86405, signed_in=True)


def test_the_stand_ins_worker_errors_are_the_real_wrappers():
    source = (Path(real_spaces.__file__).parent / "zero" / "wrappers.py").read_text()  # read: importing loads torch
    assert f'raise error("{errors.WORKER_ERROR}", "{errors.WORKER_ABORTED}")' in source  # the worker process ended
    assert f'raise error("{errors.WORKER_ERROR}", res.error_cls)' in source  # the task raised: its class name


def test_the_app_builds_with_the_real_package_outside_zerogpu(monkeypatch, tiny_pair, tokenizer):
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    assert not real_spaces.config.Config.zero_gpu  # read once, when spaces was imported
    with app_with(real_spaces) as app:
        assert app.serving.gpu is real_spaces.GPU and app.serving.stream_traces.__name__ == "stream_traces"
        engine = Engine(*tiny_pair, tokenizer, "tiny-draft", "tiny-target")
        demo = app.ui.build_demo(lambda preset, progress: engine, {"tiny": "Tiny"}, "tiny")
        assert "/generate" in demo.get_api_info()["named_endpoints"]
    patched_on_zerogpu = (gr.Blocks.launch, Queue.set_progress, Queue.log_message)  # zero/gradio.py's patches
    assert all(fn.__module__.startswith("gradio.") for fn in patched_on_zerogpu)  # off ZeroGPU, spaces patched none


def _echo(value):
    return value

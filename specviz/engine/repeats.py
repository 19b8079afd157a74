"""A speedup measured as a paper publishes it: the speculative run and the target alone timed in turns (run, target,
run, target, …) after untimed warm-up runs of each, so that a slow minute on a shared machine slows both sides of a
turn alike; the trace keeps every turn's times (record/trace.py's Repeats), with the machine's load average just
before the first turn and just after the last, and the page prints the median of the turns' ratios with their range
(record/stats.py's `speedups`) and how steady each side's turns ran (`turn_rates`).

    trace = timed_run(engine, prompt, RunSettings(k=4), turns=5)   # the median turn's trace, its baseline, the turns
    baseline = timed_baseline(engine, prompt, settings, turns=3)   # the same for a run already made (Baseline)
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Callable

from specviz.models.machine import load_average, machine
from specviz.engine.request import RunSettings
from specviz.record.stats import turn_speedups
from specviz.record.trace import MAX_TURNS, PUBLISHED_TURNS, Baseline, Repeats, TimedRun, Trace

PAGE_TURNS = 3  # the page's Baseline button: fewer (each turn reruns both sides on a shared server); the page says
#                 how many beside the speedup
WARM_UP = 1  # untimed runs of each side first: the first passes of a prompt pay for kernel choice and allocation


def timed_run(engine, prompt: str, settings: RunSettings, turns: int = PUBLISHED_TURNS, warm_up: int = WARM_UP,
              say: Callable[[str], None] = lambda line: None) -> Trace:
    """`turns` turns of the speculative run and the target alone; -> the trace of the turn whose speedup is the
    median (the lower middle one for an even count), with that turn's target-alone run as its baseline and every
    turn's times in baseline.repeats."""
    traces, baselines, repeats = _turns(engine, prompt, settings, turns, warm_up, say)
    i = _median_turn(repeats)
    return dataclasses.replace(traces[i], baseline=dataclasses.replace(baselines[i], repeats=repeats))


def timed_baseline(engine, prompt: str, settings: RunSettings, turns: int = PAGE_TURNS, warm_up: int = 0,
                   say: Callable[[str], None] = lambda line: None) -> Baseline:
    """The target alone for a run already made, timed in `turns` turns with reruns of the speculative run: the
    median turn's target-alone run, with every turn's times. No warm-up by default: the run it follows warmed both."""
    _, baselines, repeats = _turns(engine, prompt, settings, turns, warm_up, say)
    return dataclasses.replace(baselines[_median_turn(repeats)], repeats=repeats)


def _turns(engine, prompt, settings, turns, warm_up, say) -> tuple[list[Trace], list[Baseline], Repeats]:
    if not 1 <= turns <= MAX_TURNS:
        raise ValueError(f"the repeats should be 1 to {MAX_TURNS} turns, got {turns}")
    for _ in range(warm_up):
        engine.run(prompt, settings)
        engine.baseline(prompt, settings)
    traces, baselines, load_before = [], [], load_average()
    for turn in range(turns):
        traces.append(engine.run(prompt, settings))
        baselines.append(engine.baseline(prompt, settings))
        say(f"turn {turn + 1} of {turns}: {traces[-1].summary.tokens_per_s:.2f} tok/s against "
            f"{baselines[-1].tokens_per_s:.2f} tok/s alone")
    repeats = Repeats([_timed(t) for t in traces], [_timed_alone(b) for b in baselines], warm_up,
                      machine(engine.device), load_before, load_average())
    return traces, baselines, repeats


def _timed(trace: Trace) -> TimedRun:
    """A turn's run: its tokens and clock, and the seconds of its target passes (each turn's own ceiling is priced
    from them, so no turn's speedup can pass it: its passes are part of its wall clock)."""
    s = trace.summary
    return TimedRun(s.n_new_tokens, s.total_time_s, s.first_token_time_s, pass_s=s.verify_time_s,
                    later_pass_s=sum(r.verify_time_s for r in trace.rounds[1:]))


def _timed_alone(b: Baseline) -> TimedRun:
    return TimedRun(len(b.output_token_ids), b.total_time_s, b.first_token_time_s)


def _median_turn(repeats: Repeats) -> int:
    """The turn whose whole-run speedup is the median (of an even count, the lower of the two middle ones)."""
    ratios = turn_speedups(repeats)
    middle = statistics.median_low(ratios)
    return ratios.index(middle)

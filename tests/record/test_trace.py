"""record/trace.py's answers about a whole trace: `Trace.greedy`, the one place that reads whether a run was greedy
(its temperature 0) or sampled, on tests/helpers.py's hand-made trace with the temperature set or left out."""

import pytest

from specviz.record.load import load_trace
from tests.helpers import make_trace


def with_temperature(value):
    trace = make_trace()
    trace.settings["temperature"] = value
    return trace


@pytest.mark.parametrize("temperature, greedy", [(0, True), (0.0, True), (0.7, False), (1.0, False),
                                                 (1e-6, False)])
def test_a_trace_is_greedy_exactly_when_its_temperature_is_0(temperature, greedy):
    assert with_temperature(temperature).greedy is greedy


def test_a_trace_without_a_temperature_counts_as_sampled():
    trace = make_trace()
    assert "temperature" not in trace.settings  # the hand-made trace names K only
    assert trace.greedy is False


@pytest.mark.parametrize("temperature, greedy", [(0.0, True), (0.8, False)])
def test_greedy_survives_the_json_round_trip(temperature, greedy):
    assert load_trace(with_temperature(temperature).to_json()).greedy is greedy

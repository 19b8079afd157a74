"""The shipped examples render exactly as they did when the golden files were taken (harness/golden.py renders
them, tools/golden_views.py writes them): the stage of every round, a quiz stage, the summary, the baseline report
and the tokens-per-pass chart. A refactor must leave these bytes alone; a change meant to alter the page
regenerates them and says so in its commit."""

import difflib
import gzip

import pytest

from specviz.lecture.examples import EXAMPLES
from harness.golden import golden_file, render_views


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_an_example_renders_as_its_golden_file(name):
    expected = gzip.decompress(golden_file(name).read_bytes()).decode("utf-8")
    actual = render_views(name)
    if actual != expected:
        diff = difflib.unified_diff(expected.splitlines(), actual.splitlines(), "golden", "now", lineterm="", n=0)
        pytest.fail(f"{name} renders differently from its golden file:\n" + "\n".join(list(diff)[:40])[:4000])

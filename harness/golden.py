"""The golden views: what the page shows for every shipped example (the stage of all rounds, a quiz stage, the
summary, the baseline report, the tokens-per-pass chart's data), rendered as one text, and the gzip file under
tests/fixtures/golden/ that holds it. tools/golden_views.py writes the files; tests/view/test_golden_views.py
renders them again and compares byte for byte.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "fixtures" / "golden"


def render_views(name: str) -> str:
    """What the page shows for a shipped example, as one text: each view under a header line."""
    from specviz.view.charts import tokens_per_pass
    from specviz.lecture.examples import load_example
    from specviz.record.quiz_data import QuizState
    from specviz.view.summary import baseline_report, summary_html
    from specviz.view.stage import stage_html

    trace = load_example(name)
    parts = {
        "stage": stage_html(trace, 1),
        "stage-quiz": stage_html(trace, 2, quiz=QuizState()),
        "summary": summary_html(trace),
        "baseline": baseline_report(trace),
        "tokens-per-pass": tokens_per_pass(trace, selected=2).to_json(),
    }
    return "".join(f"=== {key}\n{value}\n" for key, value in parts.items())


def golden_file(name: str) -> Path:
    return GOLDEN / f"{name}.views.gz"

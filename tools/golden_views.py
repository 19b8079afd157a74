"""The golden views: every shipped example rendered by the round view (the stage of all rounds, the summary, the
baseline report, the tokens-per-pass chart's data), written as one gzip file per example under
tests/fixtures/golden/. tests/view/test_golden_views.py renders them again and compares byte for byte, so a change
that should leave the page as it was (a refactor) is checked against what the page showed before.

Run it only when a change of what the page shows is intended, and say so in the commit:

    python -m tools.golden_views
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "fixtures" / "golden"


def render_views(name: str) -> str:
    """What the page shows for a shipped example, as one text: each view under a header line."""
    from specviz.view.charts import tokens_per_pass
    from specviz.lecture.examples import load_example
    from specviz.view.quiz import QuizState
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


def main() -> None:
    from specviz.lecture.examples import EXAMPLES

    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name in EXAMPLES:
        golden_file(name).write_bytes(gzip.compress(render_views(name).encode("utf-8"), mtime=0))
        print(golden_file(name).relative_to(ROOT))


if __name__ == "__main__":
    sys.exit(main())

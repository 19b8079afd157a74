"""Write the golden views: every shipped example rendered by the round view (harness/golden.py says what is in
them), as one gzip file per example under tests/fixtures/golden/. tests/view/test_golden_views.py renders them
again and compares byte for byte, so a change that should leave the page as it was (a refactor) is checked
against what the page showed before.

Run it only when a change of what the page shows is intended, and say so in the commit:

    python -m tools.golden_views
"""

from __future__ import annotations

import argparse
import gzip
import sys

from harness.golden import GOLDEN, ROOT, golden_file, render_views


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    from specviz.lecture.examples import EXAMPLES

    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name in EXAMPLES:
        golden_file(name).write_bytes(gzip.compress(render_views(name).encode("utf-8"), mtime=0))
        print(golden_file(name).relative_to(ROOT))


if __name__ == "__main__":
    sys.exit(main())

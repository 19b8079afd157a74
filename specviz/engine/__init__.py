"""The engine: model pairs (presets, the packaged offline pair), the draft-and-verify runs (chain and tree)
that record every round, the lean draft pass, the quantized draft, and the short measurement of a pair's passes
that the cost-aware stop rule prices drafts with.

Imports settings, drafters, record and algorithm; never the view, the Lab or the page. `Engine` and
`RunSettings` are importable from here (`from specviz.engine import Engine, RunSettings`).
"""

from specviz.engine.engine import Engine  # noqa: E402  the Python API's entry points
from specviz.engine.request import RunSettings  # noqa: E402

__all__ = ["Engine", "RunSettings"]

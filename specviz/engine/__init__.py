"""The engine: one request contract (request.py), the draft-and-verify runs (chain and tree) that record every
round, the lean draft pass, self-speculation, the trained drafters' models (Medusa heads, the EAGLE-style layer) and
the short measurement of a pair's passes that the cost-aware stop rule prices drafts with.

Imports settings, drafters, record, algorithm and models (a loaded pair, its kernels, the timer); never the view, the
Lab or the page. `Engine` and `RunSettings` are importable from here (`from specviz.engine import Engine,
RunSettings`); a pair is loaded by specviz.models.pairs.
"""

from specviz.engine.engine import Engine  # noqa: E402  the Python API's entry points
from specviz.engine.request import RunSettings  # noqa: E402

__all__ = ["Engine", "RunSettings"]

"""Fixtures of the app's tests: the tiny engine with a count of its forward passes, and the app served on it under the
real pairs' names."""

from __future__ import annotations

import pytest

from specviz.engine import Engine


class ModelCalls:
    """Counts forward passes of both tiny models (stepping through rounds must never add any)."""

    def __init__(self, *models):
        self.n = 0
        self.hooks = [m.register_forward_hook(self._count) for m in models]

    def _count(self, *_):
        self.n += 1

    def remove(self):
        for h in self.hooks:
            h.remove()


@pytest.fixture(scope="module")
def models(tiny_pair, tokenizer):
    """(engine on the tiny pair, ModelCalls counting its forward passes)."""
    draft, target = tiny_pair
    calls = ModelCalls(draft, target)
    yield Engine(draft, target, tokenizer, "tiny-draft", "tiny-target"), calls
    calls.remove()


@pytest.fixture(scope="module")
def named_pairs_url(models):
    """The app on the tiny pair under every real pair's name (pair_cache.preset_labels), served in this process: for a
    page that must hold the longest names the controls show (test_lecture_browser.py), or that reads what a real
    pair's target has on this machine, its trained drafters (test_controls_browser.py)."""
    from harness.browser import serve
    from specviz.app.pair_cache import preset_labels

    engine, _ = models
    labels = preset_labels()
    demo, url = serve(lambda preset, progress: engine, labels, next(iter(labels)))
    yield url
    demo.close()

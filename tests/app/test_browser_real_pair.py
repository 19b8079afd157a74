"""The app in a real browser on the packaged Qwen pair (marked `real`): loaded through the app's own model cache,
Generate, the baseline, a step back. Apart from tests/app/test_browser.py (tiny models) so that the suite's scheduler
(tests/conftest.py) runs it on the worker that holds the packaged pair, and that module on either.
"""

import gc
import time

import pytest

from harness.browser import AppPage, serve
from tests.helpers import BROWSER

pytestmark = BROWSER
pytest.importorskip("playwright.sync_api")


@pytest.fixture
def dialogs():
    return []


@pytest.mark.real
@pytest.mark.timeout(600)
def test_real_pair_generates_in_the_browser(browser, dialogs, capsys):
    """The packaged Qwen2.5-Coder 0.5B -> 1.5B pair, 5 new tokens (two rounds: the prefill, then K = 4 drafts), greedy,
    then the baseline (few tokens: on a CPU without native bfloat16 the pair runs in float32 on one thread of a busy
    machine, and the baseline times both sides in turns)."""
    from specviz.app.pair_cache import EngineCache

    started = time.perf_counter()
    cache = EngineCache()
    demo, url = serve(cache, {"qwen2.5-coder-0.5b-1.5b-offline": "Qwen2.5-Coder 0.5B → 1.5B"},
                      "qwen2.5-coder-0.5b-1.5b-offline")
    try:
        # waits until the pair is loaded (the info line names it); the real pair on one thread of a busy machine
        page = AppPage(browser, url, dialogs, timeout_ms=300_000)
        loaded_s = time.perf_counter() - started
        page.wait_text("#run-info", "Qwen2.5-Coder-1.5B-Instruct")
        page.set_number("temperature", 0)
        n = page.generate("Write a Python function that returns the n-th Fibonacci number.", max_new_tokens=5)
        assert n >= 2
        page.page.click("#baseline")
        page.wait_match("#summary", "vs target alone", "identical|differ")
        page.page.click("#prev-round")
        page.wait_round(n - 1)
        page.screenshot("specviz-real-pair.png")
        with capsys.disabled():
            print(f"\n[measure] real pair: page ready with models loaded {loaded_s:.1f} s after start")
    finally:
        demo.close()
        cache.clear()  # the pair's ~8 GB: the closed demo's handlers would keep it alive for the rest of the run
        gc.collect()


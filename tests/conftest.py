"""Shared fixtures: tiny random-weight models built from a config (harness/tiny_models.py), a character tokenizer,
traces run on them, the app served on them and a gradio_client Client on it, a headless browser, and one thread
for torch. tests/app/conftest.py adds what only the app's tests use.

Everything here is built in the test process; nothing is downloaded.
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no telemetry or version check from tests
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded; unknown ids fail fast

# Under pytest-xdist (pytest.ini runs two workers, one per core) each worker computes on one thread: two workers
# with two threads each on two cores spin-wait on each other (a tiny tree round ran ~40x slower, see one_thread).
# Each worker keeps Gradio's uploaded and cached files in a folder of its own, so two servers never write one file.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if WORKER:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("GRADIO_TEMP_DIR", os.path.join(tempfile.gettempdir(), f"specviz-tests-gradio-{WORKER}"))

import pytest
import torch

from specviz.engine import Engine, RunSettings
from specviz.record.load import load_trace
from harness.browser import launch_browser, serve
from harness.room_processes import REDIS_SERVER, redis_server
from harness.tiny_models import char_tokenizer, noisy_copy, tiny_model
from tests.helpers import FIXTURE


if WORKER:
    torch.set_num_threads(1)


# --- two workers (pytest.ini: -n 2) ----------------------------------------------------------------------------
# A module's tests run on one worker, so its module-scoped app, browser and traces are built once; the modules that
# test the packaged pair (and nothing else; llama.cpp on its GGUF files among them) share one worker, so the pair is
# never in memory twice (two float32 copies exceeded the machine's 24 GiB). xdist's own `--dist loadgroup` cannot do
# this under pytest 9.2 (it renames items through `_nodeid`, which pytest 9.2 no longer reads), so the scheduler below
# groups by module itself.
REAL_MODULES = ("tests/engine/test_real_pair.py", "tests/app/test_browser_real_pair.py",
                "tests/lecture/test_examples_real_pair.py", "tests/measure/test_peers_real.py")
# Modules of distribution tests (thousands of seeded runs each, 4-16 s a test, module fixtures of a second or less):
# their tests are handed out one by one and last, so the two workers end together (as whole modules of 26-62 s, the
# inner loop took 189 s; handed out so, 179 s: one run each, 2026-12-02).
SPREAD_MODULES = ("tests/engine/test_heads_run.py", "tests/engine/test_tree_run.py", "tests/engine/test_lossless.py",
                  "tests/engine/test_tree_pass.py", "tests/algorithm/test_tree.py")


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::")[0]
            return "the packaged pair" if module in REAL_MODULES else nodeid if module in SPREAD_MODULES else module

    return ByModule(config, log)


def pytest_collection_modifyitems(config, items):
    """The longest work first, so that neither worker is left alone with it at the end: the packaged pair's modules,
    then those that drive a browser or hold a slow test, then the rest, each module's tests together and in their
    order (both workers sort alike), then SPREAD_MODULES' tests, the small units that even out the end. A test of the
    packaged pair outside REAL_MODULES is refused: it would load a second copy."""
    stray = sorted({i.nodeid.split("::")[0] for i in items if i.get_closest_marker("real")} - set(REAL_MODULES))
    if stray:
        raise pytest.UsageError(f"tests marked real outside tests/conftest.py's REAL_MODULES: {', '.join(stray)}")
    weight = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        here = 0 if module in REAL_MODULES else 1 if (item.get_closest_marker("browser") or
                                                       item.get_closest_marker("slow")) else \
            3 if module in SPREAD_MODULES else 2
        weight[module] = min(weight.get(module, 3), here)
    items.sort(key=lambda item: weight[item.nodeid.split("::")[0]])


@pytest.fixture(scope="session")
def tokenizer():
    return char_tokenizer()


@pytest.fixture(scope="session")
def tiny_pair():
    """(draft, target): a 2-layer random target and a noisy copy of it as the draft."""
    target = tiny_model(seed=2, layers=2)
    return noisy_copy(target, 0.2), target


@pytest.fixture
def engine(tiny_pair, tokenizer):
    draft, target = tiny_pair
    return Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")


@pytest.fixture(scope="module")
def trace(tiny_pair, tokenizer):
    """A sampled run on tiny models with rejections, discards and bonus tokens (seed chosen for all fates)."""
    draft, target = tiny_pair
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    return engine.run("def fib(n):", RunSettings(k=4, temperature=1.0, seed=6, max_new_tokens=16), baseline=True)


@pytest.fixture(scope="module")
def lookup_trace(tiny_pair, tokenizer):
    """A sampled prompt-lookup run on tiny models: copied drafts accepted, rejected and discarded, bonus tokens,
    and rounds after the first that draft nothing because the last token has no earlier match."""
    draft, target = tiny_pair
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    return engine.run("def fib(n):", RunSettings(k=4, temperature=1.0, seed=0, max_new_tokens=24, drafter="lookup"))


@pytest.fixture(scope="module")
def recorded():
    """tests/fixtures/qwen_coder_fib.json: a run of the packaged pair (K=4, temperature 0.7, seed 1, 24 tokens)."""
    return load_trace(FIXTURE.read_bytes())


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models gain nothing from threads, and on a shared 2-core machine a second thread's spin-waits made a
    tree round ~40x slower (1.3 s against 34 ms, measured). A module asks for it with
    `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def url(tiny_pair, tokenizer):
    """The app (`ui.build_demo`, with the theme, CSS and keys it is served with) on the tiny pair, one preset
    "tiny", served in this process on a free loopback port; one server for the whole run (it keeps nothing between
    tests but their sessions, and `client` gives each test a session of its own).

    A module whose tests need another app overrides `url` with a fixture of its own (tests/app/test_page.py: a pair
    that fails to load too; test_faults.py: pairs that fail or are slow; test_lecture_browser.py: the real pairs'
    names); `client` and `browser` pages there then reach that app."""
    draft, target = tiny_pair
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    demo, url = serve(lambda preset, progress: engine, {"tiny": "Tiny random pair"}, "tiny")
    yield url
    demo.close()


@pytest.fixture(scope="session")
def redis_url():
    """A real Redis on a free loopback port, one for the run (a worker's), saving nothing: the rooms' shared store
    (issue 63). Each test keeps its rooms under a prefix of its own. Skipped where redis-server is not installed."""
    if not os.path.exists(REDIS_SERVER):
        pytest.skip(f"{REDIS_SERVER} is not installed (Debian: apt-get install -y redis-server; .ci/run does)")
    with redis_server() as url:
        yield url


@pytest.fixture(scope="module")
def module_client(url, tmp_path_factory):
    """One gradio_client Client on `url` for a module: building one reads the app's config and API over HTTP
    (0.12 s, and a heartbeat thread that was never stopped), which hundreds of tests did each."""
    from gradio_client import Client

    client = Client(url, verbose=False, download_files=str(tmp_path_factory.mktemp("downloads")))
    yield client
    client.close()


@pytest.fixture
def client(module_client, tmp_path):
    """A gradio_client Client on `url`, for one test: a session of its own (a fresh session hash: no trace state
    from the test before), files the app offers land in tmp_path. Call /generate through it with
    harness.endpoints.generate."""
    module_client.reset_session()
    module_client.download_files = module_client.output_dir = str(tmp_path)
    return module_client


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for a module's tests. Per module, not per session: a test that starts Playwright
    itself (test_faults, test_examples_browser) cannot while another sync_playwright() runs in the thread."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = launch_browser(pw)
        yield browser
        browser.close()

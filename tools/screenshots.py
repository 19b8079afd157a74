"""What the README's screenshot scripts share (screenshot_readme, screenshot_lecture, screenshot_room,
screenshot_presenter): the app served on tiny random-weight models with headless Chromium open on it, and a PNG made
small.

Opening a recorded trace needs no model, so the page is served with a tiny pair (never run here) that loads at
once, as the browser tests serve it (harness/browser.py).
"""
import os
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"  # the README's and the docs' pictures (not served: assets/ is what the page serves)


def tiny_engine():
    """An engine the page can load at once; opening a recorded trace never runs it."""
    from harness.tiny_models import char_tokenizer, noisy_copy, tiny_model
    from specviz.engine import Engine

    target = tiny_model(seed=2)
    return Engine(noisy_copy(target, 0.2), target, char_tokenizer(), "tiny-draft", "tiny-target")


@contextmanager
def app_in_browser(real_names: bool = False):
    """The app served on the tiny pair in this process and a headless Chromium -> (browser, url); both closed on
    leaving. `real_names`: the tiny pair under every real pair's name, the default pair chosen, so that the pair's
    box reads as on a real host (as tests/app/test_lecture_browser.py serves it)."""
    from playwright.sync_api import sync_playwright

    from specviz.app.pair_cache import preset_labels
    from specviz.models.pairs import DEFAULT_PRESET
    from harness.browser import launch_browser, serve

    labels, preset = (preset_labels(), DEFAULT_PRESET) if real_names else ({"tiny": "Tiny random pair"}, "tiny")
    engine = tiny_engine()
    demo, url = serve(lambda preset, progress: engine, labels, preset)
    try:
        with sync_playwright() as pw:
            browser = launch_browser(pw)
            try:
                yield browser, url
            finally:
                browser.close()
    finally:
        demo.close()


def quantize(out: Path) -> None:
    """Rewrite the PNG at `out` in 256 colours, to keep it small (a page is mostly flat colours)."""
    from PIL import Image

    Image.open(out).convert("RGB").quantize(256).save(out, optimize=True)

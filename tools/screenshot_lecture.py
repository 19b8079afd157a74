"""The README's lecture screenshot: the recorded Qwen trace (tests/fixtures/qwen_coder_fib.json) in lecture mode
at 1280x720, one round on one screen (a script, not collected by pytest).

    python -m tools.screenshot_lecture [--round 4] [--size 1280x720]   # -> assets/lecture-1280x720.png
    python -m tools.screenshot_lecture --size 1920x1080                 # the same round on a 1080p projector

Opening a recorded trace needs no model: the page is served with tiny random-weight models (never run here) so
that it starts in seconds. Headless Debian Chromium, as in the browser tests. The PNG is quantized to 256
colours to stay small.
"""
import argparse
import os
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent

TRACE = ROOT / "tests" / "fixtures" / "qwen_coder_fib.json"
SIZE = (1280, 720)


def tiny_engine():
    """An engine the page can load at once; opening a recorded trace never runs it."""
    from harness.tiny_models import char_tokenizer, noisy_copy, tiny_model
    from specviz.engine import Engine

    target = tiny_model(seed=2)
    return Engine(noisy_copy(target, 0.2), target, char_tokenizer(), "tiny-draft", "tiny-target")


def screenshot(round_number: int, out: Path, size: tuple[int, int] = SIZE) -> None:
    from PIL import Image
    from playwright.sync_api import sync_playwright

    from harness.browser import AppPage, launch_browser, serve

    engine = tiny_engine()
    demo, url = serve(lambda preset, progress: engine, {"tiny": "Tiny random pair"}, "tiny")
    try:
        with sync_playwright() as pw:
            browser = launch_browser(pw)
            page = AppPage(browser, url, viewport=size)
            page.page.click("#lecture-mode input[type=checkbox]")
            page.wait_js("() => !document.querySelector('#prompt')?.checkVisibility()")  # settings folded away
            page.page.set_input_files("#trace-upload input[type=file]", str(TRACE))
            page.wait_round(1)
            page.page.click("#stage .sv-round:not([hidden]) .sv-round-head")
            for number in range(2, round_number + 1):
                page.page.keyboard.press("ArrowRight")
                page.wait_round(number)
            page.page.evaluate("() => window.scrollTo(0, 0)")
            page.settle(500)
            page.page.screenshot(path=str(out))
            browser.close()
    finally:
        demo.close()
    Image.open(out).convert("RGB").quantize(256).save(out, optimize=True)
    print(f"{out}: {out.stat().st_size / 1024:.0f} KB, round {round_number} of {TRACE.name} at {size[0]}x{size[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--round", type=int, default=4, help="the round on screen (default 4: one accepted, a "
                        "rejection, two discarded, the replacement)")
    parser.add_argument("--size", default="1280x720", help="the window, WIDTHxHEIGHT")
    parser.add_argument("--out", type=Path, help="default assets/lecture-WIDTHxHEIGHT.png")
    args = parser.parse_args()
    size = tuple(int(n) for n in args.size.lower().split("x"))
    screenshot(args.round, args.out or ROOT / "assets" / f"lecture-{size[0]}x{size[1]}.png", size)


if __name__ == "__main__":
    main()

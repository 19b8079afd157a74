"""The README's lecture screenshot: the recorded Qwen trace (tests/fixtures/qwen_coder_fib.json) in lecture mode
at 1280x720, one round on one screen (a script, not collected by pytest).

    python -m tools.screenshot_lecture [--round 4] [--size 1280x720]   # -> docs/images/lecture-1280x720.png
    python -m tools.screenshot_lecture --size 1920x1080                 # the same round on a 1080p projector

Opening a recorded trace needs no model: the page is served with tiny random-weight models (never run here) so
that it starts in seconds. Headless Debian Chromium, as in the browser tests. The PNG is quantized to 256
colours to stay small.
"""
import argparse
from pathlib import Path

from tools.screenshots import IMAGES, ROOT, app_in_browser, quantize

TRACE = ROOT / "tests" / "fixtures" / "qwen_coder_fib.json"
SIZE = (1280, 720)


def screenshot(round_number: int, out: Path, size: tuple[int, int] = SIZE) -> None:
    from harness.browser import AppPage

    with app_in_browser() as (browser, url):
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
    quantize(out)
    print(f"{out}: {out.stat().st_size / 1024:.0f} KB, round {round_number} of {TRACE.name} at {size[0]}x{size[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--round", type=int, default=4, help="the round on screen (default 4: one accepted, a "
                        "rejection, two discarded, the replacement)")
    parser.add_argument("--size", default="1280x720", help="the window, WIDTHxHEIGHT")
    parser.add_argument("--out", type=Path, help="default docs/images/lecture-WIDTHxHEIGHT.png")
    args = parser.parse_args()
    size = tuple(int(n) for n in args.size.lower().split("x"))
    screenshot(args.round, args.out or IMAGES / f"lecture-{size[0]}x{size[1]}.png", size)


if __name__ == "__main__":
    main()

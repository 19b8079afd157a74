"""The README's presenter-view screenshots: a shipped example opened by its deep link in the presenter view (issue 32),
one round on one 16:9 screen (a script, not collected by pytest).

    python -m tools.screenshot_presenter                      # -> docs/images/presenter-1280x720.png, presenter-1920x1080.png
    python -m tools.screenshot_presenter --link "example=paris&round=3&step=2&quiz=1" --rail --out /tmp/p.png

Opening a recorded example needs no model: the page is served with tiny random-weight models (never run here), as
tools/screenshots.py serves it. The PNGs are quantized to 256 colours to stay small.
"""
import argparse
from pathlib import Path

from tools.screenshots import IMAGES, app_in_browser, quantize

LINK = "example=paris&round=4"  # one accepted, a rejection, three never examined, the replacement
SIZES = ((1280, 720), (1920, 1080))


def screenshot(link: str, outs: dict[tuple[int, int], Path], rail: bool = False) -> None:
    from harness.browser import Page

    with app_in_browser() as (browser, url):
        for size, out in outs.items():
            page = Page(browser, f"{url}?{link}&present=1", viewport=size)
            page.wait_text("#status", "from a link")
            page.page.wait_for_selector("#generate:not([disabled])")
            page.wait_js("() => document.body.classList.contains('sv-present')")
            if rail:
                page.page.keyboard.press("r")
                page.page.click(".sv-rail-open")
                page.wait_js("() => document.querySelector('#room-box .sv-class-head')")
            page.settle(500)
            page.page.screenshot(path=str(out))
            page.close()
            quantize(out)
            print(f"{out}: {out.stat().st_size / 1024:.0f} KB, ?{link} at {size[0]}x{size[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--link", default=LINK, help=f"the deep link's query (default {LINK})")
    parser.add_argument("--size", help="one window, WIDTHxHEIGHT (default: 1280x720 and 1920x1080)")
    parser.add_argument("--rail", action="store_true", help="open a room and show the rail")
    parser.add_argument("--out", type=Path, help="with --size: the file (default docs/images/presenter-WIDTHxHEIGHT.png)")
    args = parser.parse_args()
    sizes = [tuple(int(n) for n in args.size.lower().split("x"))] if args.size else SIZES
    outs = {s: (args.out if args.out and args.size else IMAGES / f"presenter-{s[0]}x{s[1]}.png")
            for s in sizes}
    screenshot(args.link, outs, args.rail)


if __name__ == "__main__":
    main()

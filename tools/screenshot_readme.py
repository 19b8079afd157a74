"""The README's main screenshot: a shipped recorded example opened from the page's gallery, at one round, 1280 px
wide, cropped from the page's header to the round's cards (a script, not collected by pytest).

    python -m tools.screenshot_readme [--example story] [--round 3] [--width 1280]   # -> docs/images/screenshot.png

The default, round 3 of "Story, sampled", shows every fate in one round: two drafts accepted by the draw (p < q
for both, so neither was certain), the third rejected, the fourth discarded, and a replacement drawn from the
residual. The page is served on tiny random-weight models (never run: opening a recording needs no model) under
the real pairs' names, and its controls are set to the example's prompt and settings, so that the picture reads
as the page does on a real host. Headless Debian Chromium, as in the browser tests; PNG quantized to 256 colours.
"""
import argparse
from pathlib import Path

from tools.screenshots import IMAGES, app_in_browser, quantize

OUT = IMAGES / "screenshot.png"
HEIGHT = 900  # the window's; the picture is cropped from the whole page, so it is taller
MARGIN = 8  # px kept below the cards (the next box starts 16 px below)
NUMBERS = {"k": "k", "temperature": "temperature", "top_p": "top-p", "top_k": "top-k", "seed": "seed",
           "max_new_tokens": "max-new-tokens"}  # a RunSettings field -> its control's elem_id


def show_settings(page, example) -> None:
    """Set the controls to the example's prompt and settings, so that they say how it was run (opening a recording
    leaves the controls as they were)."""
    from specviz.drafters import REGISTRY
    from specviz.settings.bounds import STOP_RULES

    settings = example.settings
    page.page.fill("#prompt textarea", example.prompt)
    for field, elem_id in NUMBERS.items():
        page.set_number(elem_id, getattr(settings, field))
    page.page.locator("#drafter").get_by_label(REGISTRY[settings.drafter].label, exact=True).check()
    page.page.locator("#adaptive input").set_checked(settings.adaptive)
    if settings.adaptive:  # the rule is moot without it: left as the page has it
        page.page.locator("#stop-rule").get_by_label(STOP_RULES[settings.stop_rule], exact=True).check()


def screenshot(example: str, round_number: int, out: Path = OUT, width: int = 1280) -> None:
    from specviz.lecture.examples import EXAMPLES
    from harness.browser import AppPage

    title = EXAMPLES[example].title
    with app_in_browser(real_names=True) as (browser, url):
        page = AppPage(browser, url, viewport=(width, HEIGHT))
        show_settings(page, EXAMPLES[example])
        page.page.locator("#recorded-examples button").nth(list(EXAMPLES).index(example)).click()
        page.wait_text("#status", f"Recorded example “{title}”")
        page.wait_round(1)
        for number in range(2, round_number + 1):
            page.page.click("#next-round")
            page.wait_round(number)
        page.page.evaluate("() => { document.activeElement.blur(); window.scrollTo(0, 0); }")
        page.settle(500)
        bottom = page.page.evaluate("() => document.querySelector('#stage .sv-round:not([hidden]) .sv-cards')"
                                    ".getBoundingClientRect().bottom + window.scrollY")
        clip = {"x": 0, "y": 0, "width": width, "height": round(bottom) + MARGIN}
        page.page.screenshot(path=str(out), full_page=True, clip=clip)
    quantize(out)
    print(f"{out}: {out.stat().st_size / 1024:.0f} KB, {width}x{clip['height']}, round {round_number} of “{title}”")


def main() -> None:
    from specviz.lecture.examples import EXAMPLES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--example", default="story", choices=list(EXAMPLES), help="the recorded example "
                        "(assets/examples/NAME.json; default story)")
    parser.add_argument("--round", type=int, default=3, help="the round on screen (default 3: two accepted, a "
                        "rejection, one discarded, the replacement)")
    parser.add_argument("--width", type=int, default=1280, help="the window's width in px (default 1280)")
    parser.add_argument("--out", type=Path, default=OUT, help="default docs/images/screenshot.png")
    args = parser.parse_args()
    screenshot(args.example, args.round, args.out, args.width)


if __name__ == "__main__":
    main()

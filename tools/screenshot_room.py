"""The README's room pictures: a lecturer's page in lecture mode at 1920×1080 with a room open (its QR code, code
and the class's answers to a revealed round), and a phone at 390×844 following it (a script, not collected by
pytest).

    python -m tools.screenshot_room [--round 3] [--out-dir assets]

The recorded example "Code, greedy" needs no model; the page is served with tiny random-weight models (never run
here). Three simulated students answer on their own pages (one of them the phone), then the lecturer reveals the
round. Headless Debian Chromium, as in the browser tests; PNGs quantized to 256 colours.
"""
import argparse
from pathlib import Path

from tools.screenshots import IMAGES, app_in_browser, quantize

PROJECTOR, PHONE = (1920, 1080), (390, 844)


def screenshot(round_number: int, out_dir: Path) -> list[Path]:
    from harness.room_pages import FollowerPage, open_room
    from harness.browser import AppPage

    outs = [out_dir / "room-projector-1920x1080.png", out_dir / "room-phone-390x844.png"]
    with app_in_browser() as (browser, url):
        lecturer = AppPage(browser, url, viewport=PROJECTOR)
        join = open_room(lecturer)
        lecturer.page.click("#lecture-mode input[type=checkbox]")
        lecturer.wait_js("() => !document.querySelector('#prompt')?.checkVisibility()")
        for number in range(2, round_number + 1):
            lecturer.page.click("#next-round")
            lecturer.wait_round(number)
        lecturer.page.check("#quiz-mode input")
        students = [FollowerPage(browser, join, viewport=PHONE if i == 0 else (1024, 768)) for i in range(3)]
        section = f'#stage .sv-round[data-round="{round_number}"]'
        accepted = lecturer.page.evaluate(f"() => document.querySelector('{section}').dataset.accepted")
        for student, guess in zip(students, [accepted, accepted, "1" if accepted != "1" else "2"]):
            student.wait_js("() => document.body.classList.contains('sv-quiz')")
            student.page.click(f'{section} .sv-guess[data-guess="{guess}"]')
        lecturer.wait_text("#sv-class-lead", f"3 answered round {round_number}")
        steps = int(lecturer.page.evaluate(f"() => document.querySelector('{section}').dataset.steps"))
        for _ in range(steps):
            lecturer.page.click(f"{section} .sv-reveal")
        lecturer.wait_text("#sv-class-lead", f"Round {round_number}: 3 answers")
        students[0].wait_text("#sv-class", f"Round {round_number}: 3 answers")
        lecturer.page.evaluate("() => document.querySelector('#room-panel').scrollIntoView()")
        lecturer.settle(500)
        lecturer.page.screenshot(path=str(outs[0]))
        students[0].page.evaluate("() => window.scrollTo(0, 0)")
        students[0].settle(300)
        students[0].page.screenshot(path=str(outs[1]))
    for out in outs:
        quantize(out)
        print(f"{out}: {out.stat().st_size / 1024:.0f} KB")
    return outs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--round", type=int, default=3)
    parser.add_argument("--out-dir", type=Path, default=IMAGES)
    args = parser.parse_args()
    screenshot(args.round, args.out_dir)


if __name__ == "__main__":
    main()

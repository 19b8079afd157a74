"""A room in a browser: a follower's tab (ready once it follows the lecturer's round) and a room opened from a
lecturer's tab. tests/app/test_room_browser.py and tools/screenshot_room.py drive rooms with these.
"""

from __future__ import annotations

from harness.browser import AppPage, Page

WHERE = "#sv-where"


class FollowerPage(Page):
    def wait_ready(self) -> None:
        self.wait_text(WHERE, "Following: round")

    def shown(self) -> int:
        return int(self.page.evaluate("() => document.querySelector('#stage .sv-stage').dataset.current"))

    def picked(self) -> list[str]:
        """The answers marked as picked anywhere on this page."""
        return self.page.evaluate("() => [...document.querySelectorAll('.sv-guess.sv-picked')]"
                                  ".map(b => b.closest('.sv-round').dataset.round + ':' + b.dataset.guess)")


def open_room(lecturer: AppPage) -> str:
    """Open a room on the trace on screen; -> its join link."""
    lecturer.page.click("#room-panel button, #room-panel .label-wrap")  # the accordion opens
    lecturer.page.click("#open-room")
    lecturer.wait_text("#status", "Room ", "is open")
    return lecturer.wait_js("() => document.querySelector('#room-box .sv-lead') && "
                            "document.querySelector('#room-box .sv-room-link').textContent")

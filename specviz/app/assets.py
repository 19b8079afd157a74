"""The page's static files (assets/): where they are, and the page's scripts composed from whole files.

Every script file runs itself, `(() => { … })();`, and registers on `window` what the others and the page's events
call (window.svShow, svQuiz, …); a page's scripts are those files one after the other, in the order below (a file
calls another's functions only when an event runs, so the order matters only for listeners of the same event).
"""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parents[2] / "assets"

# The stage in any page: its screen-reader announcements, stepping (buttons and keys), the quiz.
STAGE_SCRIPTS = ("announce.js", "stepping.js", "quiz.js")
# The main page: the stage, charts named and tabled for screen readers, the dropdowns' focus, leading a room, the
# round brought into view, the presenter view: the sections of the Lab and the Costs tab, then its keys (last: they
# listen in the capture phase, before stepping.js's).
PAGE_SCRIPTS = (*STAGE_SCRIPTS, "chart_tables.js", "dropdown_focus.js", "room.js", "first_screen.js", "sections.js",
                "present.js")
# A follower's page in a room (app/room_routes.py): the stage, then following the lecturer.
FOLLOWER_SCRIPTS = (*STAGE_SCRIPTS, "follow.js")


def scripts(names: tuple[str, ...]) -> str:
    """The files `names`, one after the other: statements that run them all."""
    return "\n".join(text(name) for name in names)


def text(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")

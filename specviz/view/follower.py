"""A follower's stage in a room: each round in the form the room allows it now (record/quiz_data.follower_forms), as
one `<section class="sv-round">` each, so the browser steps between them as on the main page (assets/stepping.js):

    UNSEEN               a placeholder: the round is shown once the lecturer gets there (nothing of the round)
    0 … its steps − 1    the quiz form (quiz_form.py), with that many reveal steps drawn in full
    its steps            the round in full (stage.round_section), fates and all: it has been released

Pure functions of a trace and the forms (no gradio, no models). The room sends a section again whenever its form
changes (app/room_hub.py), and the page swaps it in (assets/follow.js).
"""

from __future__ import annotations

from specviz.record.quiz_data import UNSEEN, reveal_steps
from specviz.record.trace import Trace
from specviz.view.quiz_form import quiz_section
from specviz.view.stage import round_section


def follower_stage(trace: Trace, forms: dict[int, int], current: int = 1) -> str:
    """Every round of `trace` in its form (`forms`: round -> form; a round missing is UNSEEN), round `current` shown."""
    n = len(trace.rounds)
    current = min(max(int(current), 1), n)
    sections = "".join(follower_section(trace, i, forms.get(i, UNSEEN), shown=i == current) for i in range(1, n + 1))
    return f'<div class="sv-stage" data-rounds="{n}" data-current="{current}">{sections}</div>'


def follower_section(trace: Trace, number: int, form: int, shown: bool = False) -> str:
    """Round `number` (1-based) in `form`; hidden unless `shown`."""
    if form == UNSEEN:
        return unseen_section(number, len(trace.rounds), shown)
    if form >= reveal_steps(trace.rounds[number - 1]):
        return round_section(trace, number, shown)
    return quiz_section(trace, number, form, shown)


def unseen_section(number: int, rounds: int, shown: bool = False) -> str:
    """A round the class has not reached: its number, and when it comes."""
    return (f'<section class="sv-round sv-unseen" data-round="{number}"{"" if shown else " hidden"}>'
            f'<div class="sv-round-head"><b>Round {number} of {rounds}</b></div><p class="sv-unseen-note">Round '
            f'{number} is shown here once the lecturer gets there (or once every round before it has been '
            f'revealed). Press Follow (F) to go back to the lecturer\'s round.</p></section>')

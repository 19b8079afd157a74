"""Predict, then reveal: how a round's quiz uncovers it, step by step (the arithmetic the stage, the cards, the
strip, the tree, the charts and the room all read).

In quiz mode the page shows a round's drafts with their p and q bars but hides what verification decided. The
class answers "how many of the K drafts will the target accept?", then each Reveal uncovers one step:

    step 1 … E   the draft positions the target examined, one at a time (its draw and verdict);
                 E = the accepted ones plus the first rejected one, or all K after a clean sweep
    step E + 1   the round's last token (replacement or bonus), the positions never examined, and the result

So a round with K = 4 whose third draft is rejected has 3 + 1 = 4 steps. Pure functions of a Round.
"""

from __future__ import annotations

from specviz.record.trace import Round


def most_accepted(rnd: Round) -> int:
    """The most drafts a round could have accepted, the largest answer its quiz offers: its K, or for a tree round
    the tree's depth (the longest path)."""
    return len(rnd.tree.widths) if rnd.tree else rnd.k


def examined(rnd: Round) -> int:
    """How many draft positions verification examined: up to and including the first rejection. A tree round
    (view/tree.py) is revealed in one step: its verdicts are read along the drawn tree, not position by position."""
    return 0 if rnd.tree else min(rnd.n_accepted + 1, rnd.k)


def reveal_steps(rnd: Round) -> int:
    """The number of Reveal presses a round takes: one per examined position, then one for the last token.

    >>> from specviz.record.trace import Round, TokenProb
    >>> reveal_steps(Round(0, 0, [], 0, TokenProb(1, "a", 1.0), "bonus", None, None, [1], 0.0, 0.0))
    1
    """
    return examined(rnd) + 1


def step_of_draft(rnd: Round, position: int) -> int:
    """The step that reveals draft `position` (0-based): its own step if examined, else the last step."""
    return position + 1 if position < examined(rnd) else reveal_steps(rnd)

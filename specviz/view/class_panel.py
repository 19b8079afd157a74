"""The class's panel in a room (issue 23), which the lecturer's screen and every follower's page show alike: who
answered, and once a round is revealed, how the class answered it beside what the target did and what the formula
expected. Rendered from a room's facts and counts (record/quiz_data.py): no follower's identity ever comes here.
"""

from __future__ import annotations

from html import escape

from specviz.record.quiz_data import QuizFacts, mean_guess
from specviz.view.style import e_formula


def class_panel(facts: QuizFacts, round_: int, quiz: bool, here: int, answered: int,
                revealed: dict[int, dict[int, int]], released: bool = False) -> str:
    """The class's panel: round `round_` on screen, `here` following the room now (seats held), `answered` answers
    to the round; `revealed`: round -> the class's answers counted (answer -> how many), for every round revealed to
    its last step; `released`: the round on screen was shown with quiz mode off before (every phone holds its
    verdicts), so the quiz takes no answers to it (room_rules)."""
    head = (f"{here} following · round {round_} was shown with quiz mode off, so the class has seen how it ends: the "
            f"quiz takes no answers to it, only to rounds not shown yet" if quiz and released else
            f"{here} following · {answered} answered round {round_}" if quiz else
            f"{here} following · quiz off: answers open when the lecturer turns quiz mode on")
    parts = [f'<div class="sv-class-head" aria-live="polite">{escape(head)}</div>']
    if round_ in revealed:
        parts.append(histogram(facts, round_, revealed[round_]))
    if revealed:
        parts.append(across_rounds(facts, revealed))
    return f'<div class="sv-class">{"".join(parts)}</div>'


def histogram(facts: QuizFacts, round_: int, counts: dict[int, int]) -> str:
    """The class's answers for one revealed round, one bar per answer, the right one marked in words and colour."""
    r, n = facts.rounds[round_ - 1], sum(counts.values())
    if not n:
        return f'<p class="sv-hist-none">Nobody answered round {round_}; the target accepted {r.accepted}.</p>'
    widest = max(counts.values())
    rows = []
    for answer in range(r.most + 1):
        c = counts.get(answer, 0)
        right = answer == r.accepted
        # the mark sits in the count's cell: on a line of its own it split the bars (under 0's, when 0 was right)
        mark = ' <span class="sv-hist-right" title="what the target accepted">✓</span>' if right else ""
        rows.append(f'<div class="sv-hist-row{" sv-hist-hit" * right}"><span class="sv-hist-x">{answer}</span>'
                    f'<span class="sv-hist-bar" style="width:{100 * c / widest:.0f}%"></span>'
                    f'<span class="sv-hist-n">{c}{mark}</span></div>')
    return (f'<figure class="sv-hist" aria-label="the class\'s answers for round {round_}">'
            f'<figcaption>Round {round_}: {n} answer{"s" * (n != 1)}; the target accepted {r.accepted} '
            f'(✓ what the target accepted)</figcaption>'
            f'{"".join(rows)}</figure>')


def across_rounds(facts: QuizFacts, revealed: dict[int, dict[int, int]]) -> str:
    """Every revealed round: the class's mean answer, what the target accepted, and E(α, K) − 1."""
    rows, means, truths = [], [], []
    for number in sorted(revealed):
        r, mean = facts.rounds[number - 1], mean_guess(revealed[number])
        if mean is not None:
            means.append(mean)
            truths.append(r.accepted)
        rows.append(f"<tr><td>{number}</td><td>{r.most}</td><td>{sum(revealed[number].values())}</td>"
                    f"<td>{'–' if mean is None else f'{mean:.2f}'}</td><td>{r.accepted}</td>"
                    f"<td>{'– (tree)' if r.expected is None else f'{r.expected:.2f}'}</td></tr>")
    overall = ""
    if means:
        overall = (f"<p>Over the {len(means)} revealed round{'s' * (len(means) != 1)} the class answered, its mean "
                   f"answers averaged {sum(means) / len(means):.2f}; the target accepted {sum(truths) / len(truths):.2f} "
                   f"on average.</p>")
    return (f'<details class="sv-across" open><summary>The class across rounds</summary>{overall}'
            f'<table class="sv-across-table"><thead><tr><th>round</th><th>K</th><th>answers</th>'
            f'<th>class mean</th><th>accepted</th><th>E(α, K) − 1</th></tr></thead><tbody>{"".join(rows)}</tbody>'
            f'</table><p class="sv-across-note">E(α, K) − 1 = {e_formula(facts.alpha)} − 1: the accepted '
            f'drafts expected if each survives independently with α = {facts.alpha:.2f}, this run\'s acceptance '
            f'rate over the drafts the target examined.</p></details>')

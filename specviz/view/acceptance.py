"""Where the independence assumption holds: a run's acceptance at each draft position, and its rounds' sizes
against E(α, K)'s prediction, as two small tables under the summary (the counts are record/stats.py's).
Pure functions of a trace; every number is printed with the counts it comes from."""

from __future__ import annotations

from html import escape

from specviz.algorithm.theory import round_size_probs
from specviz.record.stats import chain_rounds, cut_short, per_position, round_sizes, set_k
from specviz.record.trace import Trace
from specviz.settings.published import LEVIATHAN, PUBLISHED_ALPHA, PUBLISHED_EXAMPLES, PUBLISHED_SPEEDUP


# Under adaptive K a position past the first is tested only in rounds whose rule chose to draft that far: the
# rates there are of those rounds, a selection, not of every round (issue 33: 0.53 at position 1, 1.00 at 3-4)
SELECTION = (" With adaptive K each round chose how far to draft, so a position past the first was tested only in "
             "the rounds whose rule went on drafting that far (where the draft was surer, or drafting paid): its rate "
             "is of those rounds, a selection, not of every round, and need not fall with the position as a fixed "
             "K's would.")


def acceptance_html(trace: Trace) -> str:
    """The two tables, or '' for a run with no chain drafted (a tree's rounds test branches, not positions)."""
    positions = per_position(trace)
    if not positions or not any(c.tested for c in positions):
        return ""
    s = trace.summary
    alpha = s.acceptance_rate if s else 0.0
    adaptive = bool(trace.settings.get("adaptive"))
    return (f'<div class="sv-acceptance"><div class="sv-panel-title">Acceptance by draft position, and round '
            f'sizes against E(α, K)</div>{_positions_table(positions, alpha, adaptive)}{_sizes_table(trace, alpha)}'
            f'{published_note(alpha)}</div>')


def published_note(alpha: float) -> str:
    """This run's α beside the published ones, and what verification checks (and what it does not)."""
    low, high = PUBLISHED_ALPHA
    examples = "; ".join(f"{a:.2f} for {pair}" for pair, a in PUBLISHED_EXAMPLES)
    return (f'<p class="sv-note">This run: α = {alpha:.2f}. {escape(LEVIATHAN)} measured α from {low:.2f} to '
            f'{high:.2f} across their pairs ({escape(examples)}), and decoded {PUBLISHED_SPEEDUP}. Verification '
            f'checks each draft against the target\'s distribution, so the text is what the target alone would '
            f'sample; it does not check that the text is true (an answer the target would get wrong passes just as '
            f'well). The two models must share one tokenizer, since p and q are compared token by token (specviz '
            f'refuses a pair that does not; pairs with different vocabularies need a translation between them, as '
            f'universal assisted decoding does).</p>')


def _bar(share: float) -> str:
    width = max(0.0, min(1.0, share)) * 100
    return f'<span class="sv-mini-bar" style="width:{width:.0f}%"></span>'


def _positions_table(positions, alpha: float, adaptive: bool = False) -> str:
    rows = "".join(f"<tr><td>{c.position}</td><td>{c.accepted} of {c.tested}</td>"
                   f"<td>{'–' if c.rate is None else f'{c.rate:.2f}'} {_bar(c.rate or 0)}</td></tr>"
                   for c in positions)
    return (f'<table class="sv-mini"><caption>Per position: accepted ÷ tested drafts at each place in the round. '
            f'E(α, K) assumes one α = {alpha:.2f} (accepted ÷ tested over the run) at every position, each '
            f'independent of the others; where the rates fall with the position, that assumption breaks. Each rate rests '
            f'on the count beside it: at a handful of drafts, a draft or two either way is chance.'
            f'{SELECTION if adaptive else ""}</caption>'
            f'<tr><th scope="col">position</th><th scope="col">accepted</th><th scope="col">rate</th></tr>'
            f'{rows}</table>')


def _sizes_table(trace: Trace, alpha: float) -> str:
    k = set_k(trace)
    if k is None:
        return ""
    sizes = round_sizes(trace, k)
    total = sum(sizes)
    if not total:
        return ""
    predicted = round_size_probs(alpha, k)
    cut, adaptive = sum(1 for r in chain_rounds(trace) if r.k == k and cut_short(r)), bool(trace.settings.get("adaptive"))
    left_out = f" ({cut} more, cut short by the run's end, left out)" if cut else ""
    rows = "".join(f"<tr><td>{n + 1}</td><td>{count} ({count / total:.2f}) {_bar(count / total)}</td>"
                   f"<td>{p:.3f}</td></tr>" for n, (count, p) in enumerate(zip(sizes, predicted)))
    return (f'<table class="sv-mini"><caption>Round sizes: of the {total} round{"s" * (total != 1)} that drafted '
            f'K = {k}{left_out}, how many committed n tokens, beside the share E(α, K)\'s assumption '
            f'predicts at α = {alpha:.2f}: (1 − α)·α<sup>n−1</sup> for n ≤ K, α<sup>K</sup> for n = K + 1.'
            f'{" With adaptive K these are the rounds whose rule drafted all K, a selection." * adaptive}</caption>'
            f'<tr><th scope="col">tokens n</th><th scope="col">rounds (share)</th><th scope="col">predicted'
            f'</th></tr>{rows}</table>')

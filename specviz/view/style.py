"""The colour language and the way numbers and token text are written, shared by the page's HTML (strip.py, cards.py, explanation.py),
its charts (charts.py, lab/charts.py) and the terminal (trace_text.py).

Okabe & Ito's colour-blind-safe palette. Every colour has a second cue (icon, strike-through, outline, hatching),
because projectors wash colours out. A round has either a rejection or a bonus, never both, so the two closest
colours (vermillion, orange) never meet in one view. The page's CSS reads the colours as variables from
`palette_css()`, so each is defined once.
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.record.trace import ACCEPTED, BONUS, DISCARDED, PLAIN, REJECTED, REPLACEMENT, DraftPosition


@dataclass(frozen=True)
class FateStyle:
    color: str
    icon: str
    label: str
    cue: str  # the cue that is not colour, in words (legend tooltip)


FATES = {
    ACCEPTED: FateStyle("#009E73", "✓", "accepted", "solid underline"),
    REJECTED: FateStyle("#D55E00", "✗", "rejected", "struck through"),
    DISCARDED: FateStyle("#8C8C8C", "░", "discarded", "faded, dashed outline"),
    REPLACEMENT: FateStyle("#CC79A7", "◆", "replacement", "solid outline"),
    BONUS: FateStyle("#E69F00", "★", "bonus", "double outline"),
    PLAIN: FateStyle("#0072B2", "●", "target's token", "thin solid outline"),  # p's colour: a token of p alone
}
P_COLOR = "#0072B2"  # p, the target's distribution: solid bars
Q_COLOR = "#56B4E9"  # q, the draft's distribution: hatched bars
INK = "#1a1a1a"  # text, outlines and lines that must survive a washed-out projector
GRID = "#d9d9d9"
FONT = "'Source Sans Pro', ui-sans-serif, system-ui, sans-serif"  # the page's font, served by gradio


TINT = 0x2E / 255  # a fate's background: its colour at 18 % over white (the `2e` alpha of --sv-<fate>-bg)
TEXT_CONTRAST, GRAPHIC_CONTRAST = 4.5, 3.0  # WCAG 2.2 AA: text (1.4.3), and the parts of a graphic (1.4.11)


def _rgb(color: str) -> tuple[float, float, float]:
    return tuple(int(color.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4))


def _hex(rgb) -> str:
    return "#" + "".join(f"{round(255 * c):02X}" for c in rgb)


def tint(color: str) -> str:
    """The colour a fate's background shows: `color` at TINT over white."""
    return _hex(TINT * c + (1 - TINT) for c in _rgb(color))


def contrast(a: str, b: str) -> float:
    """WCAG's contrast ratio of two colours: (L1 + 0.05) / (L2 + 0.05), L the relative luminance.
    contrast("#000000", "#FFFFFF") -> 21.0"""
    def lum(color):
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in _rgb(color))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b
    high, low = sorted((lum(a), lum(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def ink(color: str, ratio: float = TEXT_CONTRAST, on: tuple[str, ...] | None = None) -> str:
    """`color` darkened (toward black, hue kept) just enough for text in it to reach `ratio` on each background
    `on` (by default its own tint and white): the fate's colour for its icons and words, the bright one staying
    for fills."""
    backgrounds = on or (tint(color), "#FFFFFF")
    scale = 1.0
    while min(contrast(_hex(c * scale for c in _rgb(color)), bg) for bg in backgrounds) < ratio:
        scale -= 0.01
    return _hex(c * scale for c in _rgb(color))


def edge(color: str) -> str:
    """`color` if it reaches 3:1 on white, else darkened until it does (as the page's --sv-*-edge): the edge of a bar
    or the colour of a line in a chart (WCAG 1.4.11). edge(INK) -> INK; edge(Q_COLOR) is a darker blue."""
    return color if contrast(color, "#FFFFFF") >= GRAPHIC_CONTRAST else ink(color, GRAPHIC_CONTRAST)


def card_backgrounds() -> tuple[str, ...]:
    """What a card's p and q headers may sit on: white, or any fate's tint."""
    return ("#FFFFFF", *(tint(s.color) for s in FATES.values()))


def palette_css() -> str:
    """CSS variables for the palette: --sv-accepted, --sv-accepted-bg (a light tint), --sv-accepted-ink (text and
    icons, 4.5:1 on the tint and on white), --sv-accepted-edge (outlines, 3:1 on white), ..., --sv-p, --sv-q and
    their inks."""
    lines = [f"--sv-{fate}: {s.color}; --sv-{fate}-bg: {s.color}2e; --sv-{fate}-ink: {ink(s.color)}; "
             f"--sv-{fate}-edge: {ink(s.color, GRAPHIC_CONTRAST)};" for fate, s in FATES.items()]
    cards = card_backgrounds()
    lines += [f"--sv-p: {P_COLOR}; --sv-p-ink: {ink(P_COLOR, on=cards)};",
              f"--sv-q: {Q_COLOR}; --sv-q-ink: {ink(Q_COLOR, on=cards)}; --sv-q-edge: {ink(Q_COLOR, GRAPHIC_CONTRAST)};"]
    return ":root {\n  " + "\n  ".join(lines) + "\n}\n"


def hatch(shape: str) -> dict:
    """A plotly bar pattern: white hatching over the bar's colour, the cue that survives a projector."""
    return dict(shape=shape, fillmode="overlay", fgcolor="white", size=8, solidity=0.25)


# --- numbers and token text --------------------------------------------------------------------------------

def num(x: float | None) -> str:
    """A probability for people, by one rule used everywhere: two decimals from 0.1, two significant figures below
    it, and an exact 0 as '0' (so that '0.00' never stands for a zero, nor a small number for zero):
    0.6 -> '0.60'; 0.08 -> '0.080'; 0.013 -> '0.013'; 2.8e-07 -> '2.8e-07'; 0.0 -> '0'; None -> '–'."""
    return "–" if x is None else _digits(x, 0)


# Control characters get their Unicode "control picture" (NUL -> ␀, ESC -> ␛, DEL -> ␡): a browser would show
# them as nothing or as a box, and a token made of one would look empty.
CONTROLS = {chr(c): chr(0x2400 + c) for c in range(32) if chr(c) not in "\n\t"} | {"\x7f": "\u2421"}
VISIBLE = CONTROLS | {" ": "·", "\n": "⏎", "\t": "⇥"}


def show(text: str) -> str:
    """Token text with its whitespace made visible (not escaped): ' fib' -> '·fib', '\\n' -> '⏎', '' -> '∅'."""
    return "".join(VISIBLE.get(ch, ch) for ch in text) or "∅"


def _digits(x: float, extra: int) -> str:
    """num(x) with `extra` more digits, where a decision needs them: 0.727 -> '0.73', '0.727', '0.7270';
    0.0131 -> '0.013', '0.0131'."""
    if x == 0:
        return "0"
    small = f"{x:#.{2 + extra}g}"  # '#': trailing zeros kept, 0.080 shows its two figures
    return small if abs(float(small)) < 0.1 else f"{x:.{2 + extra}f}"  # 0.0999 rounds up to '0.10', not '0.1'



def cut_by(settings: dict) -> str:
    """What sets a token's p (and q) to exactly 0 in a run of these settings, in words: 'top-p = 0.95',
    'top-k = 40', 'top-k = 40 or top-p = 0.95'; '' when neither is on (p is then 0 only where float32 underflows)."""
    cuts = ([f"top-k = {settings['top_k']}"] if settings.get("top_k") else []) + (
        [f"top-p = {settings['top_p']:g}"] if settings.get("top_p", 1.0) < 1.0 else [])
    return " or ".join(cuts)


def zero_note(p: float, cut: str) -> str:
    """Why a p printed as 0 is 0, where it is: ' (p = 0 exactly: top-p = 0.95 cut the token from the target's
    distribution)'; '' where p is not 0."""
    if p != 0:
        return ""
    why = f"{cut} cut the token from the target's distribution" if cut else "the target's probability underflows float32"
    return f" (p = 0 exactly: {why})"


def verdict_numbers(p: float, q: float, r: float, accepted: bool) -> tuple[str, str, str, str]:
    """(p, q, min(1, p/q), r) as printed beside an acceptance test. min(1, p/q) is worked out from the recorded p and
    q, never from their rounded print, and each gets just enough digits that the equation holds as printed: the
    printed p over the printed q, rounded as the ratio is printed, gives the printed ratio (so the operands may carry a
    digit more than the ratio), and the printed r lies on the decision's side of both the ratio and that quotient.

    >>> verdict_numbers(0.00395, 0.00553, 0.72, False)   # at two digits, 0.004/0.0055 = 0.727 > 0.72 would accept
    ('0.00395', '0.00553', '0.714', '0.720')
    >>> verdict_numbers(0.2189, 0.2227, 0.5, True)       # not min(1, 0.22/0.22) = 1.00: the draft could be rejected
    ('0.219', '0.223', '0.98', '0.50')
    """
    ratio = min(1.0, p / q) if q > 0 else 1.0
    for extra in range(8):
        p_s, q_s = _digits(p, extra), _digits(q, extra)
        redone = min(1.0, float(p_s) / float(q_s)) if float(q_s) > 0 else 1.0  # what a student gets from them
        for fewer in range(extra, -1, -1):  # the ratio and r to as many digits as hold, at most the operands'
            ratio_s, r_s = _digits(ratio, fewer), _digits(r, fewer)
            if (_digits(redone, fewer) == ratio_s
                    and (float(r_s) < redone) == (float(r_s) < float(ratio_s)) == (r < ratio) == accepted):
                return p_s, q_s, ratio_s, r_s
    return repr(p), repr(q), repr(ratio), repr(r)  # float noise at the 8th digit: every digit, so it holds exactly


def speed(x: float) -> str:
    """A speed in tokens/s for people, by one rule everywhere: three significant figures, so a slow turn keeps its
    figures as a fast one does: 0.1534 -> '0.153'; 7.7 -> '7.70'; 14.04 -> '14.0'; 103.4 -> '103'; 1234.5 -> '1234'.
    (Where an equation quotes speeds, summary.ceiling_text adds digits until it holds as printed.)"""
    return significant(x, 3)


def significant(x: float, digits: int) -> str:
    """x to `digits` significant figures, trailing zeros kept, never in exponent form: significant(2.5, 3) -> '2.50'."""
    text = f"{x:#.{digits}g}"
    return f"{x:.0f}" if "e" in text else text.rstrip(".")


def verdict_text(d: DraftPosition, greedy: bool = False, cut: str = "", tested: float | None = None,
                 distinct: bool = False) -> str:
    """The acceptance test at one draft position, written out (plain text, no markup); `cut`: what zeroes a p in
    this run (cut_by), named where it did.

    An accepted draft reads 'r = 0.41 < min(1, 0.60/0.90) = 0.67 → accept'. At temperature 0 the draw plays no
    part (p and q are one-hot): 'same top token as the target → accept'.
    """
    return "".join(text for _, text in verdict_parts(d, greedy, cut, tested, distinct))


def verdict_parts(d: DraftPosition, greedy: bool = False, cut: str = "", tested: float | None = None,
                  distinct: bool = False) -> list[tuple[str, str]]:
    """verdict_text in parts, each (its role, its text), so that a narrow card can keep the test's outcome and drop
    its working (present.css): "" the outcome, "min" how the threshold is computed, "more" the rest of a sentence.
    `tested`: what the test compared with q where it was not p (a tree node after a rejected sibling: the residual's
    value p′ at its token, tested_p), printed as p′; `distinct`: a tree of distinct siblings, whose recorded q is
    then q′ (q without the rejected sibling), said so.

    >>> verdict_parts(DraftPosition(1, "x", q=0.9, p=0.6, fate=ACCEPTED, uniform=0.41))
    [('', 'r = 0.41 < '), ('min', 'min(1, 0.60/0.90) = '), ('', '0.67'), ('more', ' → accept')]
    """
    if d.fate == DISCARDED:
        return [("", "not examined"), ("more", ": an earlier draft token was rejected")]
    ok = d.fate == ACCEPTED
    if greedy:
        return ([("more", "same top token as the target "), ("", "→ accept")] if ok else
                [("more", "the target's top token differs "), ("", "→ reject")])
    residual = tested_residual(d, tested)
    p, q, ratio, r = verdict_numbers(tested if residual else d.p, d.q, d.uniform, ok)
    said = (DISTINCT_SAID if distinct else RESIDUAL_SAID) if residual else zero_note(d.p, cut)
    return [("", f"r = {r} {'<' if ok else '≥'} "), ("min", f"min(1, {p}/{q}) = "), ("", ratio),
            ("more", f" → {'accept' if ok else 'reject'}{said}")]


RESIDUAL_SAID = " (p′: the residual after the rejected sibling)"
DISTINCT_SAID = " (p′: the residual after the rejected sibling; q′: q without it, renormalised)"


def tested_residual(d: DraftPosition, tested: float | None) -> bool:
    """Whether the test compared q with something other than p: a recorded p′ that differs from p (beyond the float32
    noise of reading one value twice)."""
    return tested is not None and abs(tested - d.p) >= 5e-7


def tested_p(rnd, i: int) -> float | None:
    """What draft i's test compared with q where that was not its p: a tree node's recorded p′ (TreeRecord.test_p);
    None in a chain."""
    return rnd.tree.test_p[i] if rnd.tree is not None else None


def e_formula(alpha: float, k: str = "K", html: bool = True) -> str:
    """How E(α, K), the expected tokens per target pass, is written at this α: '(1 − α<sup>K+1</sup>) / (1 − α)';
    at α = 1, where that quotient is 0/0, its limit 'K + 1' (every draft kept), as the printed α reads 1.00 too."""
    if f"{alpha:.2f}" == "1.00":
        return f"{k} + 1"
    power = f"α<sup>{k}+1</sup>" if html else f"α^({k}+1)"
    return f"(1 − {power}) / (1 − α)"

"""The Lab's HTML: readouts of the playground, the Monte Carlo, the explorer, a trace's measured point and the
drafters comparison. Pure functions of playground.py's and compare.py's records (no gradio); every user-editable or
uploaded string goes through html.escape.
"""

from __future__ import annotations

import html

from specviz.lab import compare
from specviz.lab import explorer
from specviz.measure import measured
from specviz.lab import joint
from specviz.lab import playground
from specviz.view.token_text import token_html
from specviz.view.style import FATES, INK, Q_COLOR, speed
from specviz.algorithm.theory import expected_tokens_per_pass, round_cost, round_size_probs, speedup
from specviz.record.stats import drafted_a_tree
from specviz.record.trace import ACCEPTED, REPLACEMENT, Trace

TEXT = "font-size:20px;line-height:1.5"


def swatch(color: str, pattern: str = "") -> str:
    """A small square in a legend colour; a hatched pattern (the second cue) where the chart has one."""
    fill = f"repeating-linear-gradient(45deg,{color} 0 4px,#fff 4px 6px)" if pattern else color
    return f'<span style="display:inline-block;width:14px;height:14px;background:{fill};margin-right:4px"></span>'


def playground_html(pg: playground.Playground) -> str:
    """α in large type, then one row per token: q, p, acceptance and the two parts of p(x)."""
    ok, res = FATES[ACCEPTED], FATES[REPLACEMENT]
    head = ["token", f"{swatch(Q_COLOR, '/')}q(x) draft", "p(x) target", "keep min(1, p/q)",
            f"{swatch(ok.color)}{ok.icon} accepted q·min(1, p/q)",
            f"{swatch(res.color, 'x')}{res.icon} residual (1−α)·norm(max(0, p−q))", f"{ok.icon} + {res.icon} = p(x)"]
    cells = "text-align:right;padding:4px 12px;font-variant-numeric:tabular-nums"
    body = "".join(
        f'<tr><td style="padding:4px 12px">{token_html(r.token)}</td>'
        + "".join(f'<td style="{cells}">{v:.3f}</td>'
                  for v in (r.q, r.p, r.accept_prob, r.from_accepted, r.from_residual,
                            r.from_accepted + r.from_residual))
        + "</tr>" for r in pg.rows)
    header = "".join(f'<th style="padding:4px 12px;text-align:left">{h}</th>' for h in head)
    return (f'<div id="lab-alpha-readout" style="font-size:30px;margin:8px 0">α = Σ min(p, q) = '
            f'<b>{pg.alpha:.3f}</b> <span style="font-size:20px">: a drafted token is accepted '
            f'{pg.alpha:.1%} of the time; otherwise the token comes from the residual.</span></div>'
            f'<table style="{TEXT};border-collapse:collapse"><tr>{header}</tr>{body}</table>')


def exactness_html(pg: playground.Playground) -> str:
    """Why the output is exactly p, as three lines with this pair's numbers: for the token the draft favours and
    for the one it proposes least often relative to p."""
    favourite = max(pg.rows, key=lambda r: r.q)
    others = [r for r in pg.rows if r is not favourite]  # the second line names another token, never the same twice
    short = max(others, key=lambda r: r.p - r.q) if others else None
    rest = 1 - pg.alpha

    def tok(r):
        return token_html(r.token)

    def parts(r):
        residual = r.from_residual / rest if rest > 1e-12 else 0.0
        return (f"{tok(r)}: {r.from_accepted:.3f} + {rest:.3f} × {residual:.3f} = "
                f"<b>{r.from_accepted + r.from_residual:.3f}</b> = p({tok(r)})")

    lines = [
        f"1. A draft x is proposed with q(x) and kept with min(1, p(x)/q(x)), so it arrives accepted with "
        f"q(x)·min(1, p(x)/q(x)) = min(p(x), q(x)). {tok(favourite)}: {favourite.q:.3f} × "
        f"{favourite.accept_prob:.3f} = <b>{favourite.from_accepted:.3f}</b> = min({favourite.p:.3f}, "
        f"{favourite.q:.3f}).",
        f"2. A draft is rejected with probability 1 − Σ min(p, q) = 1 − α = 1 − {pg.alpha:.3f} = <b>{rest:.3f}</b>, "
        f"which is also the mass of max(0, p − q): Σ max(0, p − q) = Σ p − Σ min(p, q).",
        f"3. Then the token comes from the residual norm(max(0, p − q)), so min(p, q) + (1 − α)·residual = p, token "
        f"by token: {parts(favourite)}" + (f"; {parts(short)}." if short else "."),
    ]
    return (f'<div id="lab-exactness" style="{TEXT}"><h3 style="margin:0">Why the output is exactly p</h3>'
            + "<br>".join(lines) + "</div>")


def _noise(expected: float, limit: float) -> str:
    """How large sampling noise alone gets at this N, by the simulation behind playground.noise_limit."""
    return (f"sampling noise alone: {expected:.4f} on average, below {limit:.4f} in 99 of 100 exact runs "
            f"({playground.NOISE_RUNS:,} simulated histograms of the same N from p)")


def _gap(tv: float, limit: float) -> str:
    """The correct sampler's gap, said as what it is."""
    if tv <= limit:
        return "its gap from p is within sampling noise"
    return ("its gap from p is above 99 % of exact runs' at this N, which an exact sampler does 1 time in 100; "
            "another seed or a larger N shows whether it stays")


def joint_html(mc: joint.JointMonteCarlo) -> str:
    label = html.escape(joint.JOINT_SAMPLER_LABELS[mc.sampler])
    lead = (f"N = {mc.n:,} runs (seed {mc.seed}) in {mc.seconds * 1000:.0f} ms · TV(histogram of pairs, "
            f"p(a, b)) = <b>{mc.tv:.4f}</b> · {_noise(mc.noise, mc.noise_99)}")
    if mc.faithful and mc.sampler == "correct":
        verdict = (f"✓ <b>{label}</b>: the pairs follow the target's joint p(a)·p(b | a); "
                   f"{_gap(mc.tv, mc.noise_99)}.")
    elif mc.faithful:
        verdict = (f"✓ <b>{label}</b>, yet harmless with this pair: no draft is ever rejected, so the shared draw "
                   f"never matters. Pick a pair where the draft over-proposes a token to see the bug.")
    else:
        verdict = (f"✗ <b>{label}</b>: once the first draft is kept (r below its ratio), the same r is more likely "
                   f"to keep the second, so pairs of kept drafts are over-represented: {mc.exact_tv:.3f} away "
                   f"from the target's joint (TV), however many runs.")
    return f'<div id="lab-joint-readout" style="{TEXT}">{verdict}<br>{lead}</div>'


def histogram_html(mc: playground.MonteCarlo) -> str:
    label = html.escape(playground.SAMPLER_LABELS[mc.sampler])
    lead = (f"N = {mc.n:,} rounds (seed {mc.seed}) in {mc.seconds * 1000:.0f} ms · "
            f"TV(histogram, p) = ½ Σ|histogram − p| = <b>{mc.tv:.4f}</b> (total variation distance: 0 when they "
            f"match) · {_noise(mc.noise, mc.noise_99)}")
    if mc.faithful:
        verdict = f"✓ <b>{label}</b>: the histogram fills p's outline; {_gap(mc.tv, mc.noise_99)}."
    else:
        verdict = (f"✗ <b>{label}</b>: its tokens follow a distribution {mc.exact_tv:.3f} away from p (TV), "
                   "so more samples will not close the gap.")
    return f'<div id="lab-histogram-readout" style="{TEXT}">{verdict}<br>{lead}</div>'


def explorer_html(ex: explorer.Explorer) -> str:
    a, k, c, v = ex.alpha, ex.k, ex.c, ex.v
    # at α = 1 the formula is 0/0; its limit is K + 1 (every draft kept, then the bonus)
    formula = (f"E = (1 − {a:.2f}<sup>{k + 1}</sup>) / (1 − {a:.2f})" if a < 1 else
               "at α = 1 every draft is kept: (1 − α<sup>K+1</sup>) / (1 − α) is 0/0 there, and its limit is "
               f"E = K + 1 = {k} + 1")
    return (f'<div style="{TEXT}">{formula} = '
            f'<b id="lab-expected" style="font-size:30px">{ex.expected_at_k:.2f}</b> tokens per target pass · '
            f'speedup = E / (K·c + v) = {ex.expected_at_k:.2f} / ({k} × {c:.2f} + {v:.2f}) = '
            f'<b id="lab-speedup" style="font-size:30px">{ex.speedup_at_k:.2f}×</b> · '
            f'▲ best K for this α, c and v: <b>{ex.best_k}</b> ({ex.best_speedup:.2f}×)</div>')


# --- the "test yourself" card: one step per press of REVEAL ---------------------------------------------------

REVEAL, RESTART = "Reveal next step", "Start over"  # the card's two buttons, named in its own text


def card_steps(q: explorer.Question) -> list[tuple[str, str]]:
    """The card's steps, each (what it works out, its formula with q's numbers), every number from theory.py."""
    a, k, c = q.alpha, q.k, q.c
    probs, e, cost, gain = round_size_probs(a, k), expected_tokens_per_pass(a, k), round_cost(k, c), speedup(a, k, c)
    sizes = " / ".join(f"<b>{pr:.3f}</b>" for pr in probs)
    return [
        ("How many tokens one round yields", f"P(n) = (1 − α)·α<sup>n−1</sup> for n = 1 … K (n − 1 drafts kept, "
         f"then the target's replacement) and α<sup>K</sup> for n = K + 1 (all kept, plus the bonus); for n = 1 … "
         f"{k + 1}: {sizes}"),
        ("Expected tokens per target pass", f"E = Σ n·P(n) = (1 − α<sup>K+1</sup>) / (1 − α) = (1 − {a:.2f}"
         f"<sup>{k + 1}</sup>) / (1 − {a:.2f}) = <b>{e:.2f}</b> tokens per pass"),
        ("Drafts kept per round", f"every round ends with one token of the target's own (a replacement or the "
         f"bonus), so E − 1 = {e:.2f} − 1 = <b>{e - 1:.2f}</b> drafts kept"),
        ("What a round costs", f"K draft steps of c each, then one verify pass (v = 1 target pass): K·c + v = "
         f"{k} × {c:.2f} + 1 = <b>{cost:.2f}</b> target passes"),
        ("The speedup", f"E / (K·c + v) = {e:.2f} / {cost:.2f} = <b>{gain:.2f}×</b>"),
        ("Tokens per second", f"{speed(q.target_tokens_per_s)} tokens/s × {gain:.2f} = "
         f"<b>{speed(q.target_tokens_per_s * float(f'{gain:.2f}'))} tokens/s</b>"),  # from the printed speedup
    ]


def card_html(q: explorer.Question, shown: int) -> str:
    """The question, its first `shown` steps and a line saying where the card stands (read out by screen readers);
    a count past the last step shows every step and says there is nothing more to reveal."""
    steps = card_steps(q)
    n, shown = len(steps), max(0, shown)
    items = "".join(f'<li id="lab-card-step-{i + 1}" style="margin:6px 0"><b>{title}</b>: {text}</li>'
                    for i, (title, text) in enumerate(steps[:shown]))
    if shown == 0:
        status = f"Work it out first, then press “{REVEAL}”: {n} steps, one at a time."
    elif shown < n:
        status = f"{shown} of {n} steps shown; “{REVEAL}” shows the next."
    else:
        status = (f"All {n} steps shown. The explorer below, at α = {q.alpha:.2f}, K = {q.k}, c = {q.c:.2f} and "
                  f"v = 1, shows E, the speedup and the round sizes on its curves.")
        if shown > n:
            status = f"The card is fully revealed: there is no further step. “{RESTART}” asks it again."
    question = (f"A draft model's tokens are each accepted with probability α = {q.alpha:.2f}; a round drafts K = "
                f"{q.k} tokens; a draft step costs c = {q.c:.2f} target passes, and verifying the K drafts costs "
                f"one target pass (v = 1). The target alone generates {speed(q.target_tokens_per_s)} tokens/s (a figure "
                f"assumed for the question, not measured here). How many tokens/s does speculative decoding give?")
    # data-steps: the presenter view (assets/sections.js) steps on to the next section once every step is shown
    return (f'<div id="lab-card" data-steps="{n}" style="{TEXT};border:3px solid {INK};border-radius:8px;'
            f'padding:8px 16px">'
            f'<h3 style="font-size:26px;margin:0">Test yourself</h3><p>{question}</p>'
            f'<ol style="margin:0">{items}</ol>'
            f'<p id="lab-card-status" role="status" aria-live="polite">{status}</p></div>')


def covered_html(q: explorer.Question) -> str:
    """The explorer's readout while it sits at the card's question and the card is not fully revealed."""
    return (f'<div id="lab-explorer-covered" style="{TEXT}">'
            f"The sliders sit at the card's question (α = {q.alpha:.2f}, K = {q.k}, c = {q.c:.2f}, v = 1), so the "
            f"explorer keeps its numbers and curves covered until the card above is fully revealed. Move any slider "
            f"to explore now.</div>")


TREE_NOTE = ("This trace drafted trees: the explorer's formulas describe a chain of K drafts, so its point is not "
             "drawn here. The round view compares each tree with the chain.")


def trace_html(trace: Trace | None, point: measured.MeasuredPoint | None) -> str:
    if point is None:
        msg = ("No trace yet: generate one in the main view, or upload a trace JSON, to put its measured point "
               "(■) on these charts." if trace is None else TREE_NOTE if trace.rounds and drafted_a_tree(trace)
               else "This trace has no rounds to measure.")
        return f'<div style="{TEXT}">{msg}</div>'
    pair = f"{html.escape(trace.draft_model)} → {html.escape(trace.target_model)}"
    gain = (f"{point.speedup:.2f}× over its baseline" if point.speedup is not None
            else "no speedup (the trace has no baseline run)")
    return (f'<div id="lab-trace-readout" style="{TEXT}">■ Trace {pair}: K = {point.k}, {point.n_rounds} rounds · '
            f"α = <b>{point.alpha:.3f}</b> (accepted ÷ examined drafts) · {_costs(point)}<br>"
            f"Measured: <b>{point.tokens_per_pass:.2f}</b> tokens per pass, <b>{gain}</b>.{_theory(point)}</div>")


def _costs(point: measured.MeasuredPoint) -> str:
    if point.c is None:
        return "c not measurable (nothing was drafted)"
    if point.steady is None:
        return (f"c = <b>{point.c:.3f}</b> (draft {point.draft_s_per_token * 1000:.1f} ms per token ÷ target pass "
                f"{point.verify_s_per_round * 1000:.1f} ms per round; without a baseline there is no one-token "
                f"step to measure v against, so v is taken as 1)")
    s = point.steady
    return (f"c = <b>{s.c:.3f}</b> (a draft step ÷ one target-only step), v = <b>{s.v:.2f}</b> (the verify pass "
            f"÷ one target-only step)")


def _theory(point: measured.MeasuredPoint) -> str:
    """The cost model beside the measurement, like for like: both after round 1, which also encoded the prompt."""
    if point.steady is None:
        if point.c is None:
            return ""
        return (f"<br>Theory at this α, K, c, v = 1: {expected_tokens_per_pass(point.alpha, point.k):.2f} tokens per "
                f"pass, {speedup(point.alpha, point.k, point.c):.2f}×.")
    s = point.steady
    decode = f"; measured after round 1: <b>{point.decode_speedup:.2f}×</b>" if point.decode_speedup else ""
    return (f"<br>Theory for the rounds after the first (α = {s.alpha:.2f}, K̄ = {s.k:.2f}): E / (K̄·c + v) = "
            f"<b>{s.speedup:.2f}×</b>{decode}.")


def heading_html(title: str, text: str) -> str:
    """A section's title and its one paragraph (HTML, not Markdown: one component type less for every page load
    to fetch)."""
    return f'<h2>{title}</h2><p style="{TEXT}">{text}</p>'


def warning_html(text: str = "") -> str:
    return f'<div style="{TEXT};color:#B00020">⚠ {html.escape(text)}</div>' if text else ""


def comparison_status(rows: list[compare.CompareRow], ks: tuple[int, ...], seconds: float,
                      layers: tuple[int, ...] = (0,), drafters: tuple[str, ...] | None = None,
                      notes: tuple[str, ...] = ()) -> str:
    """Progress while running ("3 of 9 runs done in T s, about R s to go at that pace; next: prompt lookup at
    K = 2"), a verdict once done. What is left is estimated from this comparison's own runs so far. `notes`: why a
    drafter is left out (its heads are not trained yet), said after it."""
    return _run_status(rows, ks, seconds, layers, drafters) + "".join(
        f'<div style="{TEXT}">Not compared: {html.escape(note)}</div>' for note in notes)


def _run_status(rows, ks, seconds, layers, drafters) -> str:
    planned = compare.plan(ks, *(() if drafters is None else (drafters,)), layers=layers)
    done = len(rows)
    total = len(planned)
    if done < total:
        drafter, k, n = planned[done]
        name = compare.layers_label(n) if n else compare.LABELS[drafter]
        rest = f", about {seconds / done * (total - done):.0f} s to go at that pace" if done else ""
        return (f'<div style="{TEXT}">Running… {done} of {total} runs done in {seconds:.0f} s{rest}; next: '
                f"{html.escape(name)} at K = {k}.</div>")
    best = max(rows[1:], key=lambda r: r.speedup)  # rows[0] is the target alone
    return (f'<div style="{TEXT}">✓ {total} runs in {seconds:.0f} s. Fastest: '
            f"<b>{html.escape(best.label)} at K = {best.k}, {best.speedup:.2f}×</b> the target alone "
            f"({speed(best.tokens_per_s)} vs {speed(rows[0].tokens_per_s)} tokens/s), α = {best.acceptance_rate:.2f}, "
            f"{best.tokens_per_pass:.2f} tokens per target pass.</div>")

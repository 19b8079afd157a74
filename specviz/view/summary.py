"""A run's summary: its figures (acceptance, tokens per pass, passes saved, speed, time to first token, decode speed,
the draft's memory), the acceptance tables, and the comparison with the target alone. Pure functions of a trace;
text from a file is escaped."""

from __future__ import annotations

from html import escape

from specviz.record.stats import (QUIET, Ceiling, Speedup, baseline_decode_speed, decode_speed, quiet, run_lengths,
                                  run_speed, speedups, target_step_time, turn_ceilings, turn_rates,
                                  turn_speedups)
from specviz.record.trace import Repeats, Trace
from specviz.view.acceptance import acceptance_html
from specviz.view.cost_words import price_note, run_account, slower_words
from specviz.view.notices import placeholder
from specviz.view.style import significant, speed
from specviz.view.token_text import text_html


def summary_html(trace: Trace) -> str:
    """The run's figures (from trace.summary only) and, when present, the baseline comparison."""
    s = trace.summary
    if s is None or not s.n_rounds:
        return placeholder("No rounds yet.")
    items = [("acceptance α", f"{s.acceptance_rate:.2f}",
              f"{s.n_accepted} of {s.n_examined} examined draft tokens accepted (bonus and replacements not counted)"),
             ("tokens / target pass", f"{s.tokens_per_pass:.2f}", "new tokens divided by target passes"),
             ("target passes", f"{s.n_rounds} for {s.n_new_tokens} tokens",
              f"{s.n_new_tokens - s.n_rounds} target passes saved (new tokens − passes)"),
             ("speed", f"{speed(s.tokens_per_s)} tok/s", f"{s.n_new_tokens} tokens in {s.total_time_s:.2f} s")]
    items += _latency_items(trace) + _memory_items(trace) + [item for item in [run_account(trace)] if item]
    both = speedups(trace)
    if both is not None:
        b = trace.baseline
        items.append(("vs target alone", speedup_text(both[0]) + lengths_text(trace),
                      f"target-only decoding: {speed(b.tokens_per_s)} tok/s, {len(b.output_token_ids)} tokens "
                      f"in {b.total_time_s:.2f} s"))
    cells = "".join(f'<span class="sv-stat" title="{escape(why)}"><span class="sv-stat-name">{name}</span> '
                    f'<span class="sv-stat-value">{value}</span></span>' for name, value, why in items)
    price = price_note(trace)  # the cost-aware rule's price of a draft step beside what the run paid: said, not hovered
    price = f'<div class="sv-baseline sv-muted">{escape(price)}</div>' if price else ""
    return (f'<div class="sv-summary">{cells}</div>{price}{speedup_notes(trace)}{acceptance_html(trace)}'
            f'{baseline_report(trace)}')


# --- speedups as a paper publishes them: median, range, runs, machine; beside each turn's ceiling, none above it --

def spread_text(sp: Speedup) -> str:
    """'2.14× (1.98–2.30, 5 runs each, interleaved)'; one run: '2.14× (one run each)'."""
    v = sp.value
    if v.runs == 1:
        return f"{v.median:.2f}× (one run each)"
    return f"{v.median:.2f}× ({v.low:.2f}–{v.high:.2f}, {v.runs} runs each, interleaved)"


NOT_PER_TURN = "ceiling per turn not recorded"


def ceiling_range_text(sp: Speedup) -> str:
    """The ceiling a speedup is printed beside, the same way: each turn's own as a median and range ('ceiling 2.61×
    (2.12–3.05)': no end of the speedup's range can pass it), the one run's ('ceiling 2.30×'), or, for turns timed
    before format version 9 recorded their passes, NOT_PER_TURN."""
    if sp.ceilings is not None:
        c = sp.ceilings
        return f"ceiling {c.median:.2f}× ({c.low:.2f}–{c.high:.2f})"
    if sp.value.runs > 1:
        return NOT_PER_TURN
    return f"ceiling {sp.ceiling.value:.2f}×" if sp.ceiling else "no ceiling: no pass times recorded"


def passed_ceiling(sp: Speedup) -> str:
    """The ceiling a speedup beyond it passed: each turn's own ('1.10× (1.05–1.20)'), else the run shown's ('5.00×')."""
    return ceiling_range_text(sp).removeprefix("ceiling ") if sp.per_turn else f"{sp.ceiling.value:.2f}×"


NO_RESULT = "no result: above its ceiling, see below"


def speedup_text(sp: Speedup) -> str:
    """The speedup as a result beside its ceiling, or, above its ceiling, no result (speedup_notes says why)."""
    return NO_RESULT if sp.beyond else f"{spread_text(sp)}; {ceiling_range_text(sp)}"


def lengths_text(trace: Trace) -> str:
    """Where the run and the target alone made different numbers of tokens (sampling, or an end of text on one side
    only), their tokens/s compare runs of different lengths, and the page says so: '; runs of different lengths,
    compared in tokens/s: 48 tokens against the target alone's 36'; '' where every turn's lengths agree."""
    turns = run_lengths(trace)
    if all(mine == alone for mine, alone in turns):
        return ""
    return (f"; runs of different lengths, compared in tokens/s: {_span(t[0] for t in turns)} tokens against the "
            f"target alone's {_span(t[1] for t in turns)}")


def _span(numbers) -> str:
    """[48, 48] -> '48'; [36, 30] -> '30–36'."""
    low, high = min(numbers := list(numbers)), max(numbers)
    return f"{low}" if low == high else f"{low}–{high}"


def speedup_sentence(trace: Trace) -> str:
    """The whole run's speedup in one sentence, as the recorded examples' gallery says it when one opens: 'Speedup over
    the target alone: 2.42× (1.96–2.90, 5 runs each, interleaved); ceiling per turn not recorded.', and where it is
    below 1 why (cost_words.slower_words); '' without a baseline."""
    both = speedups(trace)
    if both is None:
        return ""
    if both[0].beyond:
        return "Its speedup over the target alone is no result: above its ceiling (the summary says why)."
    return f"Speedup over the target alone: {speedup_text(both[0])}{lengths_text(trace)}. {slower_words(trace)}".rstrip()


def speedup_notes(trace: Trace) -> str:
    """Said in the page, not in a tooltip: a speedup above its ceiling, the ceilings worked out from their numbers,
    and where the timings come from (the machine, the turns, the one run shown)."""
    both = speedups(trace)
    if both is None:
        return ""
    named = [(sp, what) for sp, what in zip(both, ("whole run", "decode speed")) if sp]
    notes = [_beyond_note(sp, what, trace) for sp, what in named if sp.beyond]
    notes += [_ceiling_note(trace, named), _turn_ceilings_note(trace), _timing_note(trace)]
    return "".join(f'<div class="sv-baseline sv-muted">{note}</div>' for note in notes if note)


def _beyond_note(sp: Speedup, what: str, trace: Trace) -> str:
    if trace.baseline.repeats is None:  # one run each: its ratio and its ceiling come from the same timings
        why = ("its rounds' target passes add up to more than its own wall clock, which no run can do, so the "
               "file's times are not one run's")
    elif sp.per_turn:
        why = (f"in {sp.over} of its turns the run's target passes add up to more than its own wall clock, which no "
               "run can do, so the file's times disagree")
    else:
        why = ("more than the target passes of the run shown allow even with drafting free; the ratio is the "
               "turns' median, and the turns are other runs of the same settings, so the machine ran at another "
               "speed while some were timed")
    return (f"⚠ The {what}'s measured ratio, {spread_text(sp)}, is above its ceiling, {passed_ceiling(sp)} "
            f"(worked out below): {why}. So it is timing noise (or a fault), not a speedup, and is not shown as "
            f"one; press <b>Baseline</b> to time it again.")


def _ceiling_note(trace: Trace, named: list[tuple[Speedup, str]]) -> str:
    """The ceiling's formula and its numbers for the run shown, so a student can redo it; and why it is not the tokens
    per target pass where it lies above it."""
    priced = [(sp.ceiling, what) for sp, what in named if sp.ceiling]
    if not priced:
        return "No ceiling: the rounds hold no target pass times to price the run with."
    parts = [f"{'whole run' if what == 'whole run' else 'decode speed (after round 1)'}: {ceiling_text(c)}"
             for c, what in priced]
    above = [(c, what) for c, what in priced if c.above_tokens_per_pass]
    why = "".join(f" The {what}'s ceiling is above its {c.tokens / c.passes:.2f} tokens per target pass: a pass of "
                  f"these rounds took {c.pass_s / c.passes:.3f} s on average, the target alone "
                  f"{1 / c.alone:.3f} s a token, so on average a round's pass cost less than the target alone's step."
                  for c, what in above)
    shown = " of the run shown" if trace.baseline.repeats is not None else ""
    return (f"Ceiling{shown}, the most the run could gain if drafting were free (its rounds would then take only their "
            "target passes): (tokens ÷ seconds of the run's target passes) ÷ the target alone's tokens/s. "
            + _first_upper("; ".join(parts)) + "." + why)


def _turn_ceilings_note(trace: Trace) -> str:
    """Each turn's own ceiling beside its speedup (format version 9), or why the turns have none."""
    r = trace.baseline.repeats
    if r is None:
        return ""
    ceilings = turn_ceilings(r)
    if ceilings is None:
        return (f"Each turn's own ceiling is not recorded: these turns were timed before the trace format (version "
                f"9) kept each turn's target-pass seconds, so the ceiling above is the run shown's alone and another "
                f"turn's speedup may pass it; recorded again, each turn's speedup stands beside its own ceiling.")
    pairs = ", ".join(f"{x:.2f} ≤ {c:.2f}" for x, c in zip(turn_speedups(r), ceilings))
    return (f"Each turn's speedup beside its own ceiling (its run's tokens ÷ the seconds of its own target passes ÷ "
            f"its target alone's tokens/s): {pairs}. A turn's passes are part of its own clock, so no turn passes "
            f"its ceiling, and no end of the speedup's range passes the same end of the ceiling's.")


def ceiling_text(c: Ceiling) -> str:
    """'63 tokens in 7.231 s of passes = 8.71 tok/s ÷ 3.16 tok/s alone = 2.75×': the ceiling, redone from its numbers.
    Seconds to three decimals and speeds to three figures (style.speed's rule), more of each where the quotient of
    the printed figures would not give the printed ceiling."""
    result = f"{c.value:.2f}"
    for decimals, digits in ((decimals, digits) for decimals in range(3, 9) for digits in range(3, 9)):
        seconds = f"{c.pass_s:.{decimals}f}"
        rate, alone = significant(c.tokens / float(seconds), digits), significant(c.alone, digits)
        if f"{float(rate) / float(alone):.2f}" == result:
            break
    return f"{c.tokens} tokens in {seconds} s of passes = {rate} tok/s ÷ {alone} tok/s alone = {result}×"


def _first_upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def _timing_note(trace: Trace) -> str:
    b = trace.baseline
    r = b.repeats
    if r is None:
        return ("Timed once each, not in turns: one run's ratio, with no spread to say how much of it is noise; "
                "press <b>Baseline</b> to time the run and the target alone in turns.")
    turns = ", ".join(f"{x:.2f}" for x in turn_speedups(r))
    warm = f"after {r.warm_up} untimed run{'s' * (r.warm_up != 1)} of each" if r.warm_up else "with no warm-up run"
    steady = steadiness(r)
    return (f"Timed on {escape(r.machine)}: {len(r.speculative)} turns of this prompt and settings (the speculative "
            f"run, then the target alone), {warm}; each turn's ratio of tokens/s: {turns}. The median and range "
            f"above are of these ratios.{' ' * bool(steady)}{steady} The target alone shown is the median turn's "
            f"({speed(b.tokens_per_s)} tok/s; {', '.join(speed(run_speed(t)) for t in r.target)} in the turns), "
            f"{_run_shown(trace)}.{_step_said(b)}")


def _step_said(b) -> str:
    """' Its step took 112.4 ms (the median after its first, which also read the prompt): …', the figure to set
    beside another recording's of the same target (issue 64: one target took 100 to 140 ms a step across examples
    recorded apart); '' for a one-token run."""
    step = target_step_time(b)
    if step is None:
        return ""
    return (f" Its step took {step * 1e3:.1f} ms (the median after its first, which also read the prompt): the "
            f"figure to compare across examples.")


def steadiness(r: Repeats) -> str:
    """How steady each side's turns ran, as measured (record/stats.py's turn_rates), in one sentence: 'Each side's
    turns within 1.15× of each other (the run 1.04×, the target alone 1.06×; load average 1.0 before the turns, 2.1
    after, their own threads included).' or 'Its turns varied 1.46× (the target alone 6.36–9.27 tok/s): the machine
    was not quiet.'; '' for one turn each."""
    if len(r.speculative) < 2:
        return ""
    sides = list(zip(("the run", "the target alone"), turn_rates(r)))
    if quiet(r):
        each = ", ".join(f"{name} {s.ratio:.2f}×" for name, s in sides)
        return f"Each side's turns within {QUIET:g}× of each other ({each}{_loads(r)})."
    over = [(name, s) for name, s in sides if s.ratio > QUIET]
    each = ", ".join(f"{name} {speed(s.low)}–{speed(s.high)} tok/s" for name, s in over)
    return f"Its turns varied {max(s.ratio for _, s in over):.2f}× ({each}{_loads(r)}): the machine was not quiet."


def _loads(r: Repeats) -> str:
    """'; load average 1.0 before the turns, 2.1 after, their own threads included'; '' where not measured."""
    if r.load_before is None or r.load_after is None:
        return ""
    return f"; load average {r.load_before:.1f} before the turns, {r.load_after:.1f} after, their own threads included"


def _run_shown(trace: Trace) -> str:
    """Whether the rounds on view are a turn's (a recording's median turn) or a run timed apart (Baseline after a
    Generate)."""
    s, r = trace.summary, trace.baseline.repeats
    if any(t.total_s == s.total_time_s and t.tokens == s.n_new_tokens for t in r.speculative):
        return "and so is the run shown"
    return f"while the run shown was timed apart, before the turns ({speed(s.tokens_per_s)} tok/s)"


def _latency_items(trace: Trace) -> list[tuple[str, str, str]]:
    """Latency and throughput apart: time to the first tokens (round 1, which also encodes the prompt) and the
    speed after it, each beside the target alone's when there is a baseline."""
    s, b = trace.summary, trace.baseline
    decode = decode_speed(trace)
    ttft = _duration(s.first_token_time_s)
    rate = f"{speed(decode)} tok/s" if decode else "– (one round)"
    same_prefill = trace.format_version >= 3  # round 1 is then the target's own first step, as the baseline's
    why = ("round 1, the target's prefill alone, as the target alone's first step: the same work, so any "
           "difference between the two is run-to-run noise, not speculation" if same_prefill else
           "round 1, which also encoded the prompt (and drafted, in this older trace); beside it the target alone's "
           "first step, and their ratio (above 1: speculation was faster)")
    if b is not None:
        b_decode = baseline_decode_speed(b)
        if same_prefill:
            ttft += f" vs {_duration(b.first_token_time_s)} (the same pass: the gap is noise)"
        elif s.first_token_time_s > 0:
            ttft += f" vs {_duration(b.first_token_time_s)} ({b.first_token_time_s / s.first_token_time_s:.2f}×)"
        if decode and b_decode:
            rate += f" vs {speed(b_decode)} ({_decode_ratio(trace, decode / b_decode)})"
    return [("time to first token", ttft, why),
            ("decode speed", rate, "tokens/s after the first round (after the first token for the target alone): "
             "throughput, apart from the prompt's encoding")]


def _decode_ratio(trace: Trace, shown: float) -> str:
    """This run's decode-speed ratio (no result above its ceiling), and with repeats the turns' median and range."""
    sp = speedups(trace)[1]
    if sp is None:
        return f"{shown:.2f}×"
    if sp.beyond:
        return NO_RESULT
    return (f"{shown:.2f}×; {ceiling_range_text(sp)}" if sp.value.runs == 1 else
            f"{shown:.2f}× here; over the turns {speedup_text(sp)}")


def _memory_items(trace: Trace) -> list[tuple[str, str, str]]:
    """The draft's own memory, as the engine measured it on the loaded models."""
    m = trace.draft_memory
    if m is None:
        return []
    tokens = len(trace.prompt_token_ids) + len(trace.output_token_ids)
    shared = (f"; {_bytes(m.shared_bytes)} of weights it shares with the target cost nothing more"
              if m.shared_bytes else "")
    return [("draft's memory", f"{_bytes(m.weights_bytes)} + {_bytes(m.kv_bytes_per_token)}/token",
             f"its own weights as stored{shared}; its KV cache grows {_bytes(m.kv_bytes_per_token)} a token "
             f"(2 · layers · KV heads · head size · bytes), {_bytes(m.kv_bytes_per_token * tokens)} for this run's "
             f"{tokens} tokens")]


def _bytes(n: int) -> str:
    """2_147_483_648 -> '2.0 GiB'; 12288 -> '12 KiB'."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if n < 10 * size else f"{n / size:.0f} {unit}"
    return f"{n} B"


def _duration(seconds: float) -> str:
    """0.0042 -> '4 ms'; 1.234 -> '1.23 s'."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def baseline_report(trace: Trace) -> str:
    """Does the speculative text equal target-only decoding? In greedy mode it should, up to numerics."""
    b = trace.baseline
    if b is None:
        return ('<div class="sv-baseline sv-muted">Press <b>Baseline</b> to time the target alone with the same '
                'settings and seed.</div>')
    greedy = trace.greedy
    same = trace.output_token_ids == b.output_token_ids
    if greedy and same:
        verdict = ("✓ Greedy decoding: the text is <b>identical</b> to the target's own greedy text. Speculative "
                   "decoding changed the speed, not the output.")
    elif greedy:
        first = next(i for i, (x, y) in enumerate(zip(trace.output_token_ids + [-1], b.output_token_ids + [-2]))
                     if x != y)
        dtype = escape(trace.dtype)
        verdict = (f"✗ Greedy decoding, yet the texts differ from token {first + 1} on. That is hardware numerics, "
                   f"not the algorithm: in {dtype} the target's one pass over several tokens rounds differently from "
                   f"one-token steps (it adds in another order), so a near-tie between the two top tokens can flip. "
                   + ("float32 rounds far less, and greedy float32 runs matched the target alone in every test on "
                      "this project's machines; " if dtype != "float32" else "Even float32 rounds, though greedy "
                      "float32 runs matched the target alone in every test on this project's machines; ")
                   + "another device or batch shape can still differ.")
    else:
        temperature = escape(str(trace.settings.get("temperature")))  # from a file: any text
        here = ("Here the two samples are the same text: that is chance, not the method (another seed can give "
                "two different texts with equal right)." if same else "Here they differ, as two samples may.")
        verdict = (f"Sampling at temperature {temperature}: each run makes its own random draws (the speculative "
                   f"run one per tested draft and one per replacement or bonus, the target alone one per token), so "
                   f"the texts are two samples of the target's distribution, not one text made twice. {here} Both "
                   f"follow that distribution up to the hardware's rounding ({escape(trace.dtype)}).")
    return (f'<div class="sv-baseline">{verdict}<details><summary>both texts</summary>'
            f'<div class="sv-compare"><b>speculative</b><pre>{text_html(trace.output_text)}</pre>'
            f'<b>target alone</b><pre>{text_html(b.output_text)}</pre></div></details></div>')

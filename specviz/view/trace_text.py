"""A trace as plain text, for a terminal: one line a round (its drafts marked by fate with the page's icons, whitespace
visible), a tree round on one line, and the summary's lines (acceptance, tokens per pass, speeds, the speedups beside
their ceilings, acceptance by position against E(α, K)). What `python -m specviz run` prints (cli/run.py).

    round_line(rnd)        # its number, accepted/K, tokens, draft and verify ms, the drafts by fate, → its last token
    summary_lines(trace)   # ['acceptance rate …', 'tokens per target pass …', 'speculative … tokens/s …', …]
"""

from __future__ import annotations

from specviz.algorithm.theory import round_size_probs
from specviz.record.stats import per_position, round_sizes, set_k, speedups
from specviz.record.trace import ACCEPTED, DISCARDED, REJECTED, Round, Trace
from specviz.settings.bounds import widths_text
from specviz.view.cost_words import price_note, run_account
from specviz.view.style import FATES, show, speed
from specviz.view.summary import ceiling_text, lengths_text, passed_ceiling, speedup_text, spread_text

ROUND_HEADER = ("round  acc  tok  draft ms  verify ms  drafts (✓ accepted ✗ rejected ░ discarded) → ◆ replacement / "
                "★ bonus   (· is a space, ⏎ a newline)")  # the columns of round_line


def mark(fate: str, text: str) -> str:
    """A token with its fate's icon, whitespace visible as in the page: ✓·fib, ✗⏎, ◆(n."""
    return FATES[fate].icon + show(text)


def round_line(r: Round) -> str:
    drafts = tree_drafts(r) if r.tree else " ".join(mark(d.fate, d.text) for d in r.drafts) or "(no draft)"
    nxt = mark(r.last_kind, r.next_token.text)
    if not r.next_kept:
        nxt = f"({nxt} not kept: the text ended before it)"
    return (f"{r.index + 1:>4}  {r.n_accepted}/{r.k:<2}  {r.tokens_this_pass:>3}  "
            f"{r.draft_time_s * 1000:>7.0f}  {r.verify_time_s * 1000:>7.0f}  {drafts}  → {nxt}")


def tree_drafts(r: Round) -> str:
    """A tree round on one line: its shape, the accepted path, the nodes rejected on the way, the unexamined count."""
    path = " ".join(mark(ACCEPTED, r.drafts[c - 1].text) for c in r.tree.path) or "(no node accepted)"
    rejected = " ".join(mark(REJECTED, d.text) for d in r.drafts if d.fate == REJECTED)
    unexamined = sum(d.fate == DISCARDED for d in r.drafts)
    shape = (f"shaped tree of {r.k} nodes, {r.tree.deepest} deep" if r.tree.shaped else
             f"tree {widths_text(r.tree.widths)}")
    return (f"{shape}: {path}" + (f"  rejected {rejected}" if rejected else "")
            + f"  ({unexamined} not examined)")


def summary_lines(trace: Trace) -> list[str]:
    s = trace.summary
    lines = [
        f"acceptance rate {s.acceptance_rate:.2f} ({s.n_accepted} of {s.n_examined} examined draft tokens; "
        f"{s.n_drafted} drafted)",
        f"tokens per target pass {s.tokens_per_pass:.2f} ({s.n_new_tokens} tokens in {s.n_rounds} passes)",
        f"speculative {speed(s.tokens_per_s)} tokens/s ({s.total_time_s:.2f} s: draft {s.draft_time_s:.2f}, verify "
        f"{s.verify_time_s:.2f}; first tokens after {s.first_token_time_s:.2f})",
    ]
    lines += acceptance_lines(trace)
    account = run_account(trace)
    if account:
        lines.append(f"{account[0]}: {account[1]} ({account[2]})")
    if price := price_note(trace):  # the price of a draft step beside what the run paid
        lines.append(price)
    b = trace.baseline
    if b is not None:
        lines += speedup_lines(trace) if b.tokens_per_s else ["target-only: no tokens"]
        if trace.greedy:
            same = b.output_token_ids == trace.output_token_ids
            lines.append("greedy output identical to target-only: yes" if same else
                         f"greedy output identical to target-only: NO ({trace.dtype} numerics: a multi-token "
                         "verify pass rounds differently from one-token steps; use --dtype float32 to compare exactly)")
    return lines


def speedup_lines(trace: Trace) -> list[str]:
    """The speedups as the page prints them: median and range over the turns beside each turn's own ceiling (or that
    it was not recorded), the machine; none above its ceiling; runs of different lengths said to be."""
    b, both = trace.baseline, speedups(trace)
    lines = [f"target-only {speed(b.tokens_per_s)} tokens/s ({b.total_time_s:.2f} s)"]
    for sp, what in zip(both, ("speedup", "decode-speed speedup")):
        if sp is None:
            continue
        said = (f"{spread_text(sp)}: NOT A RESULT, above its ceiling {passed_ceiling(sp)} (what the run's own target "
                "passes allow with drafting free): timing noise; time it again" if sp.beyond else speedup_text(sp))
        shown = f" (the run shown's ceiling: {ceiling_text(sp.ceiling)})" if sp.ceiling else ""
        lengths = lengths_text(trace) if what == "speedup" else ""
        lines.append(f"{what} {said}{lengths}{shown}".replace("×", "x"))
    if b.repeats:
        lines.append(f"timed on {b.repeats.machine}: {len(b.repeats.speculative)} turns (run, target alone), "
                     f"after {b.repeats.warm_up} warm-up run(s) of each")
    return lines


def acceptance_lines(trace: Trace) -> list[str]:
    """Per-position acceptance and round sizes against E(α, K)'s prediction (record/stats.py's counts)."""
    positions, alpha = per_position(trace), trace.summary.acceptance_rate
    if not any(c.tested for c in positions):
        return []
    lines = ["acceptance by draft position (accepted/tested): " + ", ".join(
        f"{c.position}: {c.accepted}/{c.tested}" for c in positions) + f" (E(α, K) assumes α = {alpha:.2f} at each)"]
    k = set_k(trace)
    sizes = round_sizes(trace, k) if k else []
    if sum(sizes):
        predicted = round_size_probs(alpha, k)
        lines.append(f"round sizes of the {sum(sizes)} rounds of K={k} (tokens: rounds, predicted share): " + ", ".join(
            f"{n + 1}: {count} ({p:.2f})" for n, (count, p) in enumerate(zip(sizes, predicted))))
    return lines

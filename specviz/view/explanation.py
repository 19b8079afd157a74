"""What happened in a round, in plain language, quoting the record's numbers: who proposed what, how the target
judged it (the greedy rule, the ratio test, a tree's walk), why adaptive K stopped where it did, and what the round
yielded. Pure functions of a trace; token text is quoted through token_text.py (escaped), the cost-aware rule's
reasons are cost_words.py's.
"""

from __future__ import annotations

import math
from html import escape

from specviz.settings.bounds import ADAPTIVE_CONFIDENCE, SHAPED_FLOOR
from specviz.view.cost_words import round_note, speculation_off
from specviz.view.style import cut_by, verdict_numbers, zero_note
from specviz.view.token_text import quoted
from specviz.record.trace import BONUS, Round, Trace, TreeRecord


def explanation(trace: Trace, index: int) -> str:
    """What happened in round `index`, in plain language, quoting the record's numbers."""
    rnd = trace.rounds[index]
    parts = [f"<b>Round {index + 1}.</b>"]
    if speculation_off(rnd):
        parts.append(f"{escape(round_note(rnd, trace.pass_costs, trace.eos_token_ids))} The target's pass gave {quoted(rnd.next_token.text)} "
                     f"directly.")
    elif rnd.k == 0:
        parts.append(f"{why_nothing_drafted(trace, index)}, so nothing was drafted: the target's pass gave "
                     f"{quoted(rnd.next_token.text)} directly.")
    elif rnd.tree:
        parts.append(_explain_tree(trace, rnd))
    else:
        parts += _explain_drafts(trace, rnd)
    if index <= 1:
        parts.append(_first_round_note(trace, index))
    n = rnd.tokens_this_pass
    parts.append(f"Result: <b>{n} token{'s' * (n != 1)} for one target pass</b>"
                 + (f" (decoding alone would have needed {n} passes)." if n > 1 else "."))
    if rnd.stop:
        parts.append("The run ended here: " + ("the end-of-text token was committed."
                                                if rnd.stop == "eos" else "max new tokens reached."))
    return f'<div class="sv-explain">{" ".join(parts)}</div>'


def _first_round_note(trace: Trace, index: int) -> str:
    """Who read the prompt, and when. Since format version 3 round 1 is the target's prefill alone and the draft
    reads the prompt in round 2's first step; before, round 1's passes read it in both models."""
    n, lookup = len(trace.prompt_token_ids), not trace.drafter_spec.has_draft_cache
    if trace.format_version < 3:
        if index:
            return ""
        models = ("the target's pass read all of it" if lookup
                  else "both models read all of it, the draft in its first step and the target in its pass")
        return (f"Round 1 also encoded the prompt ({n} tokens): {models}, so it took longer than the rounds after "
                f"it (the summary's time to first token).")
    o = trace.opening
    if index == 0:
        read = (f"the prompt's last {n - o} tokens (its first {o}, the chat template's opening that every prompt "
                f"begins with, each model read once before any run: a run's caches start from a copy of them)"
                if o else f"the whole prompt ({n} tokens)")
        return (f"That pass read {read} and took the first token from p at its end, exactly as the target alone "
                f"starts, so the first token waited for no draft (the summary's time to first token)."
                + ("" if lookup else f" The draft reads {'the rest of ' if o else ''}the prompt in round 2."))
    if lookup or not trace.rounds[index].k:
        return ""
    cache = trace.rounds[index].cache
    if o and cache is not None and cache.draft[0] == o:
        read = f"the prompt's {n - o} tokens after the template's opening, which its cache held from the start,"
    else:
        read = f"the prompt ({n} tokens)"
    return (f"The draft's first step this round also read {read} and round 1's token, so its drafting took longer "
            f"than in the rounds after it.")


def why_nothing_drafted(trace: Trace, index: int) -> str:
    """A round drafts nothing when it is round 1 (the target's prefill, format version 3), when one token is
    left, or when prompt lookup finds no earlier match to copy."""
    if index == 0 and trace.format_version >= 3:
        return "Round 1 is the target's own prefill"
    made = sum(r.tokens_this_pass for r in trace.rounds[:index])
    if trace.drafter_spec.nothing_found and trace.settings.get("max_new_tokens", 0) - made > 1:
        return trace.drafter_spec.nothing_found
    return "Only one token was left to generate"


def _adaptive_note(trace: Trace, rnd: Round) -> str:
    """Why an adaptive round drafted fewer than K (its last draft is not EOS and tokens were left)."""
    if rnd.cost is not None:
        return " " + escape(round_note(rnd, trace.pass_costs, trace.eos_token_ids))  # plain text with the numbers; escaped as all text is
    fell_back = (f" (This run was set to the cost-aware rule, which could not price it: {escape(trace.rule_note)}.)"
                 if trace.rule_note else "")
    return fell_back + _threshold_note(trace, rnd)


def stopped_by_threshold(trace: Trace, rnd: Round) -> bool:
    """Whether adaptive K's threshold rule stopped this round short of K: it drafted fewer than K, and neither the
    end-of-text token nor the tokens left stopped it."""
    settings = trace.settings
    left = settings.get("max_new_tokens", 0) - sum(r.tokens_this_pass for r in trace.rounds[:rnd.index])
    return bool(settings.get("adaptive") and rnd.drafts and rnd.k < min(settings.get("k", 0), left - 1)
                and rnd.drafts[-1].token_id not in (trace.eos_token_ids or []))


def threshold_product(trace: Trace, rnd: Round) -> str:
    """The product the threshold rule compared, written out ('0.91 × 0.26 = 0.237'), or '' where the trace kept no
    factors."""
    factors = [d.confidence for d in rnd.drafts]
    return "" if None in factors else _product_text(factors, trace.settings.get("confidence", ADAPTIVE_CONFIDENCE))


def _threshold_note(trace: Trace, rnd: Round) -> str:
    """Why a round under the threshold rule drafted fewer than K (its last draft is not EOS and tokens were left)."""
    settings = trace.settings
    if not stopped_by_threshold(trace, rnd):
        return ""
    threshold = settings.get("confidence", ADAPTIVE_CONFIDENCE)
    product = f"{threshold_product(trace, rnd)}, below" if threshold_product(trace, rnd) else "fell below"
    return (f" With adaptive K it stopped at {rnd.k} of at most {settings.get('k')}: the product of the "
            f"draft's own probabilities of its drafts at temperature 1 (not the warped q on the cards), {product} "
            f"{threshold:g}. That product is the draft's own estimate that all of them survive, not the chance "
            f"that the target accepts them.")


def _product_text(factors: list[float], threshold: float) -> str:
    """'0.91 × 0.26 = 0.237' with just enough digits that the printed factors' product, and the printed product,
    both fall below the threshold as the run's did (all factors shown up to six, else the first two and the last)."""
    for digits in range(3, 10):
        shown = [float(f"{f:.{digits}g}") for f in factors]
        if math.prod(shown) < threshold and float(f"{math.prod(factors):.{digits}g}") < threshold:
            break
    said = [f"{f:.{digits}g}" for f in factors]
    listed = " × ".join(said) if len(said) <= 6 else f"{said[0]} × {said[1]} × … × {said[-1]}"
    return f"{listed} = {math.prod(factors):.{digits}g}"


def _proposed(trace: Trace, rnd: Round) -> str:
    drafted = ", ".join(quoted(d.text) for d in rnd.drafts)
    spec = trace.drafter_spec
    said = spec.proposed(rnd.k, drafted, escape(trace.draft_model))
    return said + (_adaptive_note(trace, rnd) if spec.has_draft_cache else "")  # adaptive K reads a draft model


def _explain_drafts(trace: Trace, rnd: Round) -> list[str]:
    greedy = trace.greedy
    parts = [f"{_proposed(trace, rnd)} The target scored all of them in <b>one</b> forward pass, giving p at every "
             f"position."]
    if greedy:
        parts.append("At temperature 0 both distributions are one-hot, so a draft token is accepted exactly "
                     "when it is also the target's top choice; no random draw is involved.")
    return parts + (_clean_sweep(rnd, greedy) if rnd.next_kind == BONUS else
                    _rejection(rnd, greedy, cut_by(trace.settings)))


def _explain_tree(trace: Trace, rnd: Round) -> str:
    """A tree round in words: how it was drafted, scored and walked (the drawing and the verdicts show the rest)."""
    t, greedy = rnd.tree, trace.greedy
    distinct = trace.drafter_spec.distinct and not greedy
    rule = ("a child survives when it is the target's top token" if greedy else
            "each child is tested in turn with min(1, p′/q′), where q′ is q without the earlier siblings' tokens, "
            "renormalised (what the child was really drawn from), p′ is p for the first child and, after a rejected "
            "sibling, the residual norm(max(0, p′ − q′)) it left" if distinct else
            "each child is tested in turn with min(1, p′/q), where p′ is p for the first child and, after a "
            "rejected sibling, the residual norm(max(0, p′ − q)) it left")
    how = ("its top tokens" if greedy else "drawn without replacement, so siblings are distinct" if distinct
           else "independent draws, so some repeat")
    return (f"{trace.drafter_spec.tree_said}: {_tree_shape(t, rnd.k, greedy, how)}. The "
            f"target scored every node in <b>one</b> forward pass: a tree attention mask lets each node see only the "
            f"prefix and its own ancestors, and its position is the prefix length plus its depth. Walking from the "
            f"root, {rule}; at most one child per node survives, so the accepted nodes form one path, here "
            f"{rnd.n_accepted} long. That keeps the output distributed as the target's own (in exact arithmetic)."
            + ("" if greedy or distinct else _duplicates_note(rnd)))


def _tree_shape(t: TreeRecord, k: int, greedy: bool, how: str) -> str:
    """How the round's tree was shaped: its widths per depth, or grown where the draft's path probabilities were
    highest within its budget."""
    if not t.shaped:
        widths = ", ".join(map(str, t.widths))
        return (f"{widths} {'children' if greedy else 'samples from q'} per node at depths 1 to {t.deepest} ({how}), "
                f"{k} nodes in all")
    return (f"a shaped tree of {k} nodes, {t.deepest} deep, grown where the draft's own path probabilities (its "
            f"{'probabilities at temperature 1' if greedy else 'q'} multiplied along each path) were highest, within "
            f"a budget of {t.budget} nodes: each depth drew, one child at a time, the best candidate left (a node's "
            f"path probability × the likeliest token left there), each depth at most its share of the nodes left, "
            f"none below {SHAPED_FLOOR:.0%} of the root's ({how}), every child decided before it was drawn and "
            f"kept once drawn")


def _duplicates_note(rnd: Round) -> str:
    """Why a sampled tree holds the same token twice under one node, when it does."""
    t, seen, twice = rnd.tree, set(), []
    for i, parent in enumerate(t.parents[1:], start=1):
        key = (parent, rnd.drafts[i - 1].token_id)
        if key in seen and key not in twice:
            twice.append(key)
        seen.add(key)
    if not twice:
        return ""
    parent, token = twice[0]
    text = next(d.text for d in rnd.drafts if d.token_id == token)
    where = "the root" if parent == 0 else f"node {parent}"
    more = "" if len(twice) == 1 else f", and {len(twice) - 1} more pair{'s' * (len(twice) > 2)} elsewhere"
    return (f" Some nodes repeat ({quoted(text)} twice under {where}{more}): each child is an independent draw "
            f"from q, and a peaked q draws its favourite again. A repeat adds no chance of acceptance: a token is "
            f"rejected only where p &lt; q, and there the residual max(0, p − q) leaves it no mass, so its twin "
            f"fails for certain. A greedy tree, whose children are the top tokens, never repeats.")


def _clean_sweep(rnd: Round, greedy: bool) -> list[str]:
    k, t = rnd.k, rnd.next_token
    if k == 1:
        why = "It was the target's top token" if greedy else "The draw r fell below min(1, p/q)"
        kept = "so it was accepted"
    else:
        why = "Each was the target's top token" if greedy else "Every draw r fell below min(1, p/q)"
        kept = f"so all {k} were accepted"
    if not rnd.next_kept:  # the accepted drafts end with the end-of-sequence token
        return [f"{why}, {kept}, the last being the end of the text. Nothing after the end is kept: the bonus the "
                f"same pass offered, {quoted(t.text)}, is dropped."]
    return [f"{why}, {kept}. The same target pass had already computed the distribution for the next position, so "
            f"a <b>bonus</b> token {quoted(t.text)} came free from p."]


def _rejection(rnd: Round, greedy: bool, cut: str = "") -> list[str]:
    k, n, d = rnd.k, rnd.n_accepted, rnd.drafts[rnd.n_accepted]
    unseen = k - n - 1
    discarded = ("." if not unseen else ", and the one token after it was discarded unseen." if unseen == 1 else
                 f", and the {unseen} tokens after it were discarded unseen.")
    passed = "matched the target" if greedy else "passed the test (r below min(1, p/q))"
    parts = [] if not n else [f"The first {passed} and was accepted."] if n == 1 else [
        f"The first {n} {passed} and were accepted."]
    if greedy:
        parts.append(f"At position {n + 1} the draft's {quoted(d.text)} is not the target's top token, so it was "
                     f"<b>rejected</b>{discarded} In its place the target's top token {quoted(rnd.next_token.text)} "
                     f"was taken: at temperature 0 the residual norm(max(0, p − q)) is a point mass on it.")
        return parts
    p, q, ratio, r = verdict_numbers(d.p, d.q, d.uniform, accepted=False)
    parts.append(f"At position {n + 1} the target gave {quoted(d.text)} p = {p} against the draft's q = {q}, so it "
                 f"could keep it with probability min(1, p/q) = {ratio}{escape(zero_note(d.p, cut))}; the draw "
                 f"r = {r} was too high, so it was <b>rejected</b>{discarded}")
    parts.append(f"In its place the target sampled {quoted(rnd.next_token.text)} from the residual "
                 f"norm(max(0, p − q)). Rejections happen where the draft spent more probability than the target "
                 f"(q &gt; p); the residual gives that mass back to the tokens where p exceeds q, so the output is "
                 f"distributed as if the target had generated alone (exactly so in exact arithmetic; in floating "
                 f"point, rounding can still tip a draw that lands within rounding of min(1, p/q)).")
    return parts

"""A tree round as HTML: the drafted tree drawn as nested lists (each node its token with p and q, the accepted path
marked, rejected nodes struck through, nodes never tested greyed), the verdicts along the path, what the two KV
caches kept, and the tokens this pass gave against a chain drafting as many tokens.

Pure functions of a Round with a TreeRecord (trace.py; no gradio, no models). Token text goes through
token_text.token_html, so it is escaped. In quiz mode everything that tells the verdict carries the round's one reveal
step (record/quiz_data.py: a tree round is revealed at once).
"""

from __future__ import annotations

import math
from html import escape
from typing import Callable

from specviz.drafters import Drafter
from specviz.settings.bounds import widths_text
from specviz.record.quiz_data import reveal_steps
from specviz.view.token_text import quoted, token_html
from specviz.view.style import (DISTINCT_SAID, FATES, RESIDUAL_SAID, e_formula, num, tested_residual,
                                verdict_numbers)
from specviz.algorithm.theory import expected_tokens_per_pass
from specviz.record.trace import ACCEPTED, BONUS, DISCARDED, REJECTED, REPLACEMENT, Round, Trace, TreeRecord


def _kids(rnd: Round) -> list[list[int]]:
    parents = rnd.tree.parents
    return [[c for c in range(1, len(parents)) if parents[c] == u] for u in range(len(parents))]


def proposer(spec: Drafter) -> Callable[[int], str] | None:
    """Who proposed a tree's node at depth d + 1, as the drafter says it (Medusa heads: head d + 1, from the target's
    own state); None for a drafter that says nothing (a draft model's tree: the draft proposed every node)."""
    return spec.card_said


def shape_text(t: TreeRecord, nodes: int) -> str:
    """A tree round's shape in a head or a line: 'tree 2-2-1 (15 nodes)', or 'a shaped tree of 12 nodes, 4 deep'."""
    if t.shaped:
        return f"a shaped tree of {nodes} nodes, {t.deepest} deep"
    return f"tree {widths_text(t.widths)} ({nodes} nodes)"


def tree_card(trace: Trace, index: int) -> str:
    """The round's tree, root first, with a caption that says how to read it (and, where the drafter says who
    proposed each depth, who did: on each node and in the caption; in a shaped tree, why each node was grown)."""
    rnd = trace.rounds[index]
    t, kids, step = rnd.tree, _kids(rnd), reveal_steps(rnd)
    said, greedy = proposer(trace.drafter_spec), trace.greedy
    qs = node_qs(rnd, trace.drafter_spec.distinct, greedy)
    root = (f'<span class="sv-tree-node sv-tree-root" title="the root: the last committed token">'
            f'{token_html(t.root_text)}</span>')
    title = (f"The draft tree, shaped this round: {rnd.k} nodes, {t.deepest} deep, within a budget of {t.budget}"
             if t.shaped else f"The draft tree {widths_text(t.widths)}: {rnd.k} nodes, {t.deepest} deep")
    return (f'<div class="sv-tree" data-step="{step}"><div class="sv-panel-title">{title}, scored in one target '
            f'pass</div><ul class="sv-tree-list"><li>{root}{_subtree(rnd, 0, kids, step, said, greedy, qs)}</li></ul>'
            f'<div class="sv-muted sv-tree-key">Each node: its token, then p (target) and q (draft) of it, both '
            f'read where it was drafted{_path_key(t, greedy)}. {FATES[ACCEPTED].icon} on the accepted path · '
            f'{FATES[REJECTED].icon} tested and rejected · greyed: never tested.{_depths(t.deepest, said)}</div></div>')


def _path_key(t: TreeRecord, greedy: bool) -> str:
    """The caption's words on a shaped tree's path probabilities: ', then its path probability …'; '' otherwise."""
    if not t.shaped:
        return ""
    before = "" if greedy else " (each q as the draft gave it, before a node's earlier children were taken out)"
    return (f", then its path probability: {_along(greedy)}, multiplied{before}. The tree grew, depth by depth, "
            f"where those were highest, within its budget of {t.budget} nodes")


def _along(greedy: bool) -> str:
    """What a shaped tree's path probability multiplies, in words."""
    return ("the draft's own probabilities along its path (at temperature 1: at 0 its q is one-hot)" if greedy else
            "the draft's own q along its path")


def _depths(depths: int, said) -> str:
    """' Depth 1: Proposed by head 1, from …' for each depth, where the drafter says who proposed it; else ''."""
    if said is None:
        return ""
    return "".join(f'<span class="sv-tree-depth"> Depth {d + 1}: {escape(said(d))}.</span>' for d in range(depths))


def _subtree(rnd: Round, node: int, kids: list[list[int]], step: int, said, greedy: bool, qs: list[float]) -> str:
    if not kids[node]:
        return ""
    items = "".join(f'<li>{_node(rnd, c, step, said, greedy, qs[c - 1])}'
                    f'{_subtree(rnd, c, kids, step, said, greedy, qs)}</li>' for c in kids[node])
    return f'<ul>{items}</ul>'


def drawn_q(tested: list[float]) -> list[float]:
    """Distinct siblings' q where they were drawn, from the q′ each was tested against, in the order tested. Each
    sibling's test used q without the siblings before it, renormalised (algorithm/tree.py's `without`): q′(x_k) =
    q(x_k) / (1 − Σ_{j<k} q(x_j)), and 1 − Σ_{j<k} q(x_j) = Π_{j<k} (1 − q′(x_j)), so q(x_k) = q′(x_k) · Π_{j<k}
    (1 − q′(x_j)).

    >>> drawn_q([0.5, 0.5, 1.0])   # q = (0.5, 0.25, 0.25): tested against 0.5, 0.25 / 0.5, 0.25 / 0.25
    [0.5, 0.25, 0.25]
    """
    out, left = [], 1.0
    for q in tested:
        out.append(q * left)
        left *= 1.0 - q
    return out


def node_qs(rnd: Round, distinct: bool, greedy: bool) -> list[float]:
    """Each drafted node's q where it was drafted, breadth-first. A node's recorded q is what its test compared with:
    in a sampled tree of distinct siblings, after a rejected sibling, q′ (q without it, renormalised), which its node
    must not print as its q (issue 64: two siblings' q added to 1.21). The tested siblings come first, in order."""
    qs = [d.q for d in rnd.drafts]
    if distinct and not greedy:
        for kids in _kids(rnd):
            tested = [c for c in kids if rnd.drafts[c - 1].fate != DISCARDED]
            for c, q in zip(tested, drawn_q([rnd.drafts[c - 1].q for c in tested])):
                qs[c - 1] = q
    return qs


def _node(rnd: Round, i: int, step: int, said=None, greedy: bool = False, q: float | None = None) -> str:
    """Node i: its token, fate icon and p, q (`q`: its q where drafted, node_qs; else the recorded one); its title says
    all that and, where the drafter says it, who proposed it (a heads tree: the head of its depth). That line tells
    nothing of the verdict, so a quiz may show it before; nor does a shaped tree's why, which stays shown (its own
    title, no reveal step)."""
    d = rnd.drafts[i - 1]
    s = FATES[d.fate]
    q = d.q if q is None else q
    who = f"\n{said(rnd.tree.depth[i] - 1)}" if said else ""
    title = f"node {i}: {s.label} {s.icon}\np (target) = {num(d.p)}   q (draft) = {num(q)}{who}"
    why = ""
    if rnd.tree.shaped:
        formula, sentence = grown_why(rnd, i, greedy)
        why = f'<small class="sv-tree-why" title="{escape(sentence)}">{escape(formula)}</small>'
    return (f'<span class="sv-tree-node sv-tree-{d.fate}" data-step="{step}" title="{escape(title)}">'
            f'{token_html(d.text)}<sup class="sv-icon sv-verdict" data-step="{step}">{s.icon}</sup>'
            f'<small class="sv-tree-pq">p {num(d.p)} · q {num(q)}</small>{why}</span>')


def grown_why(rnd: Round, i: int, greedy: bool) -> tuple[str, str]:
    """Why a shaped tree's node i was grown, in terms known before any verdict: (the formula shown on the node,
    'path 0.42 = 0.81 × 0.52', and the sentence its title says: that path probability worked out from the factors
    printed, and that the node was among the best within the round's budget)."""
    t = rnd.tree
    factors, score = product_shown(t.path_factors(i))
    worked = f" = {' × '.join(factors)}" if len(factors) > 1 else ""
    what = (_along(greedy) if len(factors) > 1 else
            f"the draft's own {'probability (at temperature 1)' if greedy else 'q'} of it at the root")
    sentence = (f"Grown for its path probability {score}{worked}, {what}: when depth {t.depth[i]} grew, its parent's "
                f"next child was the best candidate left (the parent's path probability × the likeliest token left "
                f"there), among the best within the budget of {t.budget} nodes.")
    return f"path {score}{worked}", sentence


def product_shown(factors: list[float]) -> tuple[list[str], str]:
    """The factors and their product as printed, with just enough figures that the printed factors, multiplied and
    rounded as the product is, give the printed product: ([0.81, 0.52]) -> (['0.81', '0.52'], '0.42')."""
    score = math.prod(factors)
    for figures in (0, 3, 4, 5, 6):
        print_ = num if not figures else (lambda x, f=figures: f"{x:#.{f}g}")
        shown = [print_(f) for f in factors]
        if print_(math.prod(float(x) for x in shown)) == print_(score):
            return shown, print_(score)
    return [repr(f) for f in factors], repr(score)


def path_verdicts(trace: Trace, index: int) -> str:
    """Each tested node in the order the walk tested it: its test, then the round's last token."""
    rnd = trace.rounds[index]
    greedy = trace.greedy
    spec = trace.drafter_spec
    said = proposer(spec)
    rows = [f'<li>{quoted(rnd.drafts[i - 1].text)}{_who(rnd, i, said)} '
            f'{escape(_test_text(rnd, i, greedy, spec.distinct))}</li>' for i in _tested_order(rnd)]
    t = rnd.next_token
    if rnd.next_kind == REPLACEMENT:
        where = "every child of the path's last node" if rnd.tree.path else "every child of the root"
        last = (f"{where} was rejected, so the replacement {quoted(t.text)} was "
                + ("the target's top token there." if greedy else
                   f"sampled from the last residual (its probability there {num(t.residual)})."))
    else:
        last = (f"the path reached a leaf, so the bonus {quoted(t.text)} came from p after it (p = {num(t.p)})"
                + ("" if rnd.next_kept else "; not kept: the run ended before it") + ".")
    rows.append(f'<li>{FATES[rnd.last_kind].icon} {last}</li>')
    return (f'<div class="sv-tree-verdicts sv-verdict" data-step="{reveal_steps(rnd)}"><b>Verdicts along the '
            f'path</b><ol>{"".join(rows)}</ol></div>')


def _who(rnd: Round, i: int, said) -> str:
    """' (proposed by head 2, from …)' after node i's token, where the drafter says who proposed it; else ''."""
    if said is None:
        return ""
    line = said(rnd.tree.depth[i] - 1)
    return f' <span class="sv-tree-from">— {escape(line[:1].lower() + line[1:])} —</span>'


def _tested_order(rnd: Round) -> list[int]:
    """The nodes the walk tested: at the root, then at each accepted node, its children up to the accepted one."""
    kids, out = _kids(rnd), []
    for node in [0, *rnd.tree.path]:
        out += [c for c in kids[node] if rnd.drafts[c - 1].fate != DISCARDED]
    return out


def _test_text(rnd: Round, i: int, greedy: bool, distinct: bool = False) -> str:
    d, p_test = rnd.drafts[i - 1], rnd.tree.test_p[i - 1]
    ok = d.fate == ACCEPTED
    if greedy:
        return "is the target's top token → accept" if ok else "is not the target's top token → reject"
    residual = (DISTINCT_SAID if distinct else RESIDUAL_SAID) if tested_residual(d, p_test) else ""
    p, q, ratio, r = verdict_numbers(d.p if p_test is None else p_test, d.q, d.uniform, ok)
    return f"r = {r} {'<' if ok else '≥'} min(1, {p}/{q}) = {ratio}{residual} → {'accept' if ok else 'reject'}"


def tree_against_chain(trace: Trace, index: int) -> str:
    """The tokens this pass gave, beside a chain drafting as many tokens per round, by the named formula at the
    run's measured acceptance rate (the tree's α counts every tested node, so this compares orders of magnitude,
    not a measured chain)."""
    rnd, s = trace.rounds[index], trace.summary
    alpha = float(num(s.acceptance_rate)) if s else 0.0  # as printed, so E redone from the α shown gives the figure
    chain = expected_tokens_per_pass(alpha, rnd.k)
    same_depth = expected_tokens_per_pass(alpha, rnd.tree.deepest)
    return (f'<div class="sv-tree-vs sv-answer" data-step="{reveal_steps(rnd)}">This tree drafted {rnd.k} tokens '
            f'and its pass gave <b>{rnd.tokens_this_pass}</b>; the run averaged '
            f'{num(s.tokens_per_pass if s else 0.0)} tokens per target pass. By the chain\'s formula '
            f'E = {e_formula(alpha)} at this run\'s α = {num(alpha)} (accepted over tested nodes), a '
            f'chain gives {num(same_depth)} tokens per pass with K = {rnd.tree.deepest} (as many draft passes '
            f'as this tree) and {num(chain)} with K = {rnd.k} (as many drafted tokens), but that chain pays '
            f'{rnd.k} draft steps and a verify pass over {rnd.k + 1} tokens for them: tokens per pass alone do not '
            f'say which is faster.</div>')


def tree_cache(trace: Trace, index: int) -> str:
    """What the round wrote to each KV cache and what it kept: the accepted path's entries, picked out."""
    rnd = trace.rounds[index]
    if rnd.cache is None:
        return ""
    d, t = rnd.cache.draft, rnd.cache.target
    kept = len(rnd.committed_ids) - 1  # the committed path nodes a cache holds: all but the last committed token
    leaf = rnd.next_kind == BONUS and kept == rnd.n_accepted  # the path's last node, a leaf, was never fed the draft
    return (f'<div class="sv-cache sv-cache-note">KV caches: the target\'s pass wrote {t[2] - t[0]} positions (every '
            f'node and what its cache lacked), the draft\'s passes {d[1] - d[0]} (what its cache lacked and every node '
            f'but the leaves). Each then kept its prefix, the root and the committed path nodes it held ({kept} in '
            f'the target{"; the draft never fed the leaf that ends the path" if leaf and kept else ""}): not a crop '
            f'from the end, since the path\'s nodes are scattered among their siblings, but an index-select that '
            f'moves them next to the prefix (target {t[2]} → {t[3]} positions, draft {d[1]} → {d[3]}).</div>')

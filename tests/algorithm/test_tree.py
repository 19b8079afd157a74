"""The tree's shape and its verification rule (specviz/algorithm/tree.py), on toy distributions: no models.

The statistical proof: p(. | prefix) and q(. | prefix) are fixed random tables over a 4-token vocabulary. A
whole tree round (children sampled i.i.d. from q at every node, p looked up per node, verify_tree) is repeated,
round after round, until three tokens are committed, N_RUNS times (seeded); the committed tokens must follow the
target alone, p(a) p(b|a) p(c|ab), by a chi-squared test. A wrong rule (children tested against the unchanged p)
must fail the same test.

Thresholds: the runs are seeded, so each test is deterministic; a correct rule passes when the chi-squared
p-value is above 1e-3 (a 0.1% false alarm rate if the seed were random), and a negative control must reach a
p-value below 1e-6. Cells whose expected count is under 5 are pooled into one, as the test's approximation needs.

Why these N (each test's statistic and p printed at N = 2 000 to 20 000 on 2026-12-02; each run is a Python loop, so
the time is linear in N): at N_RUNS = 4 000 the correct rules pass with p = 0.22, 0.89, 0.71 (first 1, 2, 3 tokens)
and 0.33 (distinct siblings), and the wrong sibling rule fails with p = 1e-107 (chi2 = 550 on 15 dof). Distinct
siblings tested as if i.i.d. differ less from the target: chi2 = 52 on 12 dof (p = 7e-7) at 4 000, so that control
runs N_DISTINCT_CONTROL = 8 000 (chi2 = 107 on 14 dof, p = 2e-16; it grows linearly with N, 270 at 20 000). The
width-1 homogeneity test: p = 0.40 at 4 000 rounds each (0.12 at 10 000).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch
from scipy import stats

from specviz.algorithm.sampling import sample, verify
from specviz.record.trace import ACCEPTED, BONUS, DISCARDED, REJECTED, REPLACEMENT
from specviz.algorithm.tree import MAX_TREE_NODES, TreeShape, check_widths, parse_widths, sample_distinct, verify_tree
from tests.helpers import _test_against_unchanged_p

V = 4
N_RUNS = 4_000
N_DISTINCT_CONTROL = 8_000
PASS_P, FAIL_P = 1e-3, 1e-6


class Toy:
    """p(. | prefix) and q(. | prefix) as fixed random tables: the row for a prefix is drawn once, from a seed made
    of the prefix itself, so it does not depend on the order prefixes are asked for."""

    def __init__(self, salt: int, concentration: float = 1.5, vocab: int = V):
        self.salt, self.alpha, self.vocab = salt, concentration, vocab
        self.rows: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}

    def rows_for(self, prefix: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        if prefix not in self.rows:
            rng = np.random.default_rng([self.salt, len(prefix), *prefix])
            p, q = rng.dirichlet([self.alpha] * self.vocab, size=2)
            self.rows[prefix] = torch.tensor(p, dtype=torch.float32), torch.tensor(q, dtype=torch.float32)
        return self.rows[prefix]

    def exact(self, n: int) -> dict[tuple, float]:
        """The target alone's probability of every n-token continuation of the empty prefix."""
        out = {(): 1.0}
        for _ in range(n):
            out = {s + (t,): pr * float(self.rows_for(s)[0][t]) for s, pr in out.items() for t in range(self.vocab)}
        return out


def draft_round(toy: Toy, prefix: tuple, tree: TreeShape, gen: torch.Generator, greedy: bool = False,
                distinct: bool = False):
    """Sample the tree's children depth by depth (i.i.d. from q, without replacement when `distinct`, or q's top-w at
    greedy): (tokens, P, Q) per node."""
    tokens, ctx = [prefix[-1] if prefix else 0], [prefix]
    P, Q = [toy.rows_for(prefix)[0]], [toy.rows_for(prefix)[1]]
    for d, w in enumerate(tree.widths, start=1):
        parents = list(tree.level(d - 1))
        rows = torch.stack([Q[u] for u in parents])
        kids = (torch.topk(rows, w).indices if greedy else sample_distinct(rows, w, gen) if distinct else
                sample(rows.repeat_interleave(w, 0), gen))
        tokens.extend(kids.flatten().tolist())  # breadth-first: parent by parent, w children each
        for i in tree.level(d):
            ctx.append(ctx[tree.parents[i]] + (tokens[i],))
            p_i, q_i = toy.rows_for(ctx[i])
            P.append(p_i)
            Q.append(q_i)
    P = torch.stack(P)
    if greedy:
        P = torch.nn.functional.one_hot(P.argmax(-1), toy.vocab).float()
    return tokens, P, torch.stack(Q)


def first_tokens(toy: Toy, tree: TreeShape, n: int, seed: int, verifier=verify_tree, greedy: bool = False,
                 distinct: bool = False):
    """Tree rounds from the empty prefix until n tokens are committed; the first n."""
    gen = torch.Generator().manual_seed(seed)
    out: tuple = ()
    while len(out) < n:
        tokens, P, Q = draft_round(toy, out, tree, gen, greedy, distinct)
        v = verifier(tree, tokens, P, Q, gen, greedy=greedy)
        out += tuple(tokens[i] for i in v.path) + (v.next_token,)
    return out[:n]


def chi_square(counts: dict[tuple, int], expected_probs: dict[tuple, float], n: int):
    """(statistic, degrees of freedom, p-value) with cells of expected count < 5 pooled into one."""
    keys = sorted(expected_probs)
    obs = np.array([counts.get(k, 0) for k in keys], dtype=float)
    exp = np.array([expected_probs[k] for k in keys])
    exp *= n / exp.sum()  # the float32 tables sum to 1 only to rounding
    assert sum(counts.values()) == n and set(counts) <= set(keys)
    small = exp < 5
    if small.any():
        obs = np.append(obs[~small], obs[small].sum())
        exp = np.append(exp[~small], exp[small].sum())
    stat, pval = stats.chisquare(obs, exp)
    return float(stat), len(obs) - 1, float(pval)


def committed_counts(toy, tree, n_tokens, runs=N_RUNS, verifier=verify_tree, distinct=False):
    counts: dict[tuple, int] = {}
    for seed in range(runs):
        key = first_tokens(toy, tree, n_tokens, seed, verifier, distinct=distinct)
        counts[key] = counts.get(key, 0) + 1
    return counts


# --- the shape -----------------------------------------------------------------------------------------------

def test_shape_breadth_first_with_parents_and_depths():
    t = TreeShape((2, 2, 1, 1))
    assert t.n_nodes == 1 + 2 + 4 + 4 + 4 and t.max_depth == 4
    assert t.parents[:7] == (-1, 0, 0, 1, 1, 2, 2) and t.depth[:7] == (0, 1, 1, 2, 2, 2, 2)
    assert [list(t.level(d)) for d in range(5)] == [[0], [1, 2], [3, 4, 5, 6], [7, 8, 9, 10], [11, 12, 13, 14]]
    assert t.children(0) == [1, 2] and t.children(6) == [10] and t.children(14) == []
    assert t.path_to(14) == [0, 2, 6, 10, 14]
    assert all(t.parents[i] < i and t.depth[i] == t.depth[t.parents[i]] + 1 for i in range(1, t.n_nodes))
    seen = t.ancestry()
    assert seen[14].nonzero().flatten().tolist() == [0, 2, 6, 10, 14]
    assert not seen[3, 4] and not seen[1, 2] and seen.diagonal().all()


def test_width_one_is_the_chain():
    t = TreeShape((1, 1, 1))
    assert t.parents == (-1, 0, 1, 2) and t.depth == (0, 1, 2, 3)


@pytest.mark.parametrize("widths, message", [
    ((5,), "width at depth 1 must be a whole number from 1 to 4, got 5"),
    ((2, 0), "width at depth 2 must be a whole number from 1 to 4, got 0"),
    ((1,) * 7, "depth .* from 1 to 6, got 7"),
    ((), "depth .* got 0"),
    ((4, 4, 4), "drafts 84 nodes; at most 32"),
    ((2, 2, 2, 2, 2), "drafts 62 nodes"),
    ((1.5,), "got 1.5"),
    ((True,), "got True"),
    ("22", "sequence of whole numbers"),
])
def test_bad_widths_get_a_clear_message(widths, message):
    with pytest.raises(ValueError, match=message):
        TreeShape(widths)


def test_largest_allowed_trees():
    assert TreeShape((2, 2, 2, 2)).n_nodes - 1 == 30 <= MAX_TREE_NODES
    assert TreeShape((4, 4)).n_nodes - 1 == 20 and TreeShape((1,) * 6).n_nodes - 1 == 6
    assert check_widths([2.0, 1]) == (2, 1)


def test_parse_widths():
    assert parse_widths("2-2-1-1") == parse_widths("2, 2, 1, 1") == parse_widths(" 2 2 1 1 ") == (2, 2, 1, 1)
    for bad in ("", "2-x", "2--1.5", "-"):
        with pytest.raises(ValueError, match="like 2-2-1-1"):
            parse_widths(bad)


# --- the rule on hand-built distributions: certain outcomes --------------------------------------------------

def _two_level(p_rows, q_rows, tokens, widths=(3,)):
    tree = TreeShape(widths)
    return tree, torch.tensor(tokens), torch.tensor(p_rows), torch.tensor(q_rows)


def test_residual_between_siblings_rejects_what_the_original_p_would_accept():
    """p = [0, .6, .4, 0], q = [.5, .5, 0, 0], children 0, 0, 1 (duplicates, as i.i.d. children may be).
    Child 1 (token 0): p(0) = 0, rejected; p <- norm(max(0, p - q)) = [0, .2, .8, 0].
    Child 2 (token 0 again): p(0) = 0, rejected; p <- norm([0, 0, .8, 0]) = [0, 0, 1, 0].
    Child 3 (token 1): against the original p it would pass (min(1, .6/.5) = 1); against the residual, p(1) = 0.
    All rejected: the replacement comes from the last residual, norm(max(0, [0, 0, 1, 0] - q)) = token 2."""
    p0, q0 = [0, .6, .4, 0], [.5, .5, 0, 0]
    tree, tokens, p, q = _two_level([p0] + [[.25] * 4] * 3, [q0] + [[.25] * 4] * 3, [3, 0, 0, 1])
    for seed in range(20):
        v = verify_tree(tree, tokens, p, q, torch.Generator().manual_seed(seed))
        assert v.path == [] and v.next_kind == REPLACEMENT and v.next_token == 2
        assert v.fates == [None, REJECTED, REJECTED, REJECTED]
        assert v.accept_probs[1:] == [0.0, 0.0, 0.0] and v.test_p[1:] == pytest.approx([0.0, 0.0, 0.0])
        assert v.residual.tolist() == [0, 0, 1, 0]
        assert all(0 <= r < 1 for r in v.uniforms[1:])


def test_accept_probabilities_follow_the_residual():
    """Child 1 token 0: min(1, .5/.8) = .625. If rejected, the residual is norm([0, .2, .1, 0]) = [0, 2/3, 1/3, 0]
    and child 2 (token 1) is tested with min(1, (2/3)/.1) = 1: accepted for sure."""
    tree, tokens, p, q = _two_level([[.5, .3, .2, 0]] + [[.25] * 4] * 2, [[.8, .1, .1, 0]] + [[.25] * 4] * 2,
                                    [0, 0, 1], widths=(2,))
    outcomes = set()
    for seed in range(60):
        v = verify_tree(tree, tokens, p, q, torch.Generator().manual_seed(seed))
        assert v.accept_probs[1] == pytest.approx(0.625) and v.next_kind == BONUS
        if v.fates[1] == REJECTED:
            assert v.uniforms[1] >= 0.625 and v.path == [2] and v.fates[2] == ACCEPTED
            assert v.test_p[2] == pytest.approx(2 / 3) and v.accept_probs[2] == 1.0
        else:
            assert v.uniforms[1] < 0.625 and v.path == [1] and v.fates[2] == DISCARDED and v.uniforms[2] is None
        outcomes.add(tuple(v.path))
    assert outcomes == {(1,), (2,)}


def test_walk_descends_and_marks_unexamined_subtrees_discarded():
    """p one-hot on token 1 after the root and on token 2 after [1]; the children 0 then 1 at depth 1, and 2
    below each: child 1 (token 0) is certainly rejected, child 2 (token 1) certainly accepted, then its child."""
    tree = TreeShape((2, 1))  # nodes: 0 root; 1, 2; 3 (under 1), 4 (under 2)
    tokens = torch.tensor([3, 0, 1, 2, 2])
    one = torch.eye(4)
    p = torch.stack([one[1], one[3], one[2], one[0], one[0]])
    q = torch.stack([torch.tensor([.5, .5, 0, 0]), one[2], one[2], one[0], one[0]])
    v = verify_tree(tree, tokens, p, q, torch.Generator().manual_seed(0))
    assert v.path == [2, 4] and v.next_kind == BONUS and v.next_token == 0  # the bonus from p at node 4
    assert v.fates == [None, REJECTED, ACCEPTED, DISCARDED, ACCEPTED]
    assert v.accept_probs[3] is None and v.uniforms[3] is None and v.residual is None


def test_residual_all_zero_by_rounding_falls_back_to_p():
    """q above p everywhere (as rounding can leave it): max(0, p - q) is all zero, so the rule falls back to the
    current p, like sampling.verify; the replacement is a token p allows, never an out-of-vocabulary id."""
    p0 = torch.tensor([0.0, 0.5, 0.5, 0.0])
    tree, tokens, p, q = _two_level([p0.tolist(), [.25] * 4], [(p0 * 1.5).tolist(), [.25] * 4], [0, 1], widths=(1,))
    rejected = 0
    for seed in range(100):
        v = verify_tree(tree, tokens, p, q, torch.Generator().manual_seed(seed))
        if v.next_kind == REPLACEMENT:
            rejected += 1
            assert torch.equal(v.residual, p0) and v.next_token in (1, 2)
    assert rejected > 10  # accept probability 1/1.5: about a third are rejected


def test_greedy_survives_iff_the_target_top_token():
    tree = TreeShape((3, 1))
    one = torch.eye(4)
    tokens = torch.tensor([0, 2, 1, 3, 1, 1, 1])  # depth 1: 2, 1, 3 (distinct top-3 of the draft)
    p = torch.stack([one[1], one[0], one[1], one[0], one[0], one[0], one[0]])  # the target: 1 then 1
    v = verify_tree(tree, tokens, p, None, greedy=True)
    assert v.path == [2, 5] and v.next_kind == BONUS and v.next_token == 0
    assert v.fates == [None, REJECTED, ACCEPTED, DISCARDED, DISCARDED, ACCEPTED, DISCARDED]
    assert v.accept_probs[1:3] == [0.0, 1.0] and v.uniforms == [None] * 7
    p[2] = one[3]  # the target wants 3 after [1]; the draft's only child there is 1
    v = verify_tree(tree, tokens, p, None, greedy=True)
    assert v.path == [2] and v.next_kind == REPLACEMENT and v.next_token == 3 and v.residual is None


def test_shape_errors_are_value_errors():
    tree = TreeShape((2,))
    with pytest.raises(ValueError, match="verify_tree wants"):
        verify_tree(tree, [0, 1], torch.ones(3, 4) / 4, torch.ones(3, 4) / 4)
    with pytest.raises(ValueError, match="verify_tree wants"):
        verify_tree(tree, [0, 1, 2], torch.ones(3, 4) / 4, None)


# --- the statistical proof: whole tree rounds on fixed random tables ------------------------------------------

SHAPE = (2, 2, 1)  # two depths that branch (with duplicates among i.i.d. children: 4 tokens) and one that does not
TOY = Toy(salt=1)


@pytest.fixture(scope="module")
def real_counts():
    return committed_counts(TOY, TreeShape(SHAPE), 3)


def _marginal(counts: dict[tuple, int], n: int) -> dict[tuple, int]:
    out: dict[tuple, int] = {}
    for key, c in counts.items():
        out[key[:n]] = out.get(key[:n], 0) + c
    return out


@pytest.mark.parametrize("n_tokens", [1, 2, 3])
def test_committed_tokens_follow_the_target(real_counts, n_tokens):
    """The first n committed tokens of N_RUNS seeded runs against p(a), p(a) p(b|a), p(a) p(b|a) p(c|ab)."""
    stat, dof, pval = chi_square(_marginal(real_counts, n_tokens), TOY.exact(n_tokens), N_RUNS)
    print(f"tree {SHAPE}, first {n_tokens} token(s): chi2 = {stat:.1f}, dof = {dof}, p = {pval:.3g}")
    assert dof >= 4 ** n_tokens // 2 and pval > PASS_P


@pytest.mark.control
def test_negative_control_without_the_residual_between_siblings_fails():
    """Testing every child against the node's unchanged p over-accepts tokens the draft over-proposes."""
    counts = committed_counts(TOY, TreeShape(SHAPE), 2, verifier=_test_against_unchanged_p)
    stat, dof, pval = chi_square(counts, TOY.exact(2), N_RUNS)
    print(f"negative control, first 2 tokens: chi2 = {stat:.1f}, dof = {dof}, p = {pval:.3g}")
    assert pval < FAIL_P


def test_greedy_tree_commits_the_target_argmax_path():
    for salt in range(30):
        toy = Toy(salt, concentration=0.7)
        want = ()
        for _ in range(6):
            want += (int(toy.rows_for(want)[0].argmax()),)
        for widths in ((1, 1), (2, 2, 1), (3, 1, 1)):
            assert first_tokens(toy, TreeShape(widths), 6, seed=salt, greedy=True) == want


def _chain_outcomes(p, q, runs, use_tree):
    """(n accepted, next token) of `runs` chain rounds: sampling.verify, or verify_tree on widths (1, ..., 1)."""
    k = q.shape[0]
    tree, gen = TreeShape((1,) * k), torch.Generator().manual_seed(1 if use_tree else 2)
    q_nodes = torch.cat([q, torch.zeros(1, q.shape[1])])  # a leaf's q row is unused
    out = []
    for _ in range(runs):
        drafts = sample(q, gen)
        if use_tree:
            v = verify_tree(tree, [0] + drafts.tolist(), p, q_nodes, gen)
            out.append((v.n_accepted, v.next_token))
        else:
            v = verify(p, q, drafts, gen)
            out.append((v.n_accepted, v.next_token))
    return out


def test_width_one_gives_the_chain_distribution():
    """On fixed rows (no prefix dependence), the (accepted, next token) outcomes of verify_tree on a width-1
    tree and of sampling.verify are one distribution: a chi-squared test of homogeneity, N_RUNS rounds each."""
    p = torch.tensor([[0.60, 0.25, 0.10, 0.05, 0.00], [0.10, 0.10, 0.20, 0.30, 0.30],
                      [0.05, 0.05, 0.80, 0.05, 0.05], [0.20, 0.20, 0.20, 0.20, 0.20]])
    q = torch.tensor([[0.90, 0.02, 0.02, 0.02, 0.04], [0.40, 0.05, 0.05, 0.10, 0.40],
                      [0.10, 0.10, 0.60, 0.10, 0.10]])
    tree_out, chain_out = _chain_outcomes(p, q, N_RUNS, True), _chain_outcomes(p, q, N_RUNS, False)
    keys = sorted(set(tree_out) | set(chain_out))
    table = np.array([[tree_out.count(k) for k in keys], [chain_out.count(k) for k in keys]])
    table = table[:, table.sum(0) >= 10]  # cells too rare for the approximation
    stat, pval, dof, _ = stats.chi2_contingency(table)
    print(f"width 1 vs sampling.verify: chi2 = {stat:.1f}, dof = {dof}, p = {pval:.3g}")
    assert dof >= 8 and pval > PASS_P


# --- distinct siblings: drawn without replacement, verified by recursive rejection sampling ----------------------

PEAKED = Toy(salt=2, concentration=0.5)  # a peaked q draws its favourite again: where i.i.d. siblings repeat


def test_distinct_siblings_are_distinct_and_follow_the_target():
    gen = torch.Generator().manual_seed(0)
    kids = sample_distinct(torch.tensor([[0.7, 0.2, 0.1, 0.0], [1.0, 0.0, 0.0, 0.0]]), 3, gen)
    assert sorted(kids[0].tolist()) == [0, 1, 2] and kids[1].tolist() == [0, 0, 0]  # a spent q repeats, untested
    counts = committed_counts(PEAKED, TreeShape((3, 2)), 2, verifier=partial(verify_tree, distinct=True),
                              distinct=True)
    stat, dof, pval = chi_square(counts, PEAKED.exact(2), N_RUNS)
    print(f"distinct siblings (3, 2), first 2 tokens: chi2 = {stat:.1f}, dof = {dof}, p = {pval:.3g}")
    assert dof >= 8 and pval > PASS_P


@pytest.mark.control
def test_negative_control_distinct_siblings_tested_as_if_iid_fail():
    """Siblings drawn without replacement but each tested against the node's unchanged q (the i.i.d. rule)."""
    counts = committed_counts(PEAKED, TreeShape((3, 2)), 2, N_DISTINCT_CONTROL,
                              verifier=partial(verify_tree, distinct=False), distinct=True)
    stat, dof, pval = chi_square(counts, PEAKED.exact(2), N_DISTINCT_CONTROL)
    print(f"negative control, distinct siblings as if i.i.d.: chi2 = {stat:.1f}, dof = {dof}, p = {pval:.3g}")
    assert pval < FAIL_P


def test_a_spent_q_leaves_the_rest_untested():
    """q has one token: the second and third children (repeats) are never tested; the replacement comes from the
    residual after the first."""
    tree = TreeShape((3,))
    p = torch.tensor([[0.0, 1.0, 0.0, 0.0]] * 4)  # the target never takes token 0: the first child is rejected
    q = torch.tensor([[1.0, 0.0, 0.0, 0.0]] * 4)
    v = verify_tree(tree, [0, 0, 0, 0], p, q, torch.Generator().manual_seed(5), distinct=True)
    assert v.fates[1:] == [REJECTED, DISCARDED, DISCARDED] and v.test_q[1] == 1.0
    assert v.next_kind == REPLACEMENT and v.next_token == 1

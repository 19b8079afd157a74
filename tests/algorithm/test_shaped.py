"""algorithm/shaped.py: a tree grown per round where the draft's own path probabilities are highest. The budget and
the most depth hold, each node's score is its path's product of q, greedy growth takes the top tokens by path score,
a sampled child is a draw from q without its earlier siblings, and the decision to draw one more is taken before the
draw (the exactness argument in the module's docstring)."""

from __future__ import annotations

import doctest

import pytest
import torch

from specviz.algorithm import shaped
from specviz.algorithm.sampling import SamplingSettings
from specviz.algorithm.shaped import FLOOR, Growth, grow_tree


def test_the_modules_worked_example_holds():
    assert doctest.testmod(shaped).failed == 0


def random_step(vocab: int, seed: int):
    """A draft pass over a random model: each frontier node's logits depend on its path (its token and parent's)."""
    gen = torch.Generator().manual_seed(seed)
    table = torch.randn(vocab, vocab, generator=gen) * 2

    def step(growth: Growth) -> torch.Tensor:
        return torch.stack([table[growth.tokens[u]] + 0.1 * growth.depth[u] for u in growth.frontier()])
    return step


@pytest.mark.parametrize("budget, depth", [(1, 1), (3, 4), (16, 4), (16, 2), (32, 6)])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_the_budget_and_the_most_depth_hold(budget, depth, temperature):
    for seed in range(5):
        g = Growth(budget=budget, max_depth=depth, greedy=temperature == 0, root=3)
        tokens, q, shape = grow_tree(g, random_step(12, seed), SamplingSettings(temperature=temperature),
                                     torch.Generator().manual_seed(seed))
        assert 1 <= g.drafted <= budget and max(g.depth) <= depth
        assert len(tokens) == len(shape.parents) == q.shape[0] == g.drafted + 1 and tokens[0] == 3
        for node in range(1, len(tokens)):  # every node's children are distinct, and each score is its path's product
            parent = g.parents[node]
            siblings = [tokens[i] for i in range(1, len(tokens)) if g.parents[i] == parent]
            assert len(siblings) == len(set(siblings))
            assert g.scores[node] == pytest.approx(g.scores[parent] * g.factors[node])
            if temperature == 0:  # greedy: a node's value is its score (sampled: the most its draw could score)
                assert g.scores[node] >= FLOOR * g.scores[0] or node == 1


def test_greedy_growth_takes_the_top_tokens_by_path_score():
    """Depth 1 from the root's q: its top tokens in order; depth 2 under whichever path scores highest."""
    g = Growth(budget=4, max_depth=2, greedy=True, root=0)
    assert g.grow(torch.tensor([[0.05, 0.5, 0.3, 0.15]])) == [1, 2]  # a share of ⌈4 ÷ 2⌉ = 2 nodes
    assert [g.tokens[i] for i in (1, 2)] == [1, 2] and g.scores[1:] == pytest.approx([0.5, 0.3])
    # under node 1 (0.5): 0.5 × 0.4 = 0.20, 0.5 × 0.35 = 0.175; under node 2 (0.3): 0.3 × 0.9 = 0.27 first
    g.grow(torch.tensor([[0.05, 0.2, 0.35, 0.4], [0.9, 0.05, 0.03, 0.02]]))
    assert [(g.parents[i], g.tokens[i]) for i in (3, 4)] == [(2, 0), (1, 3)]
    assert g.scores[3:] == pytest.approx([0.27, 0.2]) and not g.wants_more()


def test_nothing_is_grown_below_the_floor():
    g = Growth(budget=8, max_depth=1, greedy=True, root=0)
    drawn = g.grow(torch.tensor([[0.995, 0.004, 0.001]]))
    assert drawn == [1]  # 0.004 and 0.001 are under 1 % of the root's score: one node, not three


def test_a_sampled_child_is_a_draw_from_q_without_its_earlier_siblings():
    """The second child at the root, over 4,000 growths, is distributed as q with the first child's token removed."""
    q = torch.tensor([0.4, 0.3, 0.2, 0.1])
    counts = torch.zeros(4, 4)
    gen = torch.Generator().manual_seed(0)
    for _ in range(4000):
        g = Growth(budget=2, max_depth=1, greedy=False, root=0)
        first, second = g.grow(q[None], gen)
        counts[g.tokens[first], g.tokens[second]] += 1
    for x in range(4):
        if counts[x].sum() < 300:
            continue
        want = q.clone()
        want[x] = 0
        assert torch.allclose(counts[x] / counts[x].sum(), want / want.sum(), atol=0.05)


def test_the_decision_to_draw_comes_before_the_draw(monkeypatch):
    """Whether a node gets one more child is decided from scores and the q left: the same growth decisions, whatever
    token each draw turns out to be, once the q left is the same (here every q is uniform, so it is)."""
    made = []
    for pick in (lambda left: int(left.nonzero()[0]), lambda left: int(left.nonzero()[-1])):
        monkeypatch.setattr(shaped, "draw_child", lambda left, greedy, generator, pick=pick: pick(left))
        g = Growth(budget=6, max_depth=3, greedy=False, root=0)
        grow_tree(g, lambda growth: torch.zeros(len(growth.frontier()), 6), SamplingSettings(temperature=1.0))
        made.append((g.parents, g.depth))
    assert made[0] == made[1]

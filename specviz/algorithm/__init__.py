"""The mathematics of speculative decoding as pure functions: sampling (warp, verify, the residual
max(0, p − q)), the tree's multi-candidate rule, the cost model E(α, K), acceptance by draft position and what a
round is expected to yield from it (acceptance.py), which both cost-aware rules read: the stop rule of adaptive K
(cost_rule.py) and the rule for a batch (batch_rule.py).

- sampling.py: warping, verify and the residual max(0, p − q), and the one greedy-or-sampled draw: tensor math
- theory.py: the cost model as formulas: E(α, K), a round's cost K·c + v, the speedup, round-size probabilities
- acceptance.py: acceptance by draft position (Positions), the survival product S(n) and E(K), the probe intervals
- cost_rule.py: the cost-aware stop rule of adaptive K, and its own prediction of a run's speedup
- batch_rule.py: the cost-aware rule for a batch: the K whose round gives B sequences the most tokens a step
- tree.py: a draft tree's shape and its exact verification (the multi-candidate rule, recursive rejection)
- shaped.py: a tree shaped per round (EAGLE-2), each growth decided before the child it adds is drawn

Imports torch, numpy, settings and record (its fate names, the cost rule's records); never a model, the engine or the
page.
"""

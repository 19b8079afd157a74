"""The mathematics of speculative decoding as pure functions: sampling (warp, verify, the residual
max(0, p − q)), the tree's multi-candidate rule, the cost model E(α, K), acceptance by draft position and what a
round is expected to yield from it (acceptance.py), which both cost-aware rules read: the stop rule of adaptive K
(cost_rule.py) and the rule for a batch (batch_rule.py).

Imports torch, numpy, settings and record (its fate names, the cost rule's records); never a model, the engine or the
page.
"""

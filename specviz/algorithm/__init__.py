"""The mathematics of speculative decoding as pure functions: sampling (warp, verify, the residual
max(0, p − q)), the tree's multi-candidate rule, the cost model E(α, K), and the cost-aware stop rule of adaptive K
(cost_rule.py).

Imports torch, numpy, settings and record (its fate names, the cost rule's records); never a model, the engine or the
page.
"""

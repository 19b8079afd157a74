"""The mathematics of speculative decoding as pure functions: sampling (warp, verify, the residual
max(0, p − q)), the tree's multi-candidate rule, and the cost model E(α, K).

Imports torch, numpy, settings and record's fate names; never a model, the engine or the page.
"""

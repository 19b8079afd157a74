"""Tests of specviz/algorithm/: sampling (warp, verify, residual) and the tree rule."""

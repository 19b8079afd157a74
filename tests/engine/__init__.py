"""Tests of specviz/engine/: chain and tree runs, self-speculation, the lean draft, the trained drafters' models, the
packaged pair's runs (test_real_pair.py)."""

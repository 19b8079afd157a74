"""Tests of specviz/engine/: the model pairs, chain and tree runs, self-speculation, the lean and quantized draft."""

"""Tests of specviz/models/: the model pairs and the packaged pair, the kernel paths and their measured choice, the
quantized draft, the draft's memory."""

"""Tests of specviz/view/: the token strip, p/q cards, caches, stage, tree, charts, the class's panel and a trace as text, and the golden views."""

"""Tests of specviz/view/: the token strip, p/q cards, caches, stage, tree, charts and quiz, and the golden views."""

"""Tests of specviz/drafters: the registry and each drafter."""

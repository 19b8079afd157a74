"""Tests of specviz/lecture/: the recorded examples, through the API and in a browser."""

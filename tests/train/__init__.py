"""Tests of specviz/train/: the offline text, the teacher and its cache, the Medusa and EAGLE fits, their held-out checks."""

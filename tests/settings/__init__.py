"""Tests of specviz/settings/: the bounds every layer checks against, and the helpers that read numbers and write
values into messages."""

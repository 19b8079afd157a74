"""Tests of specviz/cli/: each command run in this process as `python -m specviz` would (test_commands.py), and the run flags that need another (test_needs.py)."""

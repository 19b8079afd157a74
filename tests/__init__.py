"""The test suite: one folder per specviz/ folder; shared fixtures in conftest.py, shared helpers in helpers.py."""

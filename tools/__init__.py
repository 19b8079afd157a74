"""Scripts run by hand from the repository root, each as `python -m tools.NAME` (its usage in its docstring)."""

"""The names, choices, bounds and example prompts that every layer shares, each written once, and which setting only
applies with another (needs.py).

Imports nothing else of specviz (only the standard library), so every other folder may import it.
"""

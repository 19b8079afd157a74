"""Tests of specviz/app/ and app.py: the API, bad input, faults, load, security, ZeroGPU, and the page in a browser."""

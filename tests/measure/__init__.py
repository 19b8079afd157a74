"""Tests of specviz/measure/: costs, the benchmark, the GPU projection, and the GPU check (tools/gpu_check.py)."""

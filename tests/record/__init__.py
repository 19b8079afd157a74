"""Tests of specviz/record/: the strict trace loader on its own, bad files first, then the shipped ones. (The trace a
run writes is checked where it is written: tests/engine/; a bad upload on the page: tests/app/test_bad_input.py.)"""

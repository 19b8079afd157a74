"""Tests of specviz/lab/: toy p/q pairs, Monte Carlo, the explorer, drafters compared, and the Lab in a browser."""

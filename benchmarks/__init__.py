"""Benchmarks, the paper reproduction and the diagnostic studies of pymc_sle.

An importable package: run a script as a module from the repository root, e.g.
``python -m benchmarks.performance --quick`` or ``python -m benchmarks.paper.teddy --quick``.
Every script writes machine-readable results and a markdown summary into ``benchmarks/results/``.
"""

"""Benchmarks (not tests): wall-time figures for docs/performance.md, measured on real test hosts.

Run from the repository root as root, e.g. `python -m bench.doctor_bench`; see bench/README.md.
"""

"""Environment fingerprints, their differences, and the "code, configuration or environment?" verdict.

Pure over facts and release files: the probe (specops/probe/) and the host reads (specops/ops/forensics.py)
gather; everything here only compares, so recorded facts drive every test.
"""

"""Host-side probe modules: stdlib-only, Python 3.8+, concatenated into ONE script by specops/remote/bundle.py.

Why separate files: each stays small and testable (unit tests import them directly on the operator side),
while the host receives a single text over one SSH round trip. The imports between these modules (and
`from __future__`) are removed by the bundler, because in the script they share one global namespace.
"""

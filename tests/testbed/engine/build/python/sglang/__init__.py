"""specops TEST ENGINE: a tiny stand-in for the `sglang` package, deployed by the tests as a "build".

It speaks SGLang's CLI, logs and HTTP API closely enough for specops' deploy/doctor/smoke code, but
needs only the stdlib + torch + torchcodec (CPU). It is NOT SGLang and performs no real inference.
"""

from sglang.version import __version__

__all__ = ["__version__"]

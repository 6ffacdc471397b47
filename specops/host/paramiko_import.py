"""Importing paramiko without its `invoke` integration: ~50 ms of every SSH command's start-up.

paramiko.config imports `invoke` when it is installed (it is, as a dependency of some tools) only to run
`Match exec` lines of ~/.ssh/config, which pulls in unittest.mock and asyncio. specops resolves ssh_config
itself and never evaluates `Match exec`, so the import is blocked while paramiko imports itself;
`import invoke` works again afterwards for anything else in the process.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def invoke_blocked() -> Iterator[None]:
    if "invoke" in sys.modules or "paramiko" in sys.modules:
        yield  # too late to matter, or someone uses invoke: leave it alone
        return
    sys.modules["invoke"] = None  # type: ignore[assignment]  # None makes `import invoke` raise ImportError
    try:
        yield
    finally:
        if "invoke" in sys.modules and sys.modules["invoke"] is None:
            del sys.modules["invoke"]

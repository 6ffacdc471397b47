"""Importing paramiko without the two things its import pays for and specops never uses: ~70 ms of every SSH
command's start-up, before its first connection can begin.

1. `invoke`: paramiko.config imports it when it is installed (it is, as a dependency of some tools) only to
   run `Match exec` lines of ~/.ssh/config, which pulls in unittest.mock and asyncio. specops resolves
   ssh_config itself and never evaluates `Match exec`, so the import is blocked while paramiko imports itself;
   `import invoke` works again afterwards for anything else in the process.
2. `importlib.metadata`: paramiko's `__init__` sets `__version__ = metadata.version("paramiko")`, and importing
   importlib.metadata loads email, zipfile and csv (~20-50 ms) to read one line. While paramiko imports
   itself, `importlib.metadata` is a small stand-in whose `version("paramiko")` reads the `Version:` line of
   the METADATA file in paramiko's own `.dist-info` folder, the file importlib.metadata would read. For any
   other name, any other attribute, or when that folder cannot be found, the stand-in hands over to the real
   module, so a thread that imports importlib.metadata meanwhile still gets exactly what it asked for.
"""

from __future__ import annotations

import os
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

METADATA = "importlib.metadata"
_HANDOVER = threading.Lock()


@contextmanager
def lean_paramiko_import() -> Iterator[None]:
    if "paramiko" in sys.modules:
        yield  # too late to matter
        return
    with _invoke_blocked(), _metadata_stand_in():
        yield


@contextmanager
def _invoke_blocked() -> Iterator[None]:
    if "invoke" in sys.modules:
        yield  # someone uses invoke: leave it alone
        return
    sys.modules["invoke"] = None  # type: ignore[assignment]  # None makes `import invoke` raise ImportError
    try:
        yield
    finally:
        if "invoke" in sys.modules and sys.modules["invoke"] is None:
            del sys.modules["invoke"]


@contextmanager
def _metadata_stand_in() -> Iterator[None]:
    if METADATA in sys.modules:
        yield  # already paid for
        return
    import importlib

    stand_in = _StandIn(METADATA)
    sys.modules[METADATA] = stand_in
    importlib.metadata = stand_in  # for `import importlib.metadata; importlib.metadata.X`
    try:
        yield
    finally:
        with _HANDOVER:
            if sys.modules.get(METADATA) is stand_in:
                del sys.modules[METADATA]
            if getattr(importlib, "metadata", None) is stand_in:
                del importlib.metadata


class _StandIn(types.ModuleType):
    """`importlib.metadata` while paramiko imports: `version` of an imported package from its own dist-info."""

    def version(self, distribution_name: str) -> str:
        found = _installed_version(distribution_name)
        return found if found is not None else str(_real_metadata(self).version(distribution_name))

    def __getattr__(self, name: str) -> Any:
        return getattr(_real_metadata(self), name)


def _real_metadata(stand_in: types.ModuleType) -> types.ModuleType:
    """The real importlib.metadata, imported now (the stand-in leaves sys.modules first)."""
    import importlib

    with _HANDOVER:
        if sys.modules.get(METADATA) is stand_in:
            del sys.modules[METADATA]
        if getattr(importlib, "metadata", None) is stand_in:
            del importlib.metadata
    import importlib.metadata  # loading it sets importlib.metadata to the real module again

    return importlib.metadata


def _installed_version(name: str) -> str | None:
    """The `Version:` of NAME's `<name>-<version>.dist-info/METADATA` beside the package now being imported;
    None when the package is not in sys.modules or was not installed that way (an egg, a source tree)."""
    module = sys.modules.get(name)
    location = getattr(module, "__file__", None)
    if not location:
        return None
    folder = os.path.dirname(os.path.dirname(location))
    prefix = name.replace("-", "_").lower() + "-"
    try:
        entries = [entry for entry in os.listdir(folder) if entry.lower().startswith(prefix)]
    except OSError:
        return None
    dist_infos = [entry for entry in entries if entry.endswith(".dist-info")]
    if len(dist_infos) != 1:  # none, or leftovers of two installs: let importlib.metadata choose
        return None
    try:
        with open(os.path.join(folder, dist_infos[0], "METADATA"), encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("Version:"):
                    return line.partition(":")[2].strip() or None
                if not line.strip():
                    return None  # the headers ended without a version
    except OSError:
        return None
    return None

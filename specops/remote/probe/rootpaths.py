"""What root runs on this host and the folders it trusts: base_dir, the service folder, the interpreter (through
its symlinks), the venv, its pyvenv.cfg and site-packages, each with every folder above it, and the entries
of site-packages (one listdir: a package pip-installed by the engine's user belongs to that user).

Why raw: whether anyone but root could change them is decided on the operator's side (specops/doctor/checks/
root_paths.py) from owner, group and mode, so a recorded answer can drive unit tests. The probe, the guard and
the watch run as root with this interpreter, and a deploy puts the guard file in the service folder.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Any

from specops.remote.probe.account import _chain, _node
from specops.remote.probe.common import site_packages

ENTRY_LIMIT = 20  # entries of a site-packages folder reported by name (the count covers the rest)


def _others_may_write(info: os.stat_result) -> bool:
    """Owned by someone else than root, or writable by a group other than root's or by everyone."""
    mode = stat.S_IMODE(info.st_mode)
    return info.st_uid != 0 or bool(mode & stat.S_IWOTH) or bool(mode & stat.S_IWGRP and info.st_gid != 0)


def _open_entries(folder: str) -> dict[str, Any]:
    """The entries of `folder` (not their contents) that someone besides root may change; symlinks skipped."""
    found: list[dict[str, Any]] = []
    count = 0
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return {"count": 0, "entries": []}
    for name in names:
        path = os.path.join(folder, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode) or not _others_may_write(info):
            continue
        count += 1
        if len(found) < ENTRY_LIMIT:
            found.append(_node(path, info))
    return {"count": count, "entries": found}


def _labelled_paths(request: dict[str, Any]) -> dict[str, str]:
    """label -> path of what root runs or trusts (the venv's own only when it is one: pyvenv.cfg beside it)."""
    paths: dict[str, str] = {}
    base, service = request.get("base_dir"), request.get("service")
    if base:
        paths["base_dir"] = str(base)
        if service:
            paths["service_dir"] = os.path.join(str(base), str(service))
    paths["python"] = str(request.get("python") or sys.executable)
    config = os.path.join(sys.prefix, "pyvenv.cfg")
    if os.path.isfile(config):
        paths["venv"] = sys.prefix
        paths["pyvenv.cfg"] = config
    for index, folder in enumerate(site_packages()):
        paths["site-packages" + ("" if index == 0 else "#" + str(index + 1))] = folder
    return paths


def gather_root_paths(request: dict[str, Any]) -> dict[str, Any]:
    """{paths {label: chain}, entries {site-packages folder: {count, entries}}} (account.py's chain shape)."""
    paths = _labelled_paths(request)
    return {
        "paths": {label: _chain(path) for label, path in paths.items()},
        "entries": {path: _open_entries(path) for label, path in paths.items() if label.startswith("site-packages")},
    }

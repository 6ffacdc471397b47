"""Every distribution installed in the interpreter's site-packages, by name and version, and one hash of the set.

Why: "did anything in the venv change since it last worked?" must be answerable from a few bytes. The names and
versions come from the `.dist-info` / `.egg-info` folder names (PEP 427/376: `name-version.dist-info`), so
nothing is imported and no METADATA file is read: a venv of 300 packages costs one listdir per folder.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any

from specops.remote.probe.common import site_packages

DIST_SUFFIXES = (".dist-info", ".egg-info")


def dist_name(name: str) -> str:
    """PEP 503 normalization: `Flash_Infer.python` and `flash-infer-python` are the same distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_dist_folder(entry: str) -> tuple[str, str] | None:
    """`torch-2.13.0+cu130.dist-info` -> ("torch", "2.13.0+cu130"); None for anything else."""
    for suffix in DIST_SUFFIXES:
        if entry.endswith(suffix):
            stem = entry[: -len(suffix)]
            name, sep, version = stem.partition("-")
            if sep and name and version:
                return dist_name(name), version.split("-py", 1)[0]
    return None


def gather_dists() -> dict[str, Any]:
    """{count, sha256, versions {normalized name: version}}; the first folder on sys.path wins a duplicate."""
    versions: dict[str, str] = {}
    for folder in site_packages():
        try:
            entries = sorted(os.listdir(folder))
        except OSError:
            continue
        for entry in entries:
            parsed = parse_dist_folder(entry)
            if parsed is not None and parsed[0] not in versions:
                versions[parsed[0]] = parsed[1]
    listing = "".join(f"{name}=={version}\n" for name, version in sorted(versions.items()))
    return {"count": len(versions), "sha256": hashlib.sha256(listing.encode()).hexdigest(), "versions": versions}

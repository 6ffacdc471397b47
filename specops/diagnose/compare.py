"""`specops diff`: two hosts now, or one host now against what a release recorded when it was deployed.

Pure over Material (specops/diagnose/case.py): the fingerprints are compared fact by fact (specops/diagnose/
diff.py), and the build files by the releases' files maps, so the same answer comes from recorded material.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specops.commands.manifest import FileEntry
from specops.diagnose.case import Material, manifest_of, now_fingerprint, recorded
from specops.diagnose.diff import FilesDiff, FingerprintDiff, diff_files, diff_fingerprints
from specops.errors import UsageError


@dataclass(frozen=True)
class Comparison:
    left: str  # "llm-one" or "llm-one (release 2026...)"
    right: str
    fingerprints: FingerprintDiff
    files: FilesDiff

    @property
    def same(self) -> bool:
        return not self.fingerprints.changes and not self.files.changes

    def to_json(self) -> dict[str, Any]:
        return {"left": self.left, "right": self.right, **self.fingerprints.to_json(),
                "files": [change.to_json() for change in self.files.changes]}  # fmt: skip


def _files(material: Material, release: str | None) -> Mapping[str, FileEntry] | None:
    manifest = manifest_of(material, release)
    return manifest.files if manifest else None


def _now(material: Material) -> Any:
    found = now_fingerprint(material)
    if found is None:
        raise UsageError(
            f"{material.host}: the probe could not run, so there is nothing to compare",
            hint=f"`specops doctor {material.host}` shows why the probe cannot run",
        )
    return found


def compare_hosts(a: Material, b: Material) -> Comparison:
    """Host A against host B as they are now; build files compared when both serve a release."""
    before, after = _files(a, a.current), _files(b, b.current)
    files = diff_files(before, after) if before is not None and after is not None else FilesDiff()
    return Comparison(a.host, b.host, diff_fingerprints(_now(a), _now(b)), files)


def compare_release(material: Material, release: str) -> Comparison:
    """What the host was when `release` was deployed (its manifest's fingerprint) against the host now."""
    before = recorded(material, release)
    if before is None:
        raise UsageError(
            f"{material.host}: release {release} recorded no fingerprint",
            hint="releases deployed by this specops record one at preflight; compare two hosts instead",
        )
    old, new = _files(material, release), _files(material, material.current)
    files = diff_files(old, new).with_stats(material.file_stats) if old is not None and new is not None else FilesDiff()
    label = f"{material.host} (release {release})"
    return Comparison(label, f"{material.host} (now)", diff_fingerprints(before, _now(material)), files)

"""Two fingerprints (or two releases' files maps) side by side: what differs, grouped the way operators think.

Why groups in a fixed order: a wrong CUDA tag or a missing FFmpeg library explains more failures than a changed
kernel patch level, so the differences that most often break a build are listed first, and everything equal
collapses to one line. Each difference is a value, so `--json`, the verdict and the table all read the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from specops.diagnose.fingerprint import KEY_PACKAGES, Fingerprint

GROUPS = ("driver/CUDA", "Python packages", "native libraries", "system", "unit and flags", "build files")
ENVIRONMENT_GROUPS = GROUPS[:4]
MAX_LISTED = 8  # "other packages" names at most this many, then "and N more"


@dataclass(frozen=True)
class Change:
    """One fact that differs; `removed`/`added` are set for library sets and package lists."""

    group: str
    key: str
    before: str | None  # None: absent on that side
    after: str | None
    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """`torch 2.13.0+cu130 → 2.13.0+cu128`, `FFmpeg libraries: removed libavutil.so.57`."""
        if self.removed or self.added:
            parts = [f"removed {', '.join(self.removed)}"] if self.removed else []
            parts += [f"added {', '.join(self.added)}"] if self.added else []
            return f"{self.key}: {'; '.join(parts)}"
        return f"{self.key} {self.before or '(absent)'} → {self.after or '(absent)'}"

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "key": self.key, "before": self.before, "after": self.after,
                "removed": list(self.removed), "added": list(self.added), "text": self.text}  # fmt: skip


@dataclass(frozen=True)
class FingerprintDiff:
    changes: list[Change]
    equal_groups: list[str]
    equal_count: int  # facts compared and found equal

    @property
    def environment(self) -> list[Change]:
        """The changes that are the host's, not the release's or the unit's."""
        return [change for change in self.changes if change.group in ENVIRONMENT_GROUPS]

    def group(self, name: str) -> list[Change]:
        return [change for change in self.changes if change.group == name]

    @property
    def equal_line(self) -> str:
        groups = ", ".join(self.equal_groups) or "no group"
        return f"equal: {groups} ({self.equal_count} facts)"

    def to_json(self) -> dict[str, Any]:
        return {"changes": [c.to_json() for c in self.changes], "equal_groups": self.equal_groups,
                "equal_count": self.equal_count}  # fmt: skip


def _torch(fp: Fingerprint) -> str | None:
    version = fp.packages.get("torch")
    if not version:
        return None
    return f"{version} (CUDA {fp.torch_cuda})" if fp.torch_cuda else f"{version} (CPU build)"


def _torchcodec(fp: Fingerprint) -> str | None:
    version = fp.packages.get("torchcodec")
    if not version:
        return None
    return f"{version} (loads {fp.torchcodec_core})" if fp.torchcodec_core else f"{version} (no FFmpeg core loads)"


def _gpus(fp: Fingerprint) -> str | None:
    counts = Counter(fp.gpus)
    return ", ".join(f"{n} × {name}" for name, n in counts.items()) if counts else None


def _scalars(fp: Fingerprint) -> Iterator[tuple[str, str, str | None]]:
    """(group, key, value) for every single-valued fact; "" means not observed (skipped when both are)."""
    yield "driver/CUDA", "driver", fp.driver
    yield "driver/CUDA", "driver max CUDA", fp.driver_cuda
    yield "driver/CUDA", "GPUs", _gpus(fp)
    yield "Python packages", "python", f"{fp.python_version} {fp.python_executable}".strip() or ""
    yield "Python packages", "torch", _torch(fp)
    yield "Python packages", "torchcodec", _torchcodec(fp)
    for name in KEY_PACKAGES:
        if name not in ("torch", "torchcodec"):
            yield "Python packages", name, fp.packages.get(name)
    yield "native libraries", "glibc", fp.glibc
    yield "system", "kernel", fp.kernel
    yield "system", "os", fp.os
    yield "unit and flags", "unit file sha256", (fp.unit_sha256 or "")[:12]
    for key in sorted(set(fp.unit_env)):
        yield "unit and flags", f"env {key}", fp.unit_env.get(key)
    yield "build files", "tree hash", (fp.tree_hash or "")[:12]


def _scalar_map(fp: Fingerprint) -> dict[tuple[str, str], str | None]:
    return {(group, key): value for group, key, value in _scalars(fp)}


def _set_change(group: str, key: str, before: list[str], after: list[str]) -> Change | None:
    removed = tuple(sorted(set(before) - set(after)))
    added = tuple(sorted(set(after) - set(before)))
    if not removed and not added:
        return None
    return Change(group, key, ", ".join(before) or None, ", ".join(after) or None, removed, added)


def _other_packages(a: Fingerprint, b: Fingerprint) -> Change | None:
    """Every distribution that differs, except the key packages (listed on their own lines)."""
    if not a.installed or not b.installed:
        if a.installed_sha256 and b.installed_sha256 and a.installed_sha256 != b.installed_sha256:
            return Change("Python packages", "installed set sha256", a.installed_sha256[:12], b.installed_sha256[:12])
        return None
    known = {name for names in KEY_PACKAGES.values() for name in names}
    names = sorted((set(a.installed) | set(b.installed)) - known)
    differ = [n for n in names if a.installed.get(n) != b.installed.get(n)]
    if not differ:
        return None
    words = [_package_word(n, a.installed.get(n), b.installed.get(n)) for n in differ]
    shown = ", ".join(words[:MAX_LISTED]) + (f" and {len(words) - MAX_LISTED} more" if len(words) > MAX_LISTED else "")
    removed = tuple(n for n in differ if n not in b.installed)
    added = tuple(n for n in differ if n not in a.installed)
    return (
        Change("Python packages", "other packages", f"{a.installed_count} installed", shown, removed, added)
        if (removed or added)
        else Change("Python packages", "other packages", f"{len(differ)} changed", shown)
    )


def _package_word(name: str, before: str | None, after: str | None) -> str:
    if before is None:
        return f"+{name} {after}"
    if after is None:
        return f"-{name} {before}"
    return f"{name} {before} → {after}"


def diff_fingerprints(a: Fingerprint, b: Fingerprint) -> FingerprintDiff:
    """What changed from `a` (before, or host A) to `b` (now, or host B), in GROUPS order."""
    before, after = _scalar_map(a), _scalar_map(b)
    changes: list[Change] = []
    equal: Counter[str] = Counter()
    keys = list(dict.fromkeys([*before, *after]))  # the order _scalars yields them: torch before numpy
    for group_key in sorted(keys, key=lambda gk: GROUPS.index(gk[0])):
        old, new = before.get(group_key), after.get(group_key)
        if old == new:
            equal[group_key[0]] += 1 if old not in ("", None) else 0
            continue
        if old == "" or new == "":  # observed on one side only (an older probe, a field it lacked)
            continue
        changes.append(Change(group_key[0], group_key[1], old, new))
    sets = [
        _set_change("native libraries", "FFmpeg libraries", a.ffmpeg_libs, b.ffmpeg_libs),
        _set_change("native libraries", "CUDA libraries", a.cuda_libs, b.cuda_libs),
        _other_packages(a, b),
    ]
    changes.extend(change for change in sets if change is not None)
    changes.sort(key=lambda change: GROUPS.index(change.group))  # stable: keeps the order inside a group
    changed_groups = {change.group for change in changes}
    equal_groups = [group for group in GROUPS if group not in changed_groups and equal[group] > 0]
    return FingerprintDiff(changes, equal_groups, sum(equal.values()))


@dataclass(frozen=True)
class FileChange:
    """One file that differs between two releases; `plus`/`minus` when the contents could be compared."""

    path: str
    status: str  # "changed" | "added" | "removed"
    plus: int | None = None
    minus: int | None = None

    @property
    def text(self) -> str:
        """`sglang/srt/speculative/spec_info.py +1 −1`."""
        if self.status != "changed":
            return f"{self.path} ({self.status})"
        if self.plus is None or self.minus is None:
            return f"{self.path} (changed)"
        return f"{self.path} +{self.plus} −{self.minus}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "plus": self.plus, "minus": self.minus}


@dataclass(frozen=True)
class FilesDiff:
    changes: list[FileChange] = field(default_factory=list)
    compared: int = 0  # files in both maps together

    def with_stats(self, stats: dict[str, tuple[int, int]]) -> FilesDiff:
        return FilesDiff([_with(change, stats.get(change.path)) for change in self.changes], self.compared)


def _with(change: FileChange, stat: tuple[int, int] | None) -> FileChange:
    return change if stat is None else FileChange(change.path, change.status, stat[0], stat[1])


def _entry_differs(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    return any(a.get(key) != b.get(key) for key in ("sha256", "size", "mode", "link"))


def diff_files(before: Mapping[str, Mapping[str, object]], after: Mapping[str, Mapping[str, object]]) -> FilesDiff:
    """The files that differ between two manifests' files maps (path -> {size, mode, sha256 | link})."""
    changes: list[FileChange] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if not isinstance(old, dict):
            changes.append(FileChange(path, "added"))
        elif not isinstance(new, dict):
            changes.append(FileChange(path, "removed"))
        elif _entry_differs(old, new):
            changes.append(FileChange(path, "changed"))
    return FilesDiff(changes, len(set(before) | set(after)))


def count_unified(diff_text: str) -> tuple[int, int]:
    """(+lines, −lines) of a unified diff (`diff -u`), not counting the ---/+++ header lines."""
    plus = minus = 0
    for line in diff_text.splitlines():
        if line.startswith(("+++ ", "--- ")):
            continue
        if line.startswith("+"):
            plus += 1
        elif line.startswith("-"):
            minus += 1
    return plus, minus

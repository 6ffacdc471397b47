"""The service user (`run_as`): does it exist, which groups does it have, the GPU device nodes it must open,
and the folders it must walk to run the interpreter and read the models.

Why raw: whether the user can open a node is decided on the operator's side (specops/doctor/checks/
service_user.py) from owner, group and mode, so a recorded answer can drive unit tests. The probe runs as
root, so it reads the account databases (pwd/grp: /etc/passwd and friends, NSS included) and stats the nodes.
"""

from __future__ import annotations

import glob
import grp
import os
import pwd
import stat
from typing import Any

DEVICE_PATTERNS = ("/dev/nvidia*", "/dev/dri/*", "/dev/kfd")


def _group_name(gid: int) -> str | None:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return None


def _user(name: str) -> dict[str, Any]:
    """The account, its primary group and the groups that list it as a member, or exists=False."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return {"name": name, "exists": False}
    return {
        "name": name,
        "exists": True,
        "uid": entry.pw_uid,
        "gid": entry.pw_gid,
        "primary_group": _group_name(entry.pw_gid),
        "member_of": sorted(group.gr_name for group in grp.getgrall() if name in group.gr_mem),
        "home": entry.pw_dir,
        "shell": entry.pw_shell,
    }


def _groups(names: list[str]) -> dict[str, int | None]:
    """Each named group's gid, None where the host has no such group (systemd would refuse to start the unit)."""
    found: dict[str, int | None] = {}
    for name in names:
        try:
            found[name] = grp.getgrnam(name).gr_gid
        except KeyError:
            found[name] = None
    return found


def _devices() -> list[dict[str, Any]]:
    """The GPU device nodes (NVIDIA, DRM render/card nodes, AMD's kfd) with owner, group and mode."""
    nodes = []
    for pattern in DEVICE_PATTERNS:
        for path in sorted(glob.glob(pattern)):
            try:
                info = os.stat(path)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                continue
            nodes.append(_node(path, info))
    return nodes


def _node(path: str, info: os.stat_result) -> dict[str, Any]:
    return {"path": path, "uid": info.st_uid, "gid": info.st_gid, "group": _group_name(info.st_gid),
            "mode": stat.S_IMODE(info.st_mode), "is_dir": stat.S_ISDIR(info.st_mode)}  # fmt: skip


def _chain(path: str) -> dict[str, Any]:
    """Every folder the kernel walks to reach `path` (through its symlinks: a venv's python often points into
    someone's home) and the file itself, each with owner, group and mode; exists=False when it is not there."""
    target = os.path.realpath(path)
    nodes: list[dict[str, Any]] = []
    seen = set()
    for walked in (path, target):
        parts = walked.split("/")
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth]) or "/"
            if folder in seen:
                continue
            seen.add(folder)
            try:
                info = os.lstat(folder)
            except OSError:
                continue
            if not stat.S_ISLNK(info.st_mode):
                nodes.append(_node(folder, info))
    return {"path": path, "target": target, "exists": os.path.exists(target), "chain": nodes}


def gather_service_user(request: dict[str, Any]) -> dict[str, Any] | None:
    """None when the host runs its engine as root (no run_as): nothing to look at."""
    name = request.get("run_as")
    if not name:
        return None
    groups = [str(group) for group in request.get("run_as_groups") or []]
    paths = {"python": request.get("python")}
    paths.update(request.get("models") or {})
    return {
        "user": _user(str(name)),
        "groups": _groups([name, *groups]),
        "devices": _devices(),
        "paths": {label: _chain(str(path)) for label, path in paths.items() if path},
    }

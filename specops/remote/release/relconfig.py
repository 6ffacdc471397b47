"""A release's configuration on the host: the unit text and the env file it was verified with.

Part of the host-side script: stdlib only, Python 3.8+. A deploy records both with the release it makes: the
unit text in manifest.json ("unit"), the env file as releases/ID/.specops-env (root-only 0600, outside the tree
hash: it holds secrets) with the live env file's path in the manifest ("env_file"). Whatever starts a release
again (a rollback, the guard, its watch, the boot op, a deploy's or `specops restart`'s restart) first puts
both back, so a release only ever runs with the configuration it was verified with. A release recorded before
releases kept their env file has none: the live env file is then left as it is. One op:

  restore-config SERVICE_DIR UNIT [ID]
      put back release ID's (default: the current release's) unit and env file; daemon-reload when the unit
      file changed. Never prints the env file's content.
"""

from __future__ import annotations

import os
from typing import Any

from specops.remote.release.hostdata import checked_release_id
from specops.remote.release.script import RELEASE_ENV, current_id, read_manifest

UNIT_DIR = "/etc/systemd/system"


def restore_unit(manifest: dict[str, Any], unit: str) -> bool:
    """Write the unit text recorded in the release's manifest (atomic rename); True when the file changed."""
    text = manifest.get("unit")
    if not isinstance(text, str) or not text:
        return False
    path = os.path.join(UNIT_DIR, unit)
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == text:
                return False
    except OSError:
        pass
    temporary = path + ".specops-tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)
    return True


def write_private(path: str, data: bytes) -> None:
    """Write `data` to `path` as root-only 0600 by an atomic rename: the file is never readable by others, not
    even for a moment (created 0600, never a symlink followed)."""
    temporary = path + ".specops-tmp"
    if os.path.lexists(temporary):
        os.unlink(temporary)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.fchmod(descriptor, 0o600)
        os.write(descriptor, data)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(temporary, path)


def recorded_env(folder: str, manifest: dict[str, Any]) -> tuple[str, bytes] | None:
    """(the live env file's path, the env file's bytes) recorded with the release in `folder`, or None (none
    recorded)."""
    target = manifest.get("env_file")
    source = os.path.join(folder, RELEASE_ENV)
    if not isinstance(target, str) or not target.startswith("/") or not os.path.isfile(source):
        return None
    with open(source, "rb") as handle:
        return target, handle.read()


def restore_env(folder: str, manifest: dict[str, Any]) -> str:
    """Put the release's env file back at its live path: "restored", "same" (it was already there, 0600) or
    "not recorded" (a release from before env files were kept: the live file is left as it is)."""
    recorded = recorded_env(folder, manifest)
    if recorded is None:
        return "not recorded"
    target, data = recorded
    try:
        with open(target, "rb") as handle:
            if handle.read() == data and (os.stat(target).st_mode & 0o777) == 0o600:
                return "same"
    except OSError:
        pass
    write_private(target, data)
    return "restored"


def restore_config(service_dir: str, release_id: str, unit: str) -> dict[str, Any]:
    """The release's unit and env file back in place: {"unit_restored": bool, "env": restore_env's word}. The
    manifest (a few MB for an SGLang tree) is read once for both."""
    folder = os.path.join(service_dir, "releases", release_id)
    manifest = read_manifest(folder)
    return {"unit_restored": restore_unit(manifest, unit), "env": restore_env(folder, manifest)}


def op_restore_config(service_dir: str, unit: str, release_id: str = "") -> dict[str, Any]:
    import subprocess

    release = checked_release_id(release_id, empty_ok=True) or current_id(service_dir)
    if release is None:
        return {"release": None, "unit_restored": False, "env": "not recorded"}
    done = restore_config(service_dir, release, unit)
    if done["unit_restored"]:
        subprocess.run(["systemctl", "daemon-reload"], check=True, timeout=120)
    return {"release": release, **done}

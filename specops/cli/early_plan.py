"""A plain doctor's connection plan, kept from its last run, so the next run connects before pydantic loads.

Why: validating specops.toml needs the config's pydantic models, and importing pydantic and building those
models is over half of what a doctor loads before it can connect (~0.15 s here, against ~0.25 s for a bare
SSH call). Once a run has validated the config, what its connections need is plain data: each host's name,
`ssh`, `jump`, sudo user, interpreter and probe request. This module keeps that data under a key made of
everything that shaped it, so the next identical command line connects at once and the config is validated
while the hosts run the probe.

Nothing is trusted blindly: the key hashes the config file's bytes and path, the profiles' files, the names
asked for, this Python and specops's own config, probe and doctor code (their file sizes and times); the parsed
command validates the config as always and claims the early connections only when the plan it derives is
exactly the one that connected (specops/cli/early.py). An unreadable, corrupt or foreign plan file is ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from specops.localdirs import cache_root

if TYPE_CHECKING:
    from specops.doctor.runner import DoctorTarget

PLAN_SCHEMA = 1
KEEP_PLANS = 8  # command lines remembered (a few hosts and groups an operator checks in turn)
# specops's own code that shapes a plan: how the config is found and validated, the probe request, the opener
CODE_FOLDERS = ("config", "probe", "doctor", "host", "cli")


def plan_dir() -> Path:
    """The remembered plans (a doctor's and a deploy's), in specops's cache folder."""
    return cache_root() / "doctor-plans"


def plan_key(config_path: Path | None, names: Iterable[str], command: str = "doctor") -> str | None:
    """The key of this command line's plan (`command`: whose plan, a doctor's or a deploy's); None when the config
    cannot be found (the parsed command says why)."""
    from specops.config.locate import find_config
    from specops.errors import SpecopsError

    try:
        path = find_config(config_path, Path.cwd(), os.environ).resolve()
        digest = hashlib.sha256(f"{PLAN_SCHEMA}\0{sys.version}\0{path}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
        for folder in _profile_folders(path):
            for file in sorted(folder.glob("*.toml")):
                digest.update(f"{file.name}\0".encode() + hashlib.sha256(file.read_bytes()).digest())
        digest.update(_code_identity())
    except (OSError, SpecopsError):
        return None
    digest.update("\0".join([command, *names]).encode())
    return digest.hexdigest()[:32]


def _profile_folders(config: Path) -> list[Path]:
    from specops.config.shipped import data_dir

    return [data_dir("profiles"), config.parent / "profiles"]


def _code_identity() -> bytes:
    """Each code file's name, size and modification time: another specops (an upgrade, an edited checkout)
    makes another key."""
    package = Path(__file__).resolve().parent.parent
    parts = []
    for folder in CODE_FOLDERS:
        with os.scandir(package / folder) as entries:
            for entry in sorted(entries, key=lambda entry: entry.name):
                if entry.name.endswith(".py"):
                    stat = entry.stat()
                    parts.append(f"{folder}/{entry.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return "\n".join(parts).encode()


def records(targets: Iterable[DoctorTarget]) -> list[dict[str, Any]]:
    """What each validated target's connection and probe need, as plain JSON data (the plan)."""
    from specops.probe.run import probe_request

    found = []
    for target in targets:
        spec = target.spec
        if spec is None:
            raise ValueError("a doctor plan is made of inventory hosts")
        python, request = probe_request(spec, target.profile, python=target.python)
        found.append({
            "name": target.name, "ssh": spec.ssh, "jump": spec.jump,
            "sudo_as": spec.become_user if spec.uses_sudo else None, "python": python, "request": request,
        })  # fmt: skip
    return found


def recall(key: str, is_record: Callable[[object], bool] | None = None) -> list[dict[str, Any]] | None:
    """The plan stored under `key`, or None (none, unreadable, or not one this version wrote); `is_record`
    judges each host's record (default: a doctor's)."""
    valid = _is_record if is_record is None else is_record
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((plan_dir() / f"{key}.json").read_text(encoding="utf-8"))
        plan = data.get("hosts") if isinstance(data, dict) and data.get("schema") == PLAN_SCHEMA else None
        if isinstance(plan, list) and plan and all(valid(record) for record in plan):
            return plan
    return None


def _is_record(record: object) -> bool:
    return has_fields(record, ("name", "ssh", "python"), ("jump", "sudo_as")) and isinstance(
        record.get("request"), Mapping
    )


def has_fields(record: object, texts: Iterable[str], optional_texts: Iterable[str]) -> TypeGuard[Mapping[str, Any]]:
    """Whether `record` is a mapping with a string under each of `texts` and None or a string under the others."""
    if not isinstance(record, Mapping):
        return False
    present = all(isinstance(record.get(key), str) for key in texts)
    return present and all(record.get(key) is None or isinstance(record.get(key), str) for key in optional_texts)


def remember(key: str, plan: list[dict[str, Any]]) -> None:
    """Keep `plan` for the next run (written whole or not at all, in a folder only this user reads: it names
    hosts and paths); the oldest plans beyond KEEP_PLANS go. A failure only costs the next run its head start."""
    with contextlib.suppress(OSError):
        folder = plan_dir()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = folder / f"{key}.json"
        temporary = folder / f".{key}.{os.getpid()}"
        temporary.write_text(json.dumps({"schema": PLAN_SCHEMA, "hosts": plan}, sort_keys=True), encoding="utf-8")
        os.replace(temporary, path)
        plans = sorted(folder.glob("*.json"), key=lambda entry: entry.stat().st_mtime)
        for old in plans[:-KEEP_PLANS]:
            old.unlink()


def forget(key: str) -> None:
    with contextlib.suppress(OSError):
        (plan_dir() / f"{key}.json").unlink()

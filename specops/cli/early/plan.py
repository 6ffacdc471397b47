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
exactly the one that connected (specops/cli/early/doctor.py). A plan is filed under the key of the config bytes the
loader validated (Config.digest), so a config saved between two reads cannot file one version's hosts under
the other's key.

The plan names the hosts connected to and the interpreter started on them before the config is validated, so
it is a private file (specops/localdirs.py): used only when its folder and file are this user's alone and its
tag matches, and only when every value passes specops.toml's own checks (specops/cli/early/checks.py). Any other
plan is ignored (with a one-line warning when it is unsafe): the command validates first and connects as usual.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specops.localdirs import cache_root, read_private, warn, write_private

if TYPE_CHECKING:
    from specops.doctor.runner import DoctorTarget

PLAN_SCHEMA = 1
KEEP_PLANS = 8  # command lines remembered (a few hosts and groups an operator checks in turn)
# specops's own code that shapes a plan: how the config is found and validated, the probe request, the opener
CODE_FOLDERS = ("config", "probe", "doctor", "host", "cli", "cli/early")


def plan_dir() -> Path:
    """The remembered plans (a doctor's and a deploy's), in specops's cache folder."""
    return cache_root() / "doctor-plans"


def plan_key(
    config_path: Path | None, names: Iterable[str], command: str = "doctor", config_digest: bytes | None = None
) -> str | None:
    """The key of this command line's plan (`command`: whose plan, a doctor's or a deploy's); None when the config
    cannot be found (the parsed command says why). `config_digest`: the SHA-256 of the config bytes a loader
    validated (Config.digest), used instead of reading the file again."""
    from specops.config.locate import find_config
    from specops.errors import SpecopsError

    try:
        path = find_config(config_path, Path.cwd(), os.environ).resolve()
        digest = hashlib.sha256(f"{PLAN_SCHEMA}\0{sys.version}\0{path}\0".encode())
        digest.update(config_digest or hashlib.sha256(path.read_bytes()).digest())
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
    package = Path(__file__).resolve().parents[2]
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


def recall(key: str, check: Callable[[object], None] | None = None) -> list[dict[str, Any]] | None:
    """The plan stored under `key`, or None (none, unreadable, untrusted, or not one this version wrote); `check`
    raises ValueError for a host's record that specops.toml's rules refuse (default: a doctor's)."""
    from specops.cli.early.checks import doctor_record

    folder = plan_dir()
    kept = read_private(folder, f"{key}.json")
    with contextlib.suppress(ValueError):
        data = json.loads(kept) if kept is not None else None
        plan = data.get("hosts") if isinstance(data, dict) and data.get("schema") == PLAN_SCHEMA else None
        if isinstance(plan, list) and plan:
            return _checked(plan, check or doctor_record, folder / f"{key}.json")
    return None


def _checked(plan: list[Any], check: Callable[[object], None], path: Path) -> list[dict[str, Any]] | None:
    """The plan when every record passes `check`, else None with a one-line warning naming the value."""
    for index, record in enumerate(plan):
        try:
            check(record)
        except ValueError as error:
            warn(f"ignored connection plan {path}: hosts[{index}].{error}")
            return None
    return plan


def remember(key: str, plan: list[dict[str, Any]]) -> None:
    """Keep `plan` for the next run (a private file: it names hosts and paths); the oldest plans beyond KEEP_PLANS
    go. A failure only costs the next run its head start."""
    data = json.dumps({"schema": PLAN_SCHEMA, "hosts": plan}, sort_keys=True).encode("utf-8")
    write_private(plan_dir(), f"{key}.json", data, siblings="*.json", keep=KEEP_PLANS)


def forget(key: str) -> None:
    with contextlib.suppress(OSError):
        (plan_dir() / f"{key}.json").unlink()

"""A remembered plan's values, checked by specops.toml's own rules (specops/config/values.py) before anything
connects: the plan file sits in a cache folder, and its values become an ssh destination, a `sudo -u` user and
the interpreter started as that user on the host, before the parsed command has validated the config.

Each check raises ValueError naming the value (`hosts[0].ssh: ...`); specops/cli/early/plan.py then ignores the
whole plan with a one-line warning, and the command validates the config and connects as if there were none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from specops.config.values import (
    abs_path,
    jump_hosts,
    listen_address,
    no_control,
    posix_name,
    service_name,
    ssh_target,
    valid_name,
)

Check = Callable[[str], object]
CONNECTION: dict[str, Check] = {"name": valid_name, "ssh": ssh_target, "python": abs_path}
CONNECTION_OPTIONAL: dict[str, Check] = {"jump": jump_hosts, "sudo_as": posix_name}
DEPLOY: dict[str, Check] = {**CONNECTION, "service_dir": abs_path}
# the doctor's probe request (specops/probe/run.py: build_request), field by field; nothing else may be in it
REQUEST: dict[str, Check] = {
    "python": abs_path, "base_dir": abs_path, "service": service_name, "unit": no_control, "listen": listen_address,
    "proc_driver_version_path": abs_path,
}  # fmt: skip
REQUEST_OPTIONAL: dict[str, Check] = {"cuda_home": abs_path, "profile": valid_name, "run_as": posix_name}


def deploy_record(record: object) -> None:
    """A deploy's host: the connection, its service folder and the last push's size."""
    values = _fields(record, DEPLOY, CONNECTION_OPTIONAL, "")
    push_bytes = values.get("push_bytes")
    if type(push_bytes) is not int or push_bytes < 0:
        raise ValueError(f"push_bytes: {push_bytes!r} is not a byte count")


def doctor_record(record: object) -> None:
    """A doctor's host: the connection and the probe request (the same interpreter, checked paths and names)."""
    values = _fields(record, CONNECTION, CONNECTION_OPTIONAL, "")
    request = values.get("request")
    fields = _fields(request, REQUEST, REQUEST_OPTIONAL, "request.")
    if fields["python"] != values["python"] or fields["unit"] != f"{fields['service']}.service":
        raise ValueError("request: its python or unit is not the host's")
    ports = fields.get("ports")
    if not isinstance(ports, list) or not all(type(port) is int and 1 <= port <= 65535 for port in ports):
        raise ValueError(f"request.ports: {ports!r} is not a list of ports")
    _each("request.run_as_groups", fields.get("run_as_groups"), posix_name)
    _each("request.disk_paths", fields.get("disk_paths"), abs_path)
    _each("request.models", fields.get("models"), abs_path)
    _each("request.sglang_roots", fields.get("sglang_roots"), abs_path)
    _each("request.server_argv", fields.get("server_argv") or [], no_control)
    if fields.get("deep") is not False or type(fields.get("deep_timeout_s")) is not float:
        raise ValueError("request.deep: a plan is never a deep probe")
    known = {*REQUEST, *REQUEST_OPTIONAL, "ports", "run_as_groups", "disk_paths", "models", "sglang_roots",
             "server_argv", "deep", "deep_timeout_s"}  # fmt: skip
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"request.{unknown[0]}: not a key of a probe request")


def _fields(record: object, texts: dict[str, Check], optional: dict[str, Check], where: str) -> Mapping[str, Any]:
    """The record, when each of `texts` is a string its check accepts unchanged and each of `optional` is None
    or such a string."""
    if not isinstance(record, Mapping):
        raise ValueError(f"{where or 'a host'}: not a table")
    for key, check in [*texts.items(), *optional.items()]:
        value = record.get(key)
        if value is None and key in optional:
            continue
        if not isinstance(value, str):
            raise ValueError(f"{where}{key}: {value!r} is not a text")
        try:
            same = check(value) == value
        except ValueError as error:
            raise ValueError(f"{where}{key}: {error}") from None
        if not same:
            raise ValueError(f"{where}{key}: {value!r} is not written as specops writes it")
    return record


def _each(where: str, values: object, check: Check) -> None:
    """Every item of a list (or every value of a table) is a string `check` accepts."""
    items = list(values.values()) if isinstance(values, Mapping) else values
    if not isinstance(items, list):
        raise ValueError(f"{where}: {values!r} is not a list")
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"{where}: {item!r} is not a text")
        try:
            check(item)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None

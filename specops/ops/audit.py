"""The audit log: one JSON line per deploy/rollback/lock action, on the host AND on the operator's machine.

    audit.record(host, spec, audit.new_entry("deploy", outcome="deployed", from_release=a, to_release=b, ...))
    audit.read(host, spec, limit=20)    # the host's last entries, oldest first

The host copy (`<service_dir>/audit.jsonl`) answers "who changed this box, when, from what to what" for
whoever logs in next, whatever laptop did it (Kamal's and Capistrano's per-host logs). The local copy
(`$XDG_STATE_HOME/specops/audit.jsonl`, with the host's name) survives a host that is reinstalled.
Each line is appended with ONE write(2) on an O_APPEND descriptor, so concurrent writers never interleave
inside a line. Entries are built from non-secret data only, and `record` refuses a `Secret` anywhere in one;
what a host said (an error's text may quote a command line or a journal line) is written with its credentials
masked (config.redact), in both copies.
"""

from __future__ import annotations

import ast
import inspect
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specops.commands.audit_line import AuditLine, parse_audit_line
from specops.commands.hostdata import AUDIT_SCHEMA, SCHEMA_KEY
from specops.config.redact import mask_secrets
from specops.config.secrets import Secret
from specops.errors import CommandFailed
from specops.host.base import cut_message
from specops.localdirs import state_root
from specops.ops.lock_holder import local_who, utc_now
from specops.remote.release.hostdata import append_line

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.host.base import Host

AUDIT_FILE = "audit.jsonl"
MAX_LINE_BYTES = 256 * 1024
COMMAND_TIMEOUT_S = 30.0
MISSING_PROGRAM = (126, 127)


# stdlib only, run with -IS by the host's configured interpreter: the one audit-line writer (append_line, its
# source as it is in the host-side script), appending the whole line read from stdin.
def _without_docstring(source: str) -> str:
    """A function's source as a short argv word: its docstring dropped."""
    tree = ast.parse(source)
    function = tree.body[0]
    if isinstance(function, ast.FunctionDef) and ast.get_docstring(function) is not None:
        function.body = function.body[1:]
    return ast.unparse(tree) + "\n"


APPEND_SCRIPT = (
    "import os, sys\n"
    + _without_docstring(inspect.getsource(append_line))
    + "os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)\nappend_line(sys.argv[1], sys.stdin.buffer.read())\n"
)
# When that interpreter is missing (a broken or not-yet-installed venv is exactly when an audit line matters):
# dd gathers the whole input (iflag=fullblock) and appends it with a single write.
APPEND_FALLBACK = (
    'mkdir -p -- "$(dirname -- "$1")" && exec dd of="$1" oflag=append conv=notrunc bs=1M iflag=fullblock status=none'
)
READ_SCRIPT = '[ -e "$1" ] || exit 0; exec tail -n "$2" -- "$1"'


class SecretInAuditEntry(TypeError):
    """A Secret reached an audit entry: a bug in the caller; nothing was written."""


def new_entry(
    action: str,
    *,
    outcome: str,
    from_release: str | None = None,
    to_release: str | None = None,
    profile: str | None = None,
    phases: Mapping[str, float] | None = None,
    gates: Mapping[str, Any] | None = None,
    forced: bool = False,
    message: str = "",
) -> dict[str, Any]:
    """An entry with the standard fields (who/when filled in); callers may add more keys."""
    return {
        SCHEMA_KEY: AUDIT_SCHEMA, "when": utc_now(), "who": local_who(), "action": action, "from": from_release,
        "to": to_release, "profile": profile, "phases": dict(phases or {}), "gates": dict(gates or {}),
        "outcome": outcome, "forced": forced, "message": cut_message(message),
    }  # fmt: skip


def host_audit_path(spec: HostSpec) -> str:
    return f"{spec.service_dir}/{AUDIT_FILE}"


def local_audit_path() -> Path:
    """The local copy of the audit log, in specops's state folder."""
    return state_root() / AUDIT_FILE


def record(host: Host, spec: HostSpec, entry: Mapping[str, Any], *, local: bool = True,
           planned: Sequence[Sequence[str]] = ()) -> None:  # fmt: skip
    """Append `entry` to the host's log, then (always, even if the host failed) to the local one; `local=False`
    for a second try on the host whose first try already wrote the local line; `planned`: a plan's record
    commands (append_on_host)."""
    refuse_secrets(entry)
    full = masked({SCHEMA_KEY: AUDIT_SCHEMA, "when": utc_now(), "who": local_who(), **entry})
    line = encode_line(full)
    try:
        append_on_host(host, host_audit_path(spec), line, spec.python, planned)
    finally:
        if local:
            append_locally(local_audit_path(), encode_line({**full, "host": host.name}))


def encode_line(entry: Mapping[str, Any]) -> bytes:
    """One line of JSON (no raw newline can appear inside: json escapes them)."""
    data = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    if len(data) > MAX_LINE_BYTES:
        raise ValueError(f"audit entry of {len(data)} bytes is over {MAX_LINE_BYTES}: keep details elsewhere")
    return data


def refuse_secrets(value: object, where: str = "entry") -> None:
    """Walk the entry; a Secret key or value anywhere raises before anything is written."""
    if isinstance(value, Secret):
        raise SecretInAuditEntry(f"audit {where} holds a Secret value; audit entries must not carry secrets")
    if isinstance(value, Mapping):
        for key, item in value.items():
            refuse_secrets(key, f"{where} key")
            refuse_secrets(item, f"{where}.{key}")
    elif isinstance(value, list | tuple | set | frozenset):
        for index, item in enumerate(value):
            refuse_secrets(item, f"{where}[{index}]")


def masked(value: Any) -> Any:
    """The entry with every string in it through mask_secrets: an error's text can quote what a host printed."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, Mapping):
        return {key: masked(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [masked(item) for item in value]
    return value


def append_argvs(python: str | None, path: str) -> list[list[str]]:
    """The append by `python` (-S: stdlib only, and a request on a conversation), then the dd fallback."""
    return [*([[python, "-IS", "-c", APPEND_SCRIPT, path]] if python else []),
            ["sh", "-c", APPEND_FALLBACK, "specops-audit", path]]  # fmt: skip


def append_on_host(host: Host, path: str, line: bytes, python: str | None = None,
                   planned: Sequence[Sequence[str]] = ()) -> None:  # fmt: skip
    """One O_APPEND write on the host, by `python` (the host's interpreter) or dd when it is missing.
    `planned`: the plan's two commands (a deploy's record step), run as they are."""
    *first, fallback = planned or append_argvs(python, path)
    result = None
    if first:
        result = host.run(first[0], input=line, timeout=COMMAND_TIMEOUT_S, check=False)  # 126/127: try dd
    if result is None or result.exit_code in MISSING_PROGRAM:
        result = host.run(fallback, input=line, timeout=COMMAND_TIMEOUT_S, check=False)  # raised with a hint below
    if not result.ok:
        raise CommandFailed(result, host=host.name, hint=f"could not append to the audit log {path}")


def append_locally(path: Path, line: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    append_line(str(path), line, 0o600)


def read(host: Host, spec: HostSpec, limit: int = 20) -> list[AuditLine]:
    """The host's last `limit` entries, oldest first; a line that is not JSON comes back `unreadable`.
    Lines without a version (written before versions existed) read as they are; a line from a newer specops is
    HostDataTooNew (exit 5): its fields may not mean what this specops would show. Credentials in a line are
    shown masked, as they are written now: a line an older specops wrote may still hold one."""
    if limit <= 0:
        return []
    path = host_audit_path(spec)
    argv = ["sh", "-c", READ_SCRIPT, "specops-audit", path, str(limit)]
    result = host.run(argv, timeout=COMMAND_TIMEOUT_S, check=False)  # raised with a hint below
    if not result.ok:
        raise CommandFailed(result, host=host.name, hint=f"could not read the audit log {path}")
    return [read_line(line, host.name, path) for line in result.text.splitlines() if line.strip()]


def read_line(line: str, host: str, path: str) -> AuditLine:
    """One line through its reader, its credentials masked first (an older specops may have written one)."""
    try:
        value = json.loads(line)
    except ValueError:
        value = None
    shown = json.dumps(masked(value), ensure_ascii=False) if isinstance(value, dict) else mask_secrets(line)
    return parse_audit_line(shown, path, host)

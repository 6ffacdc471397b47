"""The kernel journal's GPU fault lines of this boot, RAW (the operator parses them: specops/commands/kernel_log.py).

Why bounded and filtered on the host: a doctor's GPU checks must stay cheap (tens of milliseconds), and a host
that logged a flood of Xid 45 must not make the answer large. journalctl filters itself where it can (`--grep`,
systemd >= 237 built with PCRE2) and returns only the newest matching entries; an older journalctl gets the
plain kernel journal of this boot, filtered here. Who ran it is reported too: a user outside root, `adm` and
`systemd-journal` reads no system journal at all, and the check says which group to add the user to.
"""

from __future__ import annotations

import os
import pwd
from typing import Any

from specops.remote.probe.common import run_command

KERNEL_GREP = r"NVRM: (Xid|.*fallen off the bus)"
KERNEL_MAX_EVENTS = 500
KERNEL_MAX_LINES = 20000  # without --grep: the newest kernel lines of this boot, filtered below
KERNEL_TIMEOUT_S = 10.0
_KERNEL_NO_GREP = ("pattern matching support", "unrecognized option")  # journalctl without --grep


def _kernel_argv(grep: bool) -> list[str]:
    argv = ["journalctl", "-k", "-b", "-o", "short-iso-precise", "--no-pager"]
    return argv + (["-n", str(KERNEL_MAX_EVENTS), "--grep", KERNEL_GREP] if grep else ["-n", str(KERNEL_MAX_LINES)])


def _nvrm_entries(text: str) -> str:
    """The NVRM fault entries of a plain kernel journal (and their continuation lines), the newest KERNEL_MAX_EVENTS."""
    entries: list[list[str]] = []
    keeping = False
    for line in text.splitlines():
        if line.startswith(" "):
            if keeping:
                entries[-1].append(line)
            continue
        keeping = "NVRM: " in line and ("Xid" in line or "fallen off the bus" in line or "NVIDIA GPU" in line)
        if keeping:
            entries.append([line])
    entries = entries[-KERNEL_MAX_EVENTS:]
    return "".join(line + "\n" for entry in entries for line in entry)


def _journal_user() -> dict[str, Any]:
    euid = os.geteuid()
    try:
        name = pwd.getpwuid(euid).pw_name
    except KeyError:
        name = str(euid)
    return {"euid": euid, "user": name}


def gather_kernel_log() -> dict[str, Any]:
    """{journal: the command's raw answer, method: "grep" | "python", euid, user}."""
    done = run_command(_kernel_argv(grep=True), KERNEL_TIMEOUT_S)
    method = "grep"
    if done["found"] and any(word in done["err"] for word in _KERNEL_NO_GREP):
        done = run_command(_kernel_argv(grep=False), KERNEL_TIMEOUT_S)
        done["out"] = _nvrm_entries(done["out"])
        method = "python"
    return {"journal": done, "method": method, **_journal_user()}

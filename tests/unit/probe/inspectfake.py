"""What the host's inspect script prints (commands/engine_stop.py INSPECT_SCRIPT), written by hand for tests that
judge GPU holders without a host: the line sections, then one NUL-separated record per process."""

from __future__ import annotations

INVOCATION = "0123456789abcdef0123456789abcdef"  # the unit's invocation in these tests


def record(pid: int, ppid: int, cwd: str, cgroup: str, cmdline: str = "python -m x", *, start: int = 4711,
           comm: str = "python3", uid: int = 0, invocation: str = INVOCATION, run: str = "last") -> str:  # fmt: skip
    """One process as /proc shows it: `invocation` is the INVOCATION_ID in its environment, `run` what the host
    knows of it ("last": the unit's current one; "journal": one systemd logged for the unit; "": neither)."""
    stat = f"{pid} ({comm}) S {ppid} " + " ".join(["0"] * 17) + f" {start} 0\n"
    values = {"stat": stat, "uid": f"{uid} {uid} {uid} {uid}", "exe": "/venv/bin/python3", "cwd": cwd,
              "cgroup": f"0::{cgroup};", "cmdline": cmdline + " ", "invocation": invocation, "run": run}  # fmt: skip
    return "@proc\0" + str(pid) + "\0" + "".join(key + "\0" + value + "\0" for key, value in values.items())


def inspect_text(gpus: list[str], apps: list[str], unit: list[int], records: list[str], *, engine_uid: int = 0,
                 invocation: str = INVOCATION) -> str:  # fmt: skip
    """The whole output: `gpus` as "index, uuid, MiB" lines, `apps` as "pid, MiB, uuid" lines."""
    lines = ["@gpus", *gpus, "@apps", *apps, "@unit", *map(str, unit), "@engine", f"uid {engine_uid}",
             f"invocation {invocation}", "@procs"]  # fmt: skip
    return "\n".join(lines) + "\n" + "".join(records) + "@end\0"

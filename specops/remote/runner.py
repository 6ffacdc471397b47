"""The host side of a command conversation: ONE exec that runs many commands, one request after another.

Why: every exec costs a login shell on the host (0.15-0.3 s where root's .bashrc runs pyenv or conda init)
plus a channel. A deploy runs some thirty commands (lock, env file, unit, manifest, guard, switch, restart,
the readiness polls, the audit line); sent as requests over one exec, each costs a round trip and the
command's own run instead. The client is specops/host/conversation.py; stdlib only, run with `python -IS -c`.

Framing (binary-safe, so a file's bytes or a secret never need escaping), all on the exec's stdin/stdout:

  host:   {"runner": 1, "pid": PID}\\n                               once, when ready
  client: {"argv": [...], "env": {...}, "timeout": S, "input": N}\\n  then N bytes of the command's stdin
  host:   {"rc": RC, "out": N1, "err": N2, "timed_out": B}\\n          then N1 bytes of stdout, N2 of stderr

Each command runs as its own session (process group) with the runner's environment (the login's), plus
`env`, and in the runner's working directory. Exit codes read as a shell would report them: 127 when the
program is missing, 126 when it cannot be executed, 128+N after signal N. Past `timeout` the group gets
SIGTERM, then SIGKILL KILL_AFTER_S later: exit 124 or 137, as coreutils `timeout` reports it. EOF on stdin
(the client closed the conversation, or its connection died) ends the runner.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from typing import IO, Any

VERSION = 1
KILL_AFTER_S = 5.0


def _kill_group(process: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def run_one(argv: list[str], env: dict[str, str] | None, timeout: float, data: bytes) -> tuple[int, bytes, bytes, bool]:
    """(exit code, stdout, stderr, timed out) of one command."""
    environment = None
    if env:
        environment = dict(os.environ)
        environment.update(env)
    try:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=environment, start_new_session=True)  # fmt: skip
    except FileNotFoundError:
        return 127, b"", f"{argv[0]}: command not found\n".encode(), False
    except PermissionError:
        return 126, b"", f"{argv[0]}: Permission denied\n".encode(), False
    try:
        out, err = process.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process, signal.SIGTERM)
        try:
            out, err = process.communicate(timeout=KILL_AFTER_S)
            return 124, out, err, True
        except subprocess.TimeoutExpired:
            _kill_group(process, signal.SIGKILL)
            out, err = process.communicate()
            return 137, out, err, True
    code = process.returncode
    return (128 - code if code < 0 else code), out, err, False


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> int:
    stdout.write(json.dumps({"runner": VERSION, "pid": os.getpid()}).encode() + b"\n")
    stdout.flush()
    while True:
        line = stdin.readline()
        if not line.strip():
            return 0
        request: dict[str, Any] = json.loads(line)
        size = int(request.get("input") or 0)
        data = stdin.read(size) if size else b""
        if len(data) < size:
            return 0
        code, out, err, timed_out = run_one(request["argv"], request.get("env"), float(request["timeout"]), data)
        header = {"rc": code, "out": len(out), "err": len(err), "timed_out": timed_out}
        stdout.write(json.dumps(header).encode() + b"\n" + out + err)
        stdout.flush()


if __name__ == "__main__":
    try:
        sys.exit(serve(sys.stdin.buffer, sys.stdout.buffer))
    except BrokenPipeError:
        sys.exit(0)

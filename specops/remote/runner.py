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
import gc
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import IO, Any

from specops.remote.codecache import load_code

VERSION = 1
KILL_AFTER_S = 5.0
CACHED_FROM_CHARS = 16384  # an inline script this long is compiled through remote/codecache.py
CODE: dict[str, Any] = {}  # inline scripts compiled once, by their text


def run_one(argv: list[str], env: dict[str, str] | None, timeout: float, data: bytes) -> tuple[int, bytes, bytes, bool]:
    """(exit code, stdout, stderr, timed out) of one command, exec'd by a fork of this process."""
    return _forked(lambda: _exec_command(argv, env), timeout, data)


def _exec_command(argv: list[str], env: dict[str, str] | None) -> int:
    """In the fork: become the command, with the signal dispositions a shell would give it; if it cannot
    start, the shell's words and exit code (127: not found, 126: not executable)."""
    for name in ("SIGPIPE", "SIGXFSZ"):  # this interpreter ignores them; a command must not inherit that
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    environment = dict(os.environ)
    environment.update(env or {})
    try:
        os.execvpe(argv[0], argv, environment)
    except FileNotFoundError:
        os.write(2, (argv[0] + ": command not found\n").encode())
        return 127
    except OSError as error:  # not permitted, not an executable format
        os.write(2, (argv[0] + ": " + (error.strerror or "cannot execute") + "\n").encode())
        return 126
    return 126  # not reached: exec replaced this process


def inline_script(argv: list[str]) -> tuple[str, list[str]] | None:
    """(script, its arguments) when `argv` is `python -IS -c SCRIPT ...` for this very interpreter (the release
    script's shape): run in a fork of this process, it skips an interpreter start (~40 ms a call)."""
    if len(argv) >= 4 and argv[0] == sys.executable and argv[1] == "-IS" and argv[2] == "-c":
        return argv[3], argv[4:]
    return None


def run_inline(script: str, args: list[str], env: dict[str, str] | None, timeout: float, data: bytes
               ) -> tuple[int, bytes, bytes, bool]:  # fmt: skip
    """What `python -IS -c script args` would answer, run by a fork of this interpreter (started with the same
    flags): its own session, fresh stdin/stdout/stderr, the same deadline rule as a command."""
    code = CODE.get(script)
    if code is None:
        code = CODE.setdefault(script, _compiled(script))
        preload_imports(script)
    return _forked(lambda: _run_script(code, args, env), timeout, data)


def _compiled(script: str) -> Any:
    """The release script (~38 kB: ~11 ms to compile) through the host's compiled-code cache; the small
    scripts (a lock's, an audit line's) compile in well under a millisecond and are never written down."""
    return load_code(script) if len(script) >= CACHED_FROM_CHARS else compile(script, "<string>", "exec")


def preload_imports(script: str) -> None:
    """Import, here in the runner, the modules the script's `import NAME` lines name (once per script), so each
    fork finds them in sys.modules. Why: a fork starts from this process's memory, and the release script's
    imports (re, hashlib, json, shutil, tarfile, subprocess, ...) cost 12-40 ms on every request otherwise,
    more than most ops' own work. Nothing else of the script runs here: importing a module of this interpreter
    (run with -IS, as the script is) is what the fork's own import would do; one that fails is left for the
    fork to report."""
    import importlib

    for line in script.splitlines():
        words = line.split("#", 1)[0].strip()
        if not words.startswith("import ") or " as " in words:
            continue
        for name in words[len("import ") :].split(","):
            with contextlib.suppress(Exception):
                importlib.import_module(name.strip())


def _run_script(code: Any, args: list[str], env: dict[str, str] | None) -> int:
    if env:
        os.environ.update(env)
    sys.stdin, sys.stdout, sys.stderr = _fresh_streams()
    sys.argv = ["-c", *args]
    status = _exec_main(code)
    sys.stdout.flush()
    sys.stderr.flush()
    return status


def _forked(body: Callable[[], int], timeout: float, data: bytes) -> tuple[int, bytes, bytes, bool]:
    """Run `body` in a fork that is its own session with pipes as fds 0-2, and collect what it answers under
    the deadline rule: one way for commands and inline scripts alike."""
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        _child(body, (in_r, out_w, err_w))
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    return _pump(pid, in_w, out_r, err_r, data, timeout)


def _child(body: Callable[[], int], fds: tuple[int, int, int]) -> None:
    status = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 65536)
        gc.freeze()  # the runner's objects: never scanned here (no copy-on-write faults), never finalised here
        status = body()
    except BaseException:  # whatever happens, the fork ends here with a status
        pass
    finally:
        os._exit(status)


def _fresh_streams() -> tuple[IO[str], IO[str], IO[str]]:
    """Text streams on the fork's own fds 0-2 (the inherited objects may hold the conversation's buffered bytes)."""
    return (open(0, closefd=False), open(1, "w", closefd=False), open(2, "w", closefd=False))


def _exec_main(code: Any) -> int:
    """The script as __main__, ending as the interpreter would: sys.exit's status, 1 after a traceback."""
    try:
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1
    except BaseException:  # printed like an uncaught exception
        import traceback

        traceback.print_exc()
        return 1
    return 0


def _pump(pid: int, in_w: int, out_r: int, err_r: int, data: bytes, timeout: float
          ) -> tuple[int, bytes, bytes, bool]:  # fmt: skip
    """Feed stdin, collect stdout and stderr, and apply the deadline (SIGTERM, SIGKILL) to the fork's group."""
    import selectors
    import time

    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    selector = selectors.DefaultSelector()
    for fd in (out_r, err_r):
        selector.register(fd, selectors.EVENT_READ)
    view = memoryview(data)
    if view:
        os.set_blocking(in_w, False)
        selector.register(in_w, selectors.EVENT_WRITE)
    else:
        os.close(in_w)
    started, signals, timed_out = (
        time.monotonic(),
        [(timeout, signal.SIGTERM), (timeout + KILL_AFTER_S, signal.SIGKILL)],
        False,
    )
    while len(selector.get_map()):
        waited = time.monotonic() - started
        while signals and waited >= signals[0][0]:
            timed_out = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signals.pop(0)[1])
        if not signals and waited > timeout + 2 * KILL_AFTER_S:
            break  # killed, yet something it started keeps the pipes open: stop reading
        limit = signals[0][0] - waited if signals else timeout + 2 * KILL_AFTER_S - waited
        for key, _ in selector.select(limit):
            fd = key.fd
            if fd == in_w:
                try:
                    view = view[os.write(fd, view[:65536]) :]
                except BrokenPipeError:
                    view = view[:0]
                if not view:
                    selector.unregister(fd)
                    os.close(fd)
                continue
            chunk = os.read(fd, 65536)
            if chunk:
                chunks[fd].append(chunk)
            else:
                selector.unregister(fd)
                os.close(fd)
    for key in list(selector.get_map().values()):
        os.close(key.fd)
    selector.close()  # now: left to the garbage collector, a later fork could close what then has its fd number
    _, status = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    if timed_out:
        code = 124 if signals else 137
    return code, b"".join(chunks[out_r]), b"".join(chunks[err_r]), timed_out


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
        argv, env, timeout = request["argv"], request.get("env"), float(request["timeout"])
        inline = inline_script(argv)
        if inline is not None:
            code, out, err, timed_out = run_inline(inline[0], inline[1], env, timeout, data)
        else:
            code, out, err, timed_out = run_one(argv, env, timeout, data)
        header = {"rc": code, "out": len(out), "err": len(err), "timed_out": timed_out}
        stdout.write(json.dumps(header).encode() + b"\n" + out + err)
        stdout.flush()


if __name__ == "__main__":
    try:
        sys.exit(serve(sys.stdin.buffer, sys.stdout.buffer))
    except BrokenPipeError:
        sys.exit(0)

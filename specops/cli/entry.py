"""The console script: answer a shell-completion request before anything heavy loads, else run the CLI.

A completion call happens on every Tab press; importing typer alone costs more than the whole answer may,
so the request is answered from specops/cli/complete.py (tomllib and a table) and the app is never built.
A plain `specops doctor NAME...` connects to its hosts before typer loads, and the CLI loads while the hosts
run the probe (specops/cli/early/doctor.py); a plain deploy run before connects while the rest loads
(specops/cli/early/deploy.py); a doctor, a deploy and a rollback also leave without tearing down every
loaded module.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
from types import FrameType
from typing import NoReturn

COMPLETE_VAR = "_SPECOPS_COMPLETE"
# Nothing is left open or unwritten once these return: every file is written in a `with` block or by one
# os.write, the stage's temporary folder is removed, connections are closed and the lock's thread stopped.
QUICK_EXIT_COMMANDS = ("doctor", "deploy", "rollback")


def entry() -> None:
    if os.environ.get(COMPLETE_VAR):
        from specops.cli.complete import respond

        sys.exit(respond(os.environ))
    from specops.cli.early import deploy as early_deploy
    from specops.cli.early import doctor as early

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # all end a command as Ctrl-C does
        signal.signal(signum, _on_signal)
    try:
        if early.start(sys.argv[1:]):
            early.wait_connected()
        elif early_deploy.start(sys.argv[1:]):
            early_deploy.wait_started()
        from specops.cli.main import main

        code = main()
    except KeyboardInterrupt as interruption:  # only while connecting early: main() answers Ctrl-C itself
        from specops.ops import interrupts

        code = interrupts.exit_code(interruption)
    finally:
        early.discard()
        early_deploy.discard()
    from specops.cli.main import command_named

    if command_named(sys.argv[1:]) in QUICK_EXIT_COMMANDS:
        exit_process(code)
    sys.exit(code)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """SIGINT, SIGTERM, SIGHUP: raise specops.ops.interrupts.Interrupted (loaded only now: a doctor that is never
    interrupted does not load specops.ops)."""
    from specops.ops import interrupts

    interrupts.on_signal(signum, frame)


def exit_process(code: int) -> NoReturn:
    """Exit as Python would, minus tearing down every module's objects one by one, which costs a doctor 30-50 ms
    of the operator's wait once pydantic, paramiko and typer are loaded. What an exit must do still happens:
    the exit handlers run (shared jump-host connections close, paramiko joins its threads), both streams are
    flushed, and the exit code is the same."""
    _flush()
    atexit._run_exitfuncs()
    _flush()
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`| head`): nothing can reach the reader
            stream.flush()

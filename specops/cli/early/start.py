"""The console script's fast path: start a plain doctor's or deploy's connections, run the CLI, leave quickly.

A plain `specops doctor NAME...` connects to its hosts before typer loads, and the CLI loads while the hosts
run the probe (doctor.py); a plain deploy connects while the rest loads (deploy.py). What was started is a
`HeadStart`, handed to the parsed command through the root callback (specops/cli/main.py: click's `obj`, then
`AppState.head_start`), never through module state: the command that claims it is the only one that can see it,
and whatever nobody claimed is closed here, after the command, however it ended.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from specops.cli.early.deploy import EarlyConnections
    from specops.cli.early.doctor import EarlyExamination
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config
    from specops.deploy.connections import Opened
    from specops.doctor.runner import DoctorTarget, Examination

# Nothing is left open or unwritten once these return: every file is written in a `with` block or by one
# os.write, the stage's temporary folder is removed, connections are closed and the lock's thread stopped.
QUICK_EXIT_COMMANDS = ("doctor", "deploy", "rollback")


@dataclass
class HeadStart:
    """What the console script started before typer loaded: a plain doctor's examination or a plain deploy's
    connections (or nothing), each taken once, by the command it was started for."""

    doctor: EarlyExamination | None = None
    deploy: EarlyConnections | None = None

    def begin(self, args: list[str]) -> None:
        """Start what `args` allow, and wait for it briefly (it is kept here before any connection starts, so
        an interruption meanwhile still finds it to close)."""
        from specops.cli.early import deploy, doctor

        self.doctor = doctor.start(args)
        if self.doctor is not None:
            self.doctor.wait_connected()
            return
        self.deploy = deploy.prepare(args)
        if self.deploy is not None:
            self.deploy.connect()
            self.deploy.wait_started()

    def claim_examination(self, targets: list[DoctorTarget], deep: bool) -> Examination | None:
        """The doctor's examination started early for exactly these targets, or None."""
        started, self.doctor = self.doctor, None
        return started.claim(targets, deep) if started is not None else None

    def claim_connections(
        self, specs: list[HostSpec], asks_password: bool, push_bytes: int, config: Config
    ) -> dict[str, Opened]:
        """The deploy's connections opened early for exactly these hosts (see EarlyConnections.claim)."""
        started, self.deploy = self.deploy, None
        return started.claim(specs, asks_password, push_bytes, config) if started is not None else {}

    def discard(self) -> None:
        """Wait for an examination, close connections, that nobody claimed."""
        doctor, deploy, self.doctor, self.deploy = self.doctor, self.deploy, None, None
        if doctor is not None:
            doctor.discard()
        if deploy is not None:
            deploy.discard()


def run(args: list[str]) -> NoReturn:
    """Run `specops ARGS` with whatever can start before typer loads; exit with the command's code."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # all end a command as Ctrl-C does
        signal.signal(signum, _on_signal)
    head_start = HeadStart()
    try:
        head_start.begin(args)
        from specops.cli.main import main

        code = main(args, head_start)
    except KeyboardInterrupt as interruption:  # only while connecting early: main() answers Ctrl-C itself
        from specops.ops import interrupts

        code = interrupts.exit_code(interruption)
    finally:
        head_start.discard()
    from specops.cli.main import command_named

    if command_named(args) in QUICK_EXIT_COMMANDS:
        exit_process(code)
    sys.exit(code)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """SIGINT, SIGTERM, SIGHUP: raise specops.ops.interrupts.Interrupted (loaded only now: a doctor that is never
    interrupted does not load specops.ops)."""
    from specops.ops import interrupts

    interrupts.on_signal(signum, frame)


def exit_process(code: int) -> NoReturn:
    """Exit as Python would, minus tearing down every module's objects one by one (os._exit), which costs a
    doctor 30-50 ms of the operator's wait once pydantic, paramiko and typer are loaded. What an exit must do
    still happens: the exit handlers run (shared jump-host connections close, paramiko joins its threads), both
    streams are flushed, and the exit code is the same. Only after the commands in QUICK_EXIT_COMMANDS, which
    leave nothing open or unwritten."""
    _flush()
    atexit._run_exitfuncs()
    _flush()
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`| head`): nothing can reach the reader
            stream.flush()

"""The host commands of the engine's steps: its read, its stop, and the gates (journal position, restart,
readiness), built with the pure builders (specops/commands/), as specops/deploy/step_commands.py builds the
lock's, the read's, the release's and the record's.

Pure: nothing here talks to a host. The executors (specops/ops/engine_stop.py, specops/ops/unit.py,
specops/engine/readiness.py, specops/deploy/engine_start.py) run these very objects, found by role; with
step_commands.py this is where a deploy calls the argv builders (tests/test_layering.py keeps it so).
"""

from __future__ import annotations

from specops.commands import dist_port, engine_stop, journal
from specops.commands import release as release_cmd
from specops.commands import unit as unit_cmd
from specops.commands.boot import boot_unit
from specops.commands.kernel_log import gpu_fault_argv
from specops.commands.planned import HostCommand, Times, run
from specops.config.inventory import HostSpec
from specops.deploy.steps import Condition, Handler, Step
from specops.engine import readiness_commands as readiness
from specops.ops import stop_commands as stopping
from specops.ops import unit

ENGINE_READ, LAST_ENTRY = "engine-read", "last-entry"  # whether the engine runs, and since when
DIST_PORT = "dist-port"  # one rank's side of the dist port test

ENGINE_PROPERTIES = ["ActiveState", "SubState", "InactiveEnterTimestamp", "UnitFileState"]


def engine_state_argv(spec: HostSpec) -> list[str]:
    """The engine's unit, then the boot unit (their UnitFileState: the unit step enables them only when needed)."""
    return unit_cmd.show_argv(spec.unit_name, ENGINE_PROPERTIES, boot_unit(spec))


def engine_read_commands(spec: HostSpec) -> list[HostCommand]:
    """Whether the engine runs, before anything changes (deploy/engine_start.py `read_engine_state` runs them)."""
    note = "a verified release whose engine is not active is started through the gates, not left stopped"
    since = "only when the engine is not active and systemd no longer knows since when: its last journal entry"
    return [run(engine_state_argv(spec), note=note, role=ENGINE_READ),
            run(journal.last_entry_argv(spec.unit_name), times=Times.IF_NEEDED, note=since,
                role=LAST_ENTRY)]  # fmt: skip


def journal_position_commands() -> list[HostCommand]:
    return [
        run(journal.cursor_argv(), role=readiness.CURSOR),
        run(
            journal.clock_argv(),
            times=Times.IF_NEEDED,
            note="only when the journal has no entry yet",
            role=readiness.CLOCK,
        ),
    ]


def readiness_commands(spec: HostSpec) -> list[HostCommand]:
    """The readiness poll (twice a second, with /health_generate through the SSH connection), then the smoke
    gate's requests (HTTP through the SSH connection: no host command), and the run's journal if smoke fails."""
    return [
        run(journal.poll_argv(spec.unit_name, journal.CURSOR_PLACEHOLDER), times=Times.REPEATED, role=readiness.POLL,
            note="twice a second until ready, a fatal journal line, the process ends, or the deadline"),
        run(gpu_fault_argv(journal.CURSOR_PLACEHOLDER), times=Times.IF_NEEDED, role=readiness.GPU_FAULT,
            note="only when the engine does not come up: a GPU fault in the kernel journal since the restart"),
        run(journal.invocation_journal_argv(spec.unit_name), times=Times.IF_NEEDED, role=readiness.INVOCATION,
            note="only when the smoke gate fails: the journal of the engine's current run names the cause"),
    ]  # fmt: skip


def gates_commands(spec: HostSpec) -> list[HostCommand]:
    return [*journal_position_commands(), *restart_commands(spec), *readiness_commands(spec)]


def restart_commands(spec: HostSpec) -> list[HostCommand]:
    reset, restart = unit_cmd.deliberate_restart_argvs(spec.unit_name)
    return [run(release_cmd.restore_config_argv(spec), note="the current release's unit and env file put back "
                "(the live env file is written from the release's own here)", role=unit.RESTORE),
            run(reset, note="a deliberate restart never counts against StartLimitBurst=", role=unit.RESET),
            run(restart, role=unit.RESTART)]  # fmt: skip


def stop_commands(spec: HostSpec, drain_s: int) -> list[HostCommand]:
    """Drain and stop the engine (its /metrics read through the SSH connection: no host command), then wait
    for the unit's cgroup and GPUs to be free, stopping proven orphans only with --reap."""
    unit = spec.unit_name
    return [
        run(engine_stop.stop_argv(unit), note="SIGTERM to the engine's main process (KillMode=mixed): it drains",
            role=stopping.STOP),
        run(engine_stop.state_argv(unit), times=Times.REPEATED, role=stopping.STATE,
            note=f"every 0.1 s for 2 s, then once a second (/metrics' running requests once a second), until it exits "
            f"or {drain_s} s passed"),
        run(engine_stop.kill_argv(unit), times=Times.IF_NEEDED, role=stopping.KILL,
            note="only when the drain budget runs out: the requests still running are cut"),
        run(engine_stop.stop_wait_argv(unit), times=Times.IF_NEEDED, note="after that SIGKILL",
            role=stopping.STOP_WAIT),
        run(engine_stop.inspect_argv(unit, spec.run_as), times=Times.REPEATED, role=stopping.INSPECT,
            note="until the unit's cgroup is empty and its GPUs back to baseline (nvidia-smi)"),
        run([*engine_stop.reap_argv([]), stopping.PROCESSES], times=Times.IF_NEEDED, role=stopping.REAP,
            note="only with --reap, and only orphans of this unit's engine (then inspected again)"),
        run(engine_stop.inspect_argv(unit, spec.run_as), times=Times.IF_NEEDED, role=stopping.INSPECT,
            note="after a reap, until the GPUs are free"),
    ]  # fmt: skip


def dist_port_commands(spec: HostSpec, rank: int, nnodes: int, dist_init_addr: str) -> list[HostCommand]:
    """One rank's side of the dist port test (specops/remote/distport.py), run by every rank at once once every
    rank passed its checks: rank 0 binds the port (or names who holds it), the others connect to it."""
    if rank == 0:
        note = (f"binds port {dist_init_addr.rpartition(':')[2]} for up to 20 s while the other ranks connect; "
                f"a port held by {spec.unit_name} itself passes")  # fmt: skip
    else:
        note = f"a real TCP connect to rank 0 at {dist_init_addr} (retried for up to 15 s)"
    return [run(dist_port.dist_port_argv(spec.python, rank, nnodes, dist_init_addr), note=note, role=DIST_PORT)]


DIST_CHECKS = ("engine.dist_port", "engine.dist_reach")  # the doctor's ids for rank 0's side and the workers'


def dist_port_step(
    spec: HostSpec, rank: int, nnodes: int, dist_init_addr: str, skipped: tuple[str, ...]
) -> Step | None:
    """After every rank passed its checks and before anything stops: the dist port test on every rank at once
    (None when `--skip-check` names both of its checks). A problem stops the engine's deploy (or restart) on
    every rank. `rank`: this host's index among the engine's `nnodes`; `dist_init_addr`: rank 0's ADDR:PORT."""
    left = [check for check in DIST_CHECKS if check not in skipped]
    if not left:
        return None
    waived = f"; skipped: {', '.join(c for c in DIST_CHECKS if c in skipped)}" if len(left) < len(DIST_CHECKS) else ""
    summary = (f"the dist port test ({', '.join(left)}), on every rank at once: rank 0 binds "
               f"{dist_init_addr}, every other rank connects to it; a problem on any rank stops every rank "
               f"here, nothing stopped{waived}")  # fmt: skip
    commands = dist_port_commands(spec, rank, nnodes, dist_init_addr)
    return Step("dist-port", summary, tuple(commands), Condition.CHECKS_PASS,
                handler=Handler.DIST_PORT)  # fmt: skip

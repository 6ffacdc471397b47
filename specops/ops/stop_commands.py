"""The commands one engine stop runs (specops/ops/engine_stop.py): a plan's, found by role, or built for a stop
without a plan. The reap's processes are a slot, filled with the orphans the inspection finds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specops.commands.engine_stop import inspect_argv, kill_argv, reap_argv, state_argv, stop_argv, stop_wait_argv
from specops.commands.planned import SLOTS, HostCommand, by_role, run
from specops.config.inventory import HostSpec

# The roles of the stop's commands in a plan (HostCommand.role): the deploy's, the restart's and the rollback's
# stop run the commands their plan shows (specops/deploy/engine_commands.py `stop_commands` builds them).
STOP, STATE, KILL, STOP_WAIT, INSPECT, REAP = "stop", "stop-state", "kill", "stop-wait", "inspect", "reap"

PROCESSES = SLOTS["processes"].mark  # the reap's slot: the orphans it stops, known once the GPUs are inspected


@dataclass(frozen=True)
class StopCommands:
    """The commands of one stop: SIGTERM, its state poll, SIGKILL and the wait after it, the cgroup and GPU
    inspection, and the reap (its processes a slot, filled with the orphans found)."""

    stop: HostCommand
    state: HostCommand
    kill: HostCommand
    stop_wait: HostCommand
    inspect: HostCommand
    reap: HostCommand

    @classmethod
    def planned(cls, commands: Sequence[HostCommand]) -> StopCommands:
        """A plan's stop, by role (a step may hold other commands too: the rollback's)."""
        parts = by_role(commands)
        return cls(*(parts[role] for role in (STOP, STATE, KILL, STOP_WAIT, INSPECT, REAP)))

    @classmethod
    def built(cls, spec: HostSpec) -> StopCommands:
        """For a stop without a plan (the engine's own tests, a caller that prints none)."""
        unit = spec.unit_name
        return cls(run(stop_argv(unit)), run(state_argv(unit)), run(kill_argv(unit)), run(stop_wait_argv(unit)),
                   run(inspect_argv(unit, spec.run_as)), run([*reap_argv([]), PROCESSES]))  # fmt: skip

"""The commands of one readiness wait (specops/engine/readiness.py): the journal's position before a restart,
the poll, the journal of the engine's current run and the kernel's GPU faults; a plan's, found by role, or
built for a wait without a plan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specops.commands import journal, kernel_log
from specops.commands.planned import HostCommand, by_role, run

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec

# The roles of the readiness wait's commands in a plan (HostCommand.role): a deploy's, a restart's and a
# rollback's gates run the commands their plan shows (specops/deploy/engine_commands.py builds them).
CURSOR, CLOCK, POLL, INVOCATION = "journal-cursor", "host-clock", "readiness-poll", "invocation-journal"

GPU_FAULT = "gpu-fault"


@dataclass(frozen=True)
class ReadinessCommands:
    """The journal's end before a restart (its cursor, else the host's clock), the readiness poll (its position a
    pair of slots: `since` and `cursor`), the journal of the engine's current run (a failed smoke's cause), and the
    kernel journal's GPU faults since the restart (a failed start's cause when a GPU failed under it)."""

    cursor: HostCommand
    clock: HostCommand
    poll: HostCommand
    invocation: HostCommand
    gpu_fault: HostCommand

    @classmethod
    def planned(cls, commands: Sequence[HostCommand]) -> ReadinessCommands:
        """A plan's gates, by role (a step may hold other commands too: the restart's, the rollback's)."""
        parts = by_role(commands)
        return cls(*(parts[role] for role in (CURSOR, CLOCK, POLL, INVOCATION, GPU_FAULT)))

    @classmethod
    def built(cls, spec: HostSpec) -> ReadinessCommands:
        """For a wait without a plan (`specops smoke`, the engine's own tests)."""
        return cls(*position_reads(), run(journal.poll_argv(spec.unit_name, journal.CURSOR_PLACEHOLDER)),
                   run(journal.invocation_journal_argv(spec.unit_name)),
                   run(kernel_log.gpu_fault_argv(journal.CURSOR_PLACEHOLDER)))  # fmt: skip

    def poll_at(self, position: str | None) -> tuple[str, ...]:
        """The poll from `position` (None: the whole journal of the unit: its position's words left out)."""
        if position is None:
            return self.poll.filled(since=[], cursor=[]).argv
        return self.poll.filled(**journal.position_slots(position)).argv


def position_reads() -> tuple[HostCommand, HostCommand]:
    """The journal position's reads for a caller without a plan (`specops smoke`, the engine's own tests)."""
    return run(journal.cursor_argv()), run(journal.clock_argv())

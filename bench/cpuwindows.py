"""CPU spent inside the deploy goal's windows: the floor under its figure on a machine whose cores are shared.

Why: the goal's figure is wall time minus the engine's own (its exit and its start, readiness and smoke). On
this development machine the operator and the test host run on the same few cores, so the figure cannot fall
below the CPU that the operator process and the host (outside the engine) burn inside those windows, divided
by the cores: a floor that says whether a miss is the code's waiting (round trips, serial steps) or work that
needs cutting. Host CPU is read from the test host's cgroup (cgroup v2 `cpu.stat`): sshd, the login shells,
the conversation's runner, the push session, the probe and its nvidia-smi calls, systemctl; the engine's own
units (`system.slice/sglang*.service`) are taken out.

Windows follow the deploy's phase events (the reporter `--json` uses, as execcount counts them): a window runs
from one phase's first event to the next phase's. Counted: everything before the drain (connect, lock, listing,
push, preflight, unit, switch) and everything after the smoke's verdict. Left out: the drain (the old engine's
exit and specops's polls of it, and the GPU check, ~30 ms of host CPU) and the gates (restart, readiness,
smoke): the goal takes the engine's exit and the whole gates phase out of its wall time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.execcount import AFTER_GATES, BEFORE
from bench.rounds import cgroup_cpu_seconds

GOAL_WINDOWS = frozenset({BEFORE, "lock", "push", "preflight", "unit", "switch", AFTER_GATES})
ENGINE_UNITS = "system.slice/sglang*.service"  # the specops unit's engine and the by-hand case's


def cgroup_usage(cgroup: Path) -> float:
    """CPU seconds used inside a cgroup and its descendants; 0 for a cgroup that does not exist (a unit that is
    not running has none, and a stopping one's may go between the glob and the read)."""
    try:
        return cgroup_cpu_seconds(cgroup)
    except OSError:
        return 0.0


@dataclass(frozen=True)
class Mark:
    """The CPU counters when a phase began: this process (all threads), the whole host, the engine's units."""

    phase: str
    operator: float
    host: float
    engine: float


@dataclass
class CpuWindows:
    """Marks taken at each new phase of one deploy; `mark` is execcount's `on_phase` callback."""

    host_cgroup: Path
    marks: list[Mark] = field(default_factory=list)

    def mark(self, phase: str) -> None:
        if self.marks and self.marks[-1].phase == phase:
            return  # the same phase again (each drain and readiness poll reports one)
        engine = sum(cgroup_usage(unit) for unit in self.host_cgroup.glob(ENGINE_UNITS))
        self.marks.append(Mark(phase, time.process_time(), cgroup_usage(self.host_cgroup), engine))

    def in_goal(self) -> tuple[float, float]:
        """(operator CPU-s, host CPU-s outside the engine) summed over the goal's windows. A window's engine CPU
        is its units' counters' difference: within a counted window the engine neither stops nor starts, so its
        unit's cgroup (removed at a stop) lives through it."""
        operator = host = 0.0
        for begun, ended in zip(self.marks, self.marks[1:], strict=False):
            if begun.phase in GOAL_WINDOWS:
                operator += ended.operator - begun.operator
                host += (ended.host - begun.host) - (ended.engine - begun.engine)
        return operator, host

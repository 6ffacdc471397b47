"""A fleet whose members are hosts and multi-node engines (deploy/members.py): each engine runs as one member.

The fleet (deploy/fleet.py) sees one outcome per member; an engine's is its ranks' summed up (the most severe
rank's outcome and exit code, rank 0's release and gates: rank 0 serves and is gated). Every rank keeps its own
outcome too, for the notes under the summary, --json, the audit and the notifications.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection

from specops.deploy.engine_run import EngineRun
from specops.deploy.fleet import FleetOptions, fleet_exit_code, never_started, run_batch, run_fleet
from specops.deploy.members import Member
from specops.deploy.outcome import HostOutcome
from specops.deploy.plan import HostPlan

RankRunner = Callable[[HostPlan, EngineRun | None], HostOutcome]  # a host's deploy; a rank's with its engine's run


class MemberFleet:
    """One deploy over members: `members` (member-keyed, as the summary's rows) and `hosts` (every host's own
    outcome, ranks included) once `run` returned."""

    def __init__(self, members: list[Member], run_rank: RankRunner, cancel: threading.Event | None) -> None:
        self.plan, self.run_rank, self.cancel = members, run_rank, cancel
        self.members: dict[str, HostOutcome] = {}
        self._ranks: dict[str, HostOutcome] = {}

    def run(self, options: FleetOptions, not_connected: Collection[str] = ()) -> dict[str, HostOutcome]:
        """Every member's outcome, keyed by host (an engine's ranks under their own hosts), in member order.

        An engine with a rank not connected up front runs anyway: that rank fails at once and the engine's
        other ranks stop at their first meeting point, changing nothing."""
        alone = {member.name for member in self.plan if not member.engine and member.name in not_connected}
        self.members = run_fleet(self.plan, self._one, options, self.cancel, not_connected=alone)
        return self.hosts()

    def hosts(self) -> dict[str, HostOutcome]:
        """Each host's outcome; the ranks of an engine never started say why (the member's cause)."""
        flat: dict[str, HostOutcome] = {}
        for member in self.plan:
            outcome = self.members.get(member.name) or never_started(member.name, "interrupted before it started")
            if not member.engine:
                flat[member.name] = outcome
                continue
            for host in member.hosts:
                flat[host.name] = self._ranks.get(host.name) or never_started(host.name, outcome.cause)
        return flat

    def engines(self) -> dict[str, list[str]]:
        """Each engine member's ranks' hosts, rank 0 first."""
        return {member.name: [host.name for host in member.hosts] for member in self.plan if member.engine}

    def _one(self, member: Member) -> HostOutcome:
        if not member.engine:
            return self.run_rank(member.hosts[0], None)
        engine = EngineRun.of(member.name, [host.target for host in member.hosts], self.cancel)

        def rank(host_plan: HostPlan) -> HostOutcome:
            with engine.present(host_plan.name, "its deploy ended"):
                return self.run_rank(host_plan, engine)

        outcomes = run_batch(member.hosts, rank, self.cancel, self._ranks)  # every rank at once
        self._ranks.update({host.name: outcome for host, outcome in zip(member.hosts, outcomes, strict=True)})
        return engine_outcome(member.name, dict(zip(engine.hosts, outcomes, strict=True)))


def engine_outcome(name: str, ranks: dict[str, HostOutcome]) -> HostOutcome:
    """The engine's one outcome: the most severe rank's; rank 0's release, attempt and gates; the failed ranks'
    causes, each naming its rank."""
    code = fleet_exit_code(ranks)
    first = next(iter(ranks.values()))
    worst = next((outcome for outcome in ranks.values() if outcome.exit_code == code), first)
    releases = {outcome.release for outcome in ranks.values()}
    causes = [f"rank {index} ({host}): {outcome.cause}"
              for index, (host, outcome) in enumerate(ranks.items()) if outcome.cause and not outcome.ok]  # fmt: skip
    return HostOutcome(name, worst.outcome, code, release=first.release if len(releases) == 1 else None,
                       attempted=first.attempted, previous=first.previous, cause="; ".join(causes),
                       phases=dict(first.phases), gates=first.gates, culprit=_culprit(ranks))  # fmt: skip


def _culprit(ranks: dict[str, HostOutcome]) -> str:
    """The engine's culprit: the build or the configuration when a failed rank blamed it, the host only when
    every failed rank blamed its host (the release is then not judged), else none."""
    blamed = [outcome.culprit for outcome in ranks.values() if not outcome.ok]
    for culprit in ("build", "configuration"):
        if culprit in blamed:
            return culprit
    return "host" if blamed and all(culprit == "host" for culprit in blamed) else ""

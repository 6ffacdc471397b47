"""Deploy one host: lock -> push -> preflight -> unit -> guard -> switch -> restart -> gates -> record.

Either a verified new release is serving at the end, or the last verified one is back (and says why), or,
with --no-rollback, the failed release is left running for debugging. Every exit path releases the lock
(Ctrl-C included) and the host-side guard covers the paths where this process cannot (kill -9).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from specops.commands.release import Listing, ReleaseInfo, newest_complete
from specops.deploy.plan import DeployPlan, HostPlan
from specops.deploy.rollback import ProfileFor, RollbackResult, rollback_host, smoke_figures
from specops.diagnose.fingerprint import fingerprint_from_facts
from specops.doctor.model import CheckContext, CheckResult, Status
from specops.doctor.registry import all_checks, run_checks
from specops.engine.gates import GateResult, restart_and_gate
from specops.errors import ExitCode
from specops.events import DONE_PHASE, ByteProgress, Event, Reporter
from specops.host.base import Host
from specops.ops import audit, guard, lock
from specops.ops.release import PushSession, identical_release, open_push, prune, switch_current, update_manifest
from specops.ops.unit import install_env_file, install_unit, read_unit
from specops.probe.run import probe

GATE_FAILED = ExitCode.CHECKS_FAILED


@dataclass(frozen=True)
class DeployOptions:
    force: bool = False
    no_rollback: bool = False
    lock_wait_s: float = 0.0
    command: str | None = None
    cancel: threading.Event | None = None  # set on Ctrl-C when hosts run in worker threads


@dataclass
class HostOutcome:
    """What happened on one host, for the summary table, --json and the audit log."""

    host: str
    outcome: str  # deployed | unchanged | rolled-back | failed | preflight-failed | unreachable | locked | error
    exit_code: ExitCode = ExitCode.OK
    release: str | None = None  # serving now (as far as we know)
    attempted: str | None = None
    previous: str | None = None
    cause: str = ""
    hint: str = ""
    phases: dict[str, float] = field(default_factory=dict)
    gates: GateResult | None = None
    rollback: RollbackResult | None = None
    preflight: list[CheckResult] = field(default_factory=list)
    push: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host, "outcome": self.outcome, "exit_code": int(self.exit_code), "release": self.release,
            "attempted": self.attempted, "previous": self.previous, "cause": self.cause, "hint": self.hint,
            "phases": {k: round(v, 3) for k, v in self.phases.items()}, "push": self.push,
            "gates": self.gates.to_json() if self.gates else None,
            "rollback": self.rollback.to_json() if self.rollback else None,
            "preflight": [r.to_json() for r in self.preflight if r.status in (Status.FAIL, Status.ERROR)],
        }  # fmt: skip


class _Phases:
    def __init__(self, outcome: HostOutcome, reporter: Reporter, cancel: threading.Event | None) -> None:
        self.outcome, self.reporter, self.cancel = outcome, reporter, cancel

    @contextmanager
    def __call__(self, name: str, message: str) -> Iterator[None]:
        if self.cancel is not None and self.cancel.is_set():
            raise KeyboardInterrupt  # a worker thread stops at the next phase; the lock and guard do the rest
        self.reporter.event(Event(self.outcome.host, name, message))
        started = time.monotonic()
        try:
            yield
        finally:
            self.outcome.phases[name] = time.monotonic() - started


def deploy_host(
    plan: DeployPlan,
    host_plan: HostPlan,
    options: DeployOptions,
    reporter: Reporter,
    open_host: Callable[[], AbstractContextManager[Host]],
    profile_for: ProfileFor,
) -> HostOutcome:
    """The whole deploy on one host; connection/lock errors propagate (the fleet runner maps them)."""
    spec = host_plan.target.host
    outcome = HostOutcome(host=spec.name, outcome="error")

    def say(text: str) -> None:
        reporter.event(Event(spec.name, "lock", text))

    holder = lock.LockHolder.current(options.command)
    try:
        with open_host() as host, lock.acquire(host, holder, wait_s=options.lock_wait_s, on_event=say):
            _HostDeploy(host, plan, host_plan, options, outcome, reporter, profile_for).run()
        _record(open_host, host_plan, options, outcome)
    except BaseException as error:  # the summary names the cause; this only ends the host's live row
        reporter.event(Event(spec.name, DONE_PHASE, f"stopped ({type(error).__name__})", level="error"))
        raise
    level = "info" if outcome.outcome in ("deployed", "unchanged") else "warn"
    message = f"{outcome.outcome}; serving {outcome.release or 'no release'}"
    reporter.event(Event(spec.name, DONE_PHASE, message, level=level))
    return outcome


@dataclass
class _HostDeploy:
    """One locked deploy on one connected host; each method is one phase."""

    host: Host
    plan: DeployPlan
    host_plan: HostPlan
    options: DeployOptions
    outcome: HostOutcome
    reporter: Reporter
    profile_for: ProfileFor

    def __post_init__(self) -> None:
        self.spec = self.host_plan.target.host
        self.profile = self.host_plan.target.profile
        self.phase = _Phases(self.outcome, self.reporter, self.options.cancel)

    def run(self) -> None:
        with open_push(self.host, self.spec, max_bytes=self.plan.staged.total_bytes) as session:
            release_id, previous = self._list_and_push(session)
        if release_id is None:
            return
        self.outcome.attempted = release_id
        if not self._preflight_ok(release_id):
            return
        with self.phase("unit", "installing the env file and unit"):
            install_env_file(self.host, self.spec, self.host_plan.env_text)
            install_unit(self.host, self.spec, self.host_plan.unit_text)
            update_manifest(self.host, self.spec, release_id, {"unit": self.host_plan.unit_text,
                                                                "profile": self.profile.name})  # fmt: skip
        armed = previous is not None and not self.options.no_rollback
        if armed:
            guard.arm(self.host, self.spec, lock.lock_root(), lock.DEFAULT_STALE_AFTER_S)
        # Not in a `finally`: on Ctrl-C or an error the guard stays armed, and once the lock is released it
        # puts the last verified release back (the deploy can no longer prove the new one).
        self._switch_and_gate(release_id, previous)
        if armed:
            guard.disarm(self.host, self.spec)

    def _list_and_push(self, session: PushSession) -> tuple[str | None, ReleaseInfo | None]:
        """The host's releases and the push, on one conversation; (None, None) when this exact release is
        already serving, verified, with this unit: nothing to do."""
        session.prepare(self.plan.staged, manifest_fields=self._manifest_fields())  # while the host's shell starts
        listing = session.listing
        self.outcome.previous = self.outcome.release = listing.current
        same = identical_release(self.plan.staged, listing.releases)
        if same is not None and same.id == listing.current and same.verified and self._unit_current():
            self.outcome.outcome, self.outcome.attempted = "unchanged", same.id
            self.outcome.cause = f"release {same.id} with this exact content is already serving (verified)"
            return None, None
        previous = next((r for r in listing.releases if r.id == listing.current and r.rollback_target), None)
        with self.phase("push", "sending the release"):
            release_id = same.id if same is not None else self._push(session, listing)
        return release_id, previous

    def _preflight_ok(self, release_id: str) -> bool:
        with self.phase("preflight", "running the doctor's checks on the candidate"):
            candidate = f"{self.spec.service_dir}/releases/{release_id}"
            facts = probe(self.host, self.spec, self.profile, extra_roots={"candidate": candidate})
            fingerprint = fingerprint_from_facts(facts, host=self.spec.name, unit_text=self.host_plan.unit_text,
                                                 tree_hash=self.plan.staged.tree_hash, release=release_id)  # fmt: skip
            update_manifest(self.host, self.spec, release_id, {"facts": fingerprint.to_json()})
            context = CheckContext(host=self.spec, facts=facts, profile=self.profile)
            self.outcome.preflight = run_checks(context, all_checks())
        failures = [r for r in self.outcome.preflight if r.status in (Status.FAIL, Status.ERROR)]
        if not failures or self.options.force:
            return True
        self.outcome.outcome, self.outcome.exit_code = "preflight-failed", GATE_FAILED
        self.outcome.cause = "; ".join(f"{r.id}: {r.summary}" for r in failures)
        self.outcome.hint = failures[0].hint or "fix the host, or pass --force (recorded in the audit log)"
        return False

    def _switch_and_gate(self, release_id: str, previous: ReleaseInfo | None) -> None:
        with self.phase("switch", f"switching current to {release_id} and restarting"):
            switch_current(self.host, self.spec, release_id)
            self.outcome.release = release_id
        with self.phase("gates", "waiting for readiness, then the smoke gate"):
            gates = restart_and_gate(self.host, self.spec, self.profile, smoke_figures(previous), self.reporter,
                                     cancel=self.options.cancel)  # fmt: skip
        self.outcome.gates = gates
        if gates.passed:
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            changes = {"verified": True, "verified_at": now, "gates": gates.to_json()}
            update_manifest(self.host, self.spec, release_id, changes)
            self.outcome.outcome = "deployed"
            protect = {release_id} | ({previous.id} if previous else set())
            prune(self.host, self.spec, self.spec.keep_releases, protect)
            return
        update_manifest(self.host, self.spec, release_id, {"verified": False, "gates": gates.to_json()})
        self.outcome.cause, self.outcome.exit_code = gates.cause, GATE_FAILED
        if self.options.no_rollback or previous is None:
            self.outcome.outcome = "failed"
            self.outcome.hint = (
                "left running for debugging (--no-rollback)"
                if self.options.no_rollback
                else "no verified release to roll back to on this host"
            )
            return
        reason = f"deploy of {release_id} failed: {gates.cause}"
        with self.phase("rollback", f"rolling back to {previous.id}"):
            result = rollback_host(self.host, self.spec, self.profile_for, previous.id, reason, self.reporter)
        self.outcome.rollback = result
        self.outcome.outcome = "rolled-back"
        self.outcome.release = result.to_release or self.outcome.release

    def _unit_current(self) -> bool:
        return read_unit(self.host, self.spec) == self.host_plan.unit_text

    def _manifest_fields(self) -> dict[str, Any]:
        return {
            "profile": self.profile.name,
            "unit_sha256": self.host_plan.unit_sha256,
            "deployed_by": lock.local_who(),
            "unit": self.host_plan.unit_text,
        }

    def _push(self, session: PushSession, listing: Listing) -> str:
        base = newest_complete(listing.releases)
        on_bytes = ByteProgress(self.reporter, self.spec.name, "push")
        result = session.push(self.plan.staged, base=base, on_bytes=on_bytes)
        self.outcome.push = {
            "sent_files": result.sent_files,
            "sent_bytes": result.sent_bytes,
            "linked_files": result.linked_files,
            "base": result.base_id,
            "seconds": round(result.seconds, 3),
        }
        return result.release_id


def _record(
    open_host: Callable[[], AbstractContextManager[Host]], host_plan: HostPlan, options: DeployOptions,
    outcome: HostOutcome,
) -> None:  # fmt: skip
    """The audit line, on the host and locally (a fresh connection: the deploy's may be gone)."""
    entry = audit.new_entry(
        "deploy", outcome=outcome.outcome, from_release=outcome.previous, to_release=outcome.attempted,
        profile=host_plan.target.profile.name, phases=outcome.phases,
        gates=outcome.gates.to_json() if outcome.gates else {}, forced=options.force, message=outcome.cause,
    )  # fmt: skip
    if outcome.rollback is not None:
        entry["rollback"] = outcome.rollback.to_json()
    with open_host() as host:
        audit.record(host, host_plan.target.host, entry)

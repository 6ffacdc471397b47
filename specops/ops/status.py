"""What is serving on a host: the release `current` names, what the unit runs, whether it answers.

The check no anchor tool does: "current points at X but the process runs Y" (a switch without a restart,
or a restart that never happened). The running process's working directory was resolved when it started
(WorkingDirectory=<base>/<service>/current), so /proc/<pid>/cwd names the release it really runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from specops.commands.guard_record import GuardRecord
from specops.commands.journal import last_entry_argv
from specops.commands.manifest import Figures, parse_manifest
from specops.commands.release import build_part
from specops.commands.unit import parse_show, show_argv
from specops.config.inventory import HostSpec
from specops.errors import ExitCode
from specops.host.base import Host
from specops.ops.cache import measure as measure_cache
from specops.ops.guard import armed_state
from specops.ops.hostfiles import read_document
from specops.ops.release import read_listing

STATUS_PROPERTIES = [
    "ActiveState",
    "SubState",
    "MainPID",
    "NRestarts",
    "ExecMainStartTimestamp",
    "LoadState",
    "InactiveEnterTimestamp",
    "UnitFileState",
]


@dataclass
class HostStatus:
    host: str
    current: str | None
    running_release: str | None
    uses_current: bool | None
    verified: bool
    profile: str | None
    unit: dict[str, str]
    health: int | None
    figures: dict[str, object] = field(default_factory=dict)
    releases: list[dict[str, Any]] = field(default_factory=list)
    # what changed on the host since `current` was deployed (its recorded fingerprint against a fresh probe):
    # None when not checked or nothing was recorded, [] when nothing drifted
    drift: list[str] | None = None
    # the guard's last watch after "verified" (release, state, deadline, left_s, failures, reason), None: never
    watch: GuardRecord | None = None
    # the rollback guard's state while one is armed (release, rollback_to, state: armed, rolled-back, no-rollback)
    guard: GuardRecord | None = None

    @property
    def build(self) -> str | None:
        """The build `current` holds, the same id on every host that got it (None: none, or a time-based id)."""
        return build_part(self.current) if self.current else None

    @property
    def watching_left_s(self) -> int | None:
        """Seconds the guard still watches `current` (the host's clock), None when it does not watch it now."""
        watch = self.watch or GuardRecord()
        left = watch.left_s
        if watch.state != "watching" or watch.release != self.current or left is None:
            return None
        return left if left > 0 else None

    @property
    def guard_notes(self) -> list[str]:
        """The release the guard, or its watch, would roll back to (the plan's target), or what it did instead."""
        guard, watch = self.guard or GuardRecord(), self.watch or GuardRecord()
        state = guard.state
        notes = []
        if state == "armed":
            notes.append(f"(armed): rolls back to {guard.rollback_to or '-'} if the deploy of "
                         f"{guard.release} dies before it is verified")  # fmt: skip
        elif state == "no-rollback" or (state == "rolled-back" and guard.rolled_back_to == self.current):
            notes.append(f"({state}): {guard.reason}")
        if self.watching_left_s is not None:
            target = watch.rollback_to
            then = f"rolls back to {target}" if target else "no rollback target was planned: it would stay"
            notes.append(f"(watching): if {self.current} fails its watch, {then}")
        return notes

    @property
    def verified_text(self) -> str:
        """`verified`, `verified, watching (2 min left)` or `NOT verified`."""
        if not self.verified:
            return "NOT verified"
        left = self.watching_left_s
        if left is not None:
            return f"verified, watching ({_duration(left)} left)"
        return "verified, watch cut short" if self.watch_cut_short else "verified"

    @property
    def watch_cut_short(self) -> bool:
        """The guard's watch of `current` ended before its deadline without an outcome (a reboot, a kill)."""
        watch = self.watch or GuardRecord()
        return watch.state == "cut-short" and watch.release == self.current

    compile_cache: dict[str, object] | None = None  # {"path": keyed folder, "bytes": size}; None: none prepared yet

    @property
    def healthy(self) -> bool:
        """Verified, the process runs `current`, and it generates (health 200)."""
        return self.verified and self.uses_current is not False and self.health == 200

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK if self.healthy else ExitCode.CHECKS_FAILED

    @property
    def serving(self) -> bool:
        """Whether the engine's unit is active: a release is never said to serve over a stopped unit."""
        return self.unit.get("ActiveState") == "active"

    @property
    def engine(self) -> str:
        """`running (active/running)`, or what the unit is and since when, with the command that starts it."""
        state = f"{self.unit.get('ActiveState', '?')}/{self.unit.get('SubState', '?')}"
        if self.serving:
            return f"running ({state})"
        since = self.unit.get("InactiveEnterTimestamp", "").strip()
        stopped = self.unit.get("ActiveState") in ("inactive", "failed")
        when = f" since {since}" if stopped and since not in ("", "n/a") else ""
        fix = f"`specops restart {self.host}` starts it" if self.current else "no release to start: deploy one"
        return f"{'stopped' if stopped else 'not serving'} ({state}){when}, {fix}"

    @property
    def enabled(self) -> bool | None:
        """Whether a reboot starts the unit (systemd's UnitFileState), None when systemd did not say."""
        state = self.unit.get("UnitFileState", "").strip()
        return None if state in ("", "n/a") else state in ("enabled", "enabled-runtime", "linked", "alias")

    @property
    def enabled_warning(self) -> str | None:
        """For a host with a release whose unit is not enabled: a reboot leaves the engine down."""
        if self.enabled is not False or not self.current:
            return None
        state = self.unit.get("UnitFileState", "?")
        return f"enabled: no ({state}): a reboot leaves the engine down; the next deploy enables it"

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "build": self.build, "serving": self.serving, "engine": self.engine,
                "enabled": self.enabled, "watch": self.watch.to_json() if self.watch else None,
                "guard": self.guard.to_json() if self.guard else None}  # fmt: skip


def _duration(seconds: int) -> str:
    return f"{seconds} s" if seconds < 90 else f"{round(seconds / 60)} min"


def stopped_since(host: Host, unit: dict[str, str], unit_name: str, planned: Sequence[str] = ()) -> str:
    """When a unit that is not active stopped: systemd's InactiveEnterTimestamp, or, once systemd has unloaded
    the inactive unit (its timestamps then read empty), the time of the unit's last journal entry; "" unknown.
    `planned`: a plan's journal read (a deploy's, a restart's), run as it is."""
    since = unit.get("InactiveEnterTimestamp", "").strip()
    if unit.get("ActiveState") == "active" or since not in ("", "n/a"):
        return since if since != "n/a" else ""
    result = host.run(planned or last_entry_argv(unit_name), timeout=30, check=False)
    words = result.text.split() if result.ok else []
    return words[0] if words and words[0][:1].isdigit() else ""


def running_release(host: Host, spec: HostSpec, pid: str) -> str | None:
    """The release the main process runs in (its cwd), or None when it is not running or not readable."""
    if not pid or pid == "0":
        return None
    result = host.run(["readlink", f"/proc/{pid}/cwd"], timeout=30, check=False)  # it may have exited since
    path = result.text.strip()
    prefix = f"{spec.service_dir}/releases/"
    return path[len(prefix) :].split("/", 1)[0] if result.ok and path.startswith(prefix) else None


def host_status(host: Host, spec: HostSpec, check_health: bool = True, check_drift: bool = False) -> HostStatus:
    listing = read_listing(host, spec)
    unit = parse_show(host.run(show_argv(spec.unit_name, STATUS_PROPERTIES), timeout=30).text)
    if unit.get("ActiveState") != "active":
        unit["InactiveEnterTimestamp"] = stopped_since(host, unit, spec.unit_name)
    running = running_release(host, spec, unit.get("MainPID", ""))
    current = next((r for r in listing.releases if r.id == listing.current), None)
    health = None
    if check_health and unit.get("ActiveState") == "active":
        from specops.engine.client import EngineClient

        client = EngineClient(host, spec)
        try:
            health = client.health_generate()
        finally:
            client.close()
    drift = environment_drift(host, spec, listing.current) if check_drift and listing.current else None
    return HostStatus(
        host=spec.name,
        drift=drift,
        watch=listing.watch,
        guard=armed_state(host, spec),
        compile_cache=measure_cache(host, spec),
        current=listing.current,
        running_release=running,
        uses_current=(running == listing.current) if running else None,
        verified=bool(current and current.verified),
        profile=current.profile if current else None,
        unit=unit,
        health=health,
        figures=dict((current.gates.figures if current else None) or {}),
        releases=[
            {
                "id": r.id,
                "build": build_part(r.id),
                "created_at": r.created_at,
                "profile": r.profile,
                "verified": r.verified,
                "complete": r.complete,
                "current": r.id == listing.current,
                "bad": r.bad.to_json() if r.bad else None,
            }
            for r in listing.releases
        ],
    )


def environment_drift(host: Host, spec: HostSpec, release_id: str) -> list[str] | None:
    """The host's changes (driver/CUDA, Python packages, native libraries, system) since `release_id` recorded
    its fingerprint at preflight, each as `torchcodec 0.13.0 → 0.10.0`; None when the release recorded none.
    Costs the manifest read and one probe round trip."""
    from specops.diagnose.diff import diff_fingerprints
    from specops.diagnose.fingerprint import fingerprint_from_facts, read_fingerprint
    from specops.ops.forensics import read_manifest
    from specops.probe.run import probe

    manifest = read_manifest(host, spec, release_id)
    recorded = read_fingerprint(manifest.facts) if manifest else None
    if recorded is None:
        return None
    now = fingerprint_from_facts(probe(host, spec), host=spec.name)
    return [change.text for change in diff_fingerprints(recorded, now).environment]


def recorded_smoke_figures(host: Host, spec: HostSpec) -> Figures | None:
    """The figures the deploy recorded for the current release (manifest gates.smoke.figures), if any.

    The smoke's regression baseline: absent (None) on a host never verified, or with an unreadable manifest,
    and then the regression gate is skipped rather than failed."""
    manifest = read_document(host, f"{spec.current_dir}/manifest.json", parse_manifest, 30)  # no release yet
    return manifest.gates.figures if manifest else None

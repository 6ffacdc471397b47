"""The fault-injection scenarios: each runs on its own fresh test host and returns what it found.

A scenario never raises for a product failure: it returns a `Finding` whose `problems` say what went wrong,
so that one broken injection point cannot hide the figures of the others (test_faults.py asserts on them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.faultkit import (
    DROP_SSH,
    KILL_9,
    FaultScene,
    inject,
    prepare,
    release_dead_lock,
    variant_build,
    wait_served,
)
from tests.testbed.testhost import TestHost
from tests.testbed.testhost.lifecycle import start_host, stop_host

LOCK_WAIT = ("--lock-wait", "150")  # today a dead holder's lock is stale only after 90 s without a heartbeat


@dataclass(frozen=True)
class Point:
    """An injection point: the fault is applied at the next `at` phase line after an `after` line."""

    name: str
    at: str
    after: str = ""
    rollback: bool = False  # the faulted deploy fails its smoke gate, so the fault lands in its rollback
    push_mb: int = 0  # > 0: the faulted deploy sends this much more, so the push lasts


POINTS = (
    Point("after lock", "push"),
    Point("mid-push", "mid-push", push_mb=48),
    Point("after push", "preflight"),
    Point("after unit write", "switch"),
    Point("after switch", "gates"),
    Point("during readiness", "restart"),
    Point("during smoke", "smoke"),
    Point("rollback: before switching back", "rollback", rollback=True),
    Point("rollback: switch back and readiness", "rollback", after="rollback", rollback=True),
    Point("rollback: smoke", "smoke", after="rollback", rollback=True),
)
FAULTS = (KILL_9, DROP_SSH)


def injection_name(fault: str, point: Point) -> str:
    return f"{fault} @ {point.name}"


@dataclass
class Finding:
    scenario: str
    problems: list[str] = field(default_factory=list)
    facts: dict[str, object] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    def expect(self, condition: bool, problem: str) -> bool:
        if not condition:
            self.problems.append(problem)
        return condition


Body = Callable[[FaultScene, dict[str, Finding]], None]


def on_a_fresh_host(names: list[str], venv: Path, folder: Path, body: Body, base_dir: str = "/opt/specops",
                    before: Callable[[TestHost], None] | None = None) -> dict[str, Finding]:  # fmt: skip
    """Start a host, run `body` on a scene for it, stop the host. An error becomes a problem of every finding
    the body had not finished (marked by its `seconds`)."""
    findings, began = {name: Finding(name) for name in names}, time.monotonic()
    host = start_host()
    try:
        if before is not None:
            before(host)
        folder.mkdir(parents=True, exist_ok=True)
        body(prepare(host, venv, folder, base_dir), findings)
    except Exception as error:  # a broken step is a finding of its own, not a crash of the whole suite
        for finding in findings.values():
            if not finding.seconds:
                finding.problems.append(f"{type(error).__name__}: {error}")
    finally:
        stop_host(host)
        for finding in findings.values():
            finding.seconds = finding.seconds or time.monotonic() - began
    return findings


def faults_at(point: Point) -> Body:
    """One verified base deploy, then each fault in turn at `point`, each followed by its checks and the next
    deploy (which is the following fault's verified base)."""

    def body(scene: FaultScene, findings: dict[str, Finding]) -> None:
        base, found = scene.deploy()
        if not base.code == 0:
            raise AssertionError(f"the base deploy failed (exit {base.code}): {(base.out + base.err)[-600:]}")
        good = str(found.get("release"))
        for fault in FAULTS:
            began = time.monotonic()
            finding = findings[injection_name(fault, point)]
            good = _one_fault(scene, finding, point, fault, good)
            finding.seconds = time.monotonic() - began

    return body


def _one_fault(scene: FaultScene, finding: Finding, point: Point, fault: str, good: str) -> str:
    """Fault, check, next deploy; the release verified last (the next fault's `good`)."""
    build = variant_build(scene.folder, fault, point.push_mb)
    process = scene.start("--force", build=build, patched=not point.rollback)
    finding.facts["lines"] = inject(scene, process, fault, point.after, point.at)[-2:]
    finding.facts["cli_exit"] = process.returncode
    released = release_dead_lock(scene)
    finding.facts["lock_left"] = released is not None
    if released is not None:
        finding.expect(released.code == 0, f"`lock release` failed: {released.out}{released.err}")
    served = wait_served(scene, allowed={good} if point.rollback else set(scene.releases()))
    if finding.expect(bool(served.get("verified")) and served.get("health") == 200,
                      f"no verified release serves after the fault: {served}"):  # fmt: skip
        finding.facts["serving"] = "previous release" if served.get("current") == good else "new release"
    again, outcome = scene.deploy("--force", *LOCK_WAIT, build=build)
    if finding.expect(again.code == 0 and outcome.get("outcome") == "deployed",
                      f"the next deploy failed (exit {again.code}): {outcome.get('cause')} {again.err[-400:]}"):  # fmt: skip
        return str(outcome.get("release"))
    return good


DISK_FULL, IN_A_ROW = "disk full mid-push", "ten deploys in a row"
SMALL_BASE_DIR = "/opt/small"
DEPLOYS_IN_A_ROW = 10


def mount_small_base_dir(host: TestHost) -> None:
    """A 12 MB tmpfs as the host's base_dir, inside the host's mount namespace (where sshd and systemd are)."""
    host.exec(["mkdir", "-p", SMALL_BASE_DIR])
    host.exec(["mount", "-t", "tmpfs", "-o", "size=12m,mode=0755", "tmpfs", SMALL_BASE_DIR])


def disk_full(scene: FaultScene, findings: dict[str, Finding]) -> None:
    """A build bigger than the base_dir's disk: a clean error, `current` untouched, no junk left behind.
    --force: the doctor's free-space check (1 GiB) fails on a 12 MB disk before any push would."""
    finding = findings[DISK_FULL]
    base, found = scene.deploy("--force")
    if not finding.expect(base.code == 0, f"the base deploy failed (exit {base.code}): {(base.out + base.err)[-600:]}"):
        return
    good, before = str(found.get("release")), set(scene.releases())
    full, _ = scene.deploy("--force", build=variant_build(scene.folder, "full", 24))
    message = full.out + full.err
    finding.facts.update(exit=full.code, message=message.strip()[-300:])
    finding.expect(full.code not in (0, 70), f"the full disk ended as exit {full.code}: {message[-400:]}")
    finding.expect("no space left" in message.lower() or "disk full" in message.lower(),
                   f"the error does not name the full disk: {message[-400:]}")  # fmt: skip
    finding.expect("Traceback" not in message, "a traceback reached the operator")
    served = scene.status()
    finding.expect(served.get("current") == good and served.get("health") == 200,
                   f"`current` moved or stopped serving: {served}")  # fmt: skip
    leftovers = set(scene.releases()) - before
    finding.facts["left_after_failure"] = sorted(leftovers)
    again, _ = scene.deploy("--force", build=variant_build(scene.folder, "after-full"))
    finding.expect(again.code == 0, f"the next deploy failed (exit {again.code}): {(again.out + again.err)[-400:]}")
    finding.expect(not leftovers & set(scene.releases()), f"the partial release is still there: {leftovers}")


def deploys_in_a_row(scene: FaultScene, findings: dict[str, Finding]) -> None:
    """Ten deploys alternating two builds: each one a real switch and restart of the engine."""
    finding = findings[IN_A_ROW]
    codes: list[int] = []
    for number in range(1, DEPLOYS_IN_A_ROW + 1):
        ran, found = scene.deploy(build=variant_build(scene.folder, "odd" if number % 2 else "even"))
        codes.append(ran.code)
        if not finding.expect(ran.code == 0 and found.get("outcome") == "deployed",
                              f"deploy {number} of {DEPLOYS_IN_A_ROW} failed (exit {ran.code}): "
                              f"{found.get('cause')}"):  # fmt: skip
            break
    finding.facts["exits"] = codes

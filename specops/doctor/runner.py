"""Run the doctor on hosts: connect, one probe round trip (two with --deep), pure checks, a report per host.

Hosts run in parallel threads (each spends its time waiting on SSH), and every host gets a report even when
another fails: results are a dict keyed by host name (Fabric's GroupResult lesson).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from specops.doctor.model import CheckContext, CheckResult, CheckSpec, Status
from specops.doctor.registry import run_checks
from specops.errors import ConnectError, SpecopsError

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.profile import Profile
    from specops.host.base import Host
    from specops.probe.facts import DeepFacts, HostFacts


@dataclass(frozen=True)
class DoctorTarget:
    """One host to examine: its name, config (None for --local), profile, and how to reach it."""

    name: str
    spec: HostSpec | None
    profile: Profile | None
    open_host: Callable[[], AbstractContextManager[Host]]
    python: str
    gpu_host: bool = True


@dataclass
class HostReport:
    """What the doctor found on one host; `unreachable` is set when no probe could run."""

    name: str
    results: list[CheckResult] = field(default_factory=list)
    facts: HostFacts | None = None
    deep: DeepFacts | None = None
    unreachable: str | None = None
    seconds: float = 0.0

    def count(self, *statuses: Status) -> int:
        return sum(1 for result in self.results if result.status in statuses)


def examine(target: DoctorTarget, checks: list[CheckSpec], deep: bool) -> HostReport:
    """Probe one host and run the checks; connection problems become a failed `ssh.reachable`."""
    from specops.probe.run import probe, probe_deep

    started = time.monotonic()
    report = HostReport(name=target.name)
    try:
        with target.open_host() as host:
            report.facts = probe(host, target.spec, target.profile, python=target.python)
            if deep:
                report.deep = probe_deep(host, target.spec, python=target.python)
    except ConnectError as error:
        report.unreachable = error.message
        report.results = [_privilege_result(error) if _is_privilege_error(error) else _unreachable_result(error)]
        report.seconds = time.monotonic() - started
        return report
    except SpecopsError as error:
        report.unreachable = error.message
        report.results = [
            CheckResult("ssh.reachable", Status.FAIL, f"the probe could not run: {error.message}", [], error.hint)
        ]
        report.seconds = time.monotonic() - started
        return report
    remember_fingerprint(target.name, report.facts)
    # Inventory hosts are GPU hosts by definition; `--local` is one when nvidia-smi lists GPUs.
    gpu_host = target.gpu_host if target.spec is not None else bool(report.facts.nvidia.gpus)
    context = CheckContext(
        host=target.spec, facts=report.facts, profile=target.profile, deep=report.deep, gpu_host=gpu_host
    )
    report.results = run_checks(context, checks)
    report.seconds = time.monotonic() - started
    return report


def _unreachable_result(error: ConnectError) -> CheckResult:
    return CheckResult(
        "ssh.reachable",
        Status.FAIL,
        error.message,
        [],
        error.hint or "check the host's ssh settings with `specops hosts` and try `ssh HOST true`",
    )


def _is_privilege_error(error: ConnectError) -> bool:
    from specops.host.become import BecomeError

    return isinstance(error, BecomeError)


def _privilege_result(error: ConnectError) -> CheckResult:
    """Logged in, but sudo refused (password-only, not installed, not allowed): the probe never ran."""
    return CheckResult("ssh.privilege", Status.FAIL, error.message, ["logged in over SSH: yes"], error.hint)


def examine_all(targets: Iterable[DoctorTarget], checks: list[CheckSpec], deep: bool) -> dict[str, HostReport]:
    """Every host in parallel; the dict keeps the inventory order."""
    targets = list(targets)
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(targets)))) as pool:
        futures = {target.name: pool.submit(examine, target, checks, deep) for target in targets}
        return {name: future.result() for name, future in futures.items()}


def remember_fingerprint(name: str, facts: HostFacts) -> None:
    """Keep what this host is made of in the local state, for `specops diff` and `diagnose` later."""
    from specops.diagnose.fingerprint import fingerprint_from_facts
    from specops.diagnose.store import remember

    remember(name, fingerprint_from_facts(facts, host=name))

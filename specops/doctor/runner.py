"""Run the doctor on hosts: connect, one probe round trip (two with --deep), pure checks, a report per host.

Hosts run in parallel threads (each spends its time waiting on SSH), and every host gets a report even when
another fails: results are a dict keyed by host name (Fabric's GroupResult lesson).

The network comes first: `Examination` starts every host's connection at once, with the probe's script built
before it connects, and the caller loads the checks (and whatever else it prints with) while the hosts run
the probe. A doctor's start-up imports thus overlap the host's work instead of preceding the connection.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Self

from specops.doctor.model import CheckContext, CheckResult, CheckSpec, Status, waive
from specops.doctor.registry import run_checks
from specops.errors import ConnectError, SpecopsError

SHARED_GIL_SWITCH_S = 0.0005

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config
    from specops.config.profile import Profile
    from specops.host.base import Host
    from specops.probe.facts import DeepFacts, HostFacts
    from specops.probe.run import PreparedProbe


@dataclass(frozen=True)
class DoctorTarget:
    """One host to examine: its name, config (None for --local), profile, and how to reach it."""

    name: str
    spec: HostSpec | None
    profile: Profile | None
    open_host: Callable[[], AbstractContextManager[Host]]
    python: str
    gpu_host: bool = True
    probe: PreparedProbe | None = None  # prepared already (a remembered plan); else built from spec and profile


def inventory_targets(
    config: Config,
    names: list[str],
    all_hosts: bool,
    profile: str | None,
    opener: Callable[[HostSpec], Callable[[], AbstractContextManager[Host]]],
) -> list[DoctorTarget]:
    """The hosts `names` (hosts or groups) or every host, each with its profile (`profile` overrides the
    host's own) and `opener(spec)` as its way to connect."""
    if not names and not all_hosts:
        from specops.errors import UsageError

        raise UsageError(
            "name hosts or groups, or pass --all (or --local for this machine)",
            hint="`specops hosts` lists the hosts and groups of specops.toml",
        )
    specs = list(config.inventory.hosts.values()) if all_hosts else config.inventory.select(names)
    targets = []
    for spec in specs:
        chosen = spec.profile if profile is None else profile
        resolved = config.resolve(spec.name, chosen).profile if chosen is not None else None
        targets.append(
            DoctorTarget(name=spec.name, spec=spec, profile=resolved, open_host=opener(spec), python=spec.python)
        )
    return targets


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
        """Results with these statuses, waived ones left out: a waived failure fails nothing."""
        return sum(1 for result in self.results if result.status in statuses and not result.waived)

    def waived(self) -> int:
        return sum(1 for result in self.results if result.waived)


def examine(target: DoctorTarget, checks: list[CheckSpec], deep: bool) -> HostReport:
    """Probe one host and run the checks; connection problems become a failed `ssh.reachable`."""
    return _judge(_observe(target, deep, threading.Event()), target, checks)


def _observe(target: DoctorTarget, deep: bool, connected: threading.Event) -> HostReport:
    """Connect and probe (no checks yet); `connected` is set once the connection is made or has failed."""
    from specops.probe.run import parse_probe, prepare_probe, probe_deep, send_probe

    started = time.monotonic()
    report = HostReport(name=target.name)
    try:
        prepared = target.probe or prepare_probe(target.spec, target.profile, python=target.python)
        with target.open_host() as host:
            connected.set()
            report.facts = parse_probe(host, send_probe(host, prepared))
            if deep:
                report.deep = probe_deep(host, target.spec, python=target.python)
    except ConnectError as error:
        report.unreachable = error.message
        report.results = [_privilege_result(error) if _is_privilege_error(error) else _unreachable_result(error)]
    except SpecopsError as error:
        report.unreachable = error.message
        report.results = [
            CheckResult("ssh.reachable", Status.FAIL, f"the probe could not run: {error.message}", [], error.hint)
        ]
    finally:
        connected.set()
        report.seconds = time.monotonic() - started
    if report.facts is not None:
        remember_fingerprint(target.name, report.facts)
        report.seconds = time.monotonic() - started
    return report


def _judge(report: HostReport, target: DoctorTarget, checks: list[CheckSpec]) -> HostReport:
    """Run the checks on a probed host's facts (a host without facts keeps its one failed result)."""
    if report.facts is None:
        return report
    started = time.monotonic()
    # Inventory hosts are GPU hosts by definition; `--local` is one when nvidia-smi lists GPUs.
    # A driver/library mismatch lists no GPU but proves an NVIDIA driver: gpu.nvml must still say so.
    nvidia = report.facts.nvidia
    gpu_host = target.gpu_host if target.spec is not None else bool(nvidia.gpus) or nvidia.nvml_mismatch
    context = CheckContext(
        host=target.spec, facts=report.facts, profile=target.profile, deep=report.deep, gpu_host=gpu_host
    )
    from specops.config.waivers import waiver_reasons

    reasons = waiver_reasons(target.spec.waive) if target.spec is not None else {}
    report.results = waive(run_checks(context, checks), reasons)  # still run: the reason is shown beside each
    report.seconds += time.monotonic() - started
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
    with Examination(targets, deep) as examination:
        return examination.reports(checks)


class Examination:
    """Every host connecting and probing in its own worker thread from the moment this is made.

    Use as a context manager (leaving it waits for the workers): `wait_connected()`, then load the checks
    while the hosts answer, then `reports(checks)`.
    """

    def __init__(self, targets: Iterable[DoctorTarget], deep: bool) -> None:
        self._targets = list(targets)
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(16, len(self._targets))))
        self._connected = [threading.Event() for _ in self._targets]
        self._switch_interval: float | None = None  # the interpreter's, while ours is in force
        self._observed: list[Future[HostReport]] = [
            self._pool.submit(_observe, target, deep, connected)
            for target, connected in zip(self._targets, self._connected, strict=True)
        ]

    def wait_connected(self) -> None:
        """Return once every host is connected or has failed to: its probe is then the host's work, and
        whatever the caller does next overlaps it instead of slowing the connection down."""
        for connected in self._connected:
            connected.wait()
        if self._switch_interval is None:
            # The caller now imports (CPU, holding the GIL) while the workers and paramiko's threads still
            # open the channel and send the probe: hand the GIL over within 0.5 ms instead of 5 ms.
            self._switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(self._switch_interval, SHARED_GIL_SWITCH_S))

    def adopt(self, targets: list[DoctorTarget]) -> None:
        """Judge the answers against `targets` (the same hosts, in order, with their validated config): an
        examination started from a remembered plan connected before the config was validated."""
        if [target.name for target in targets] != [target.name for target in self._targets]:
            raise ValueError("adopt: not the hosts this examination connected to")
        self._targets = list(targets)

    def reports(self, checks: list[CheckSpec]) -> dict[str, HostReport]:
        """Each host's report with `checks` run on its facts, in the targets' order."""
        _load_answer_modules()
        return {
            target.name: _judge(observed.result(), target, checks)
            for target, observed in zip(self._targets, self._observed, strict=True)
        }

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._pool.shutdown(wait=True)
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None


def _load_answer_modules() -> None:
    """What the workers need once the answers arrive (the facts' models, the fingerprint store), imported by
    the waiting caller so that no worker spends that time after its host has answered."""
    import specops.diagnose.fingerprint
    import specops.diagnose.store
    import specops.probe.parse  # noqa: F401


def remember_fingerprint(name: str, facts: HostFacts) -> None:
    """Keep what this host is made of in the local state, for `specops diff` and `diagnose` later."""
    from specops.diagnose.fingerprint import fingerprint_from_facts
    from specops.diagnose.store import remember

    remember(name, fingerprint_from_facts(facts, host=name))

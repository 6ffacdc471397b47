"""Stop the serving engine before a deliberate restart: drain its running requests, then prove its GPUs free.

1. Drain. `systemctl stop --no-block`: with KillMode=mixed only the main process gets SIGTERM, and SGLang then
   refuses new requests and finishes the running ones before it exits. specops reads `/metrics` through the
   SSH connection once a second (the live view shows the count; whether the engine is gone is checked every
   0.1 s for the first 2 s, then once a second) until the engine is gone or the profile's drain budget runs
   out; then SIGKILL, and the requests still running or queued are reported as cut.
2. Free GPUs. A new engine started while the old one's processes still hold GPU memory fails with an OOM
   (or sizes a tiny KV cache). Wait until no process is left in the unit's cgroup and the unit's GPUs are
   back to baseline; name whatever still holds them. With `reap`, orphans of this unit's engine (proven by
   specops.probe.gpu_holders) are stopped; anyone else's process never is, and the restart is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specops.commands.engine_stop import (
    ACTIVE_STATES,
    reap_words,
    state_argv,
)
from specops.commands.planned import HostCommand
from specops.commands.unit import parse_show
from specops.config.inventory import HostSpec
from specops.config.profile import Profile
from specops.config.redact import mask_secrets
from specops.engine.request_gauges import RequestGauges, parse_request_gauges
from specops.errors import ExitCode, SpecopsError
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.ops.stop_commands import StopCommands
from specops.probe.gpu_holders import GpuVerdict, Holder, InspectError, gpu_indexes, judge, parse_inspect

COMMAND_TIMEOUT_S = 60.0
POLL_S = 1.0
FIRST_POLL_S = 0.1  # an engine with nothing to drain is gone within a fraction of a second: look often at first
FAST_POLLS = 20  # the first 2 s
KILL_WAIT_S = 30.0  # after SIGKILL, for systemd to see the unit's processes gone
FREE_WAIT_S = 30.0  # for the cgroup to empty and the GPUs' memory to come back after the stop
METRICS_TIMEOUT_S = 5.0


class GpusBusy(SpecopsError):
    """Processes still hold the unit's GPUs after the stop: the new engine was not started."""

    exit_code = ExitCode.CHECKS_FAILED


@dataclass
class DrainResult:
    was_running: bool
    budget_s: int
    seconds: float = 0.0
    at_start: RequestGauges | None = None
    last: RequestGauges | None = None
    cut: int = 0  # requests running or queued when the budget ran out (the engine was then killed)
    killed: bool = False

    def summary(self) -> str:
        if not self.was_running:
            return "the engine was not running: nothing to drain"
        if self.killed:
            plural = "request" if self.cut == 1 else "requests"
            return f"drain budget of {self.budget_s} s ran out: {self.cut} {plural} cut (SIGKILL)"
        start = f" ({self.at_start.describe()} at the stop)" if self.at_start and self.at_start.known else ""
        return f"drained in {self.seconds:.1f} s{start}"

    def to_json(self) -> dict[str, Any]:
        def gauges(value: RequestGauges | None) -> dict[str, int | None] | None:
            return None if value is None else {"running": value.running, "queued": value.queued}

        return {"was_running": self.was_running, "budget_s": self.budget_s, "seconds": round(self.seconds, 3),
                "at_start": gauges(self.at_start), "last": gauges(self.last), "cut": self.cut,
                "killed": self.killed}  # fmt: skip


@dataclass
class FreeResult:
    checked: bool = True  # False: the host has no nvidia-smi (no GPUs to judge)
    seconds: float = 0.0
    reaped: list[Holder] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"checked": self.checked, "seconds": round(self.seconds, 3),
                "reaped": [holder.to_json() for holder in self.reaped]}  # fmt: skip


@dataclass
class StopResult:
    drain: DrainResult
    gpus: FreeResult

    def to_json(self) -> dict[str, Any]:
        return {"drain": self.drain.to_json(), "gpus": self.gpus.to_json()}


@dataclass
class _Clock:
    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


Confirm = Callable[[str], None]  # raises when the lock is no longer ours (lock.HostLock.confirm): change nothing


def no_lock(before: str) -> None:
    """No lock to confirm (a caller that holds none, or a test)."""


def stop_engine(host: Host, spec: HostSpec, profile: Profile, reporter: Reporter, *, reap: bool = False,
                clock: _Clock | None = None, confirm: Confirm = no_lock,
                commands: StopCommands | None = None) -> StopResult:  # fmt: skip
    """Drain and stop the unit, then wait for its GPUs (raises GpusBusy, naming the holders and the fix).
    `confirm` runs before each command that stops or kills anything: a caller that lost its lock meanwhile (it
    was suspended, and the guard started an engine) stops nothing. `commands`: the plan's (StopCommands.planned)."""
    ticking = clock or _Clock()
    commands = commands or StopCommands.built(spec)
    drain = drain_and_stop(host, spec, profile, reporter, ticking, confirm, commands)
    return StopResult(drain, free_gpus(host, spec, reporter, reap=reap, clock=ticking, confirm=confirm,
                                       commands=commands))  # fmt: skip


def poll_delay(polls: int) -> float:
    """The wait before the next check after `polls` checks: every 0.1 s for the first FAST_POLLS checks, then once a
    second. During a deploy each check is a request on its command conversation (no new exec), so looking often
    costs little and ends the stop, which every user of the engine waits for, as soon as the engine is gone."""
    return FIRST_POLL_S if polls < FAST_POLLS else POLL_S


def _active(host: Host, spec: HostSpec, planned: HostCommand) -> bool:
    return _state(host, spec, planned) in ACTIVE_STATES


def _state(host: Host, spec: HostSpec, planned: HostCommand | None = None) -> str:
    argv = planned.argv if planned is not None else state_argv(spec.unit_name)
    show = parse_show(host.run(argv, timeout=COMMAND_TIMEOUT_S).text)
    return show.get("ActiveState", "")


def unit_running(host: Host, spec: HostSpec, planned: HostCommand | None = None) -> bool:
    """The engine runs or is starting, and no stop was asked for (a stop in progress is "deactivating").
    `planned`: a plan's own state command, run as it is."""
    return _state(host, spec, planned) in ("active", "activating", "reloading")


def _gauges(host: Host, spec: HostSpec) -> RequestGauges | None:
    """The engine's request gauges now; None when it does not answer (gone, or started without metrics)."""
    from specops.engine.client import EngineClient, EngineError

    try:
        with EngineClient(host, spec, timeout=METRICS_TIMEOUT_S) as engine:
            text = engine.metrics()
    except EngineError:
        return None
    return parse_request_gauges(text) if text is not None else None


def drain_and_stop(host: Host, spec: HostSpec, profile: Profile, reporter: Reporter, clock: _Clock,
                   confirm: Confirm = no_lock, commands: StopCommands | None = None) -> DrainResult:  # fmt: skip
    """Read the gauges, ask systemd to stop (SIGTERM to the main process), watch until the engine is gone or the
    budget runs out (then SIGKILL). The same commands whether or not the engine runs: stopping a stopped unit
    is a no-op, so the plan can show them."""
    commands = commands or StopCommands.built(spec)
    budget = profile.drain.timeout_s
    result = DrainResult(was_running=False, budget_s=budget)
    result.at_start = result.last = _gauges(host, spec)
    confirm(f"stopping {spec.unit_name}")
    started = clock.now()
    host.run(commands.stop.argv, timeout=COMMAND_TIMEOUT_S, check=False)  # not loaded yet: nothing runs
    polls, gauges_at = 0, started
    while _active(host, spec, commands.state):
        confirm(f"waiting for {spec.unit_name} to stop")  # resumed after a suspension: the engine may be another's
        if not result.was_running:
            result.was_running = True
            counts = result.at_start.describe() if result.at_start else "request counts unknown (no /metrics)"
            say = f"stopping {spec.unit_name}: {counts}; up to {budget} s for running requests to finish"
            reporter.event(Event(spec.name, "drain", say))
        waited = clock.now() - started
        if waited >= budget:
            confirm(f"killing {spec.unit_name}")  # suspended mid-drain: the engine now running may be another's
            _kill(host, commands, result)
            break
        if clock.now() - gauges_at >= POLL_S:  # the request counts once a second: the live view needs no more
            gauges_at = clock.now()
            result.last = _gauges(host, spec) or result.last
        if result.last is not None:
            data = {"running": result.last.running, "queued": result.last.queued, "waited_s": round(waited, 1)}
            line = f"draining: {result.last.describe()} ({waited:.0f} of {budget} s)"
            reporter.event(Event(spec.name, "drain", line, level="progress", data=data))
        clock.sleep(poll_delay(polls))
        polls += 1
    result.seconds = clock.now() - started
    if result.was_running:
        reporter.event(Event(spec.name, "drain", result.summary(), level="warn" if result.killed else "info"))
    return result


def _kill(host: Host, commands: StopCommands, result: DrainResult) -> None:
    """SIGKILL to the whole cgroup, then a blocking `systemctl stop`: it returns once systemd saw them all go."""
    result.killed = True
    result.cut = result.last.in_flight if result.last is not None else 0
    host.run(commands.kill.argv, timeout=COMMAND_TIMEOUT_S, check=False)  # it may end by itself meanwhile
    host.run(commands.stop_wait.argv, timeout=COMMAND_TIMEOUT_S + KILL_WAIT_S, check=False)


def inspect_gpus(host: Host, spec: HostSpec, planned: HostCommand) -> tuple[bool, GpuVerdict]:
    """(whether the host has nvidia-smi, the verdict on the unit's cgroup and GPUs) in one round trip."""
    text = host.run(planned.argv, timeout=COMMAND_TIMEOUT_S).text
    try:
        snapshot = parse_inspect(text)
    except InspectError as error:
        raise GpusBusy(
            f"{spec.name}: the new engine was not started: the host's process listing could not be read "
            f"({error}); nothing was stopped",
            hint="run the check again; if it persists, see `nvidia-smi` and `ps` on the host",
        ) from None
    return snapshot.has_gpus, judge(snapshot, spec.unit_name, spec.service_dir, gpu_indexes(spec.gpus))


def free_gpus(host: Host, spec: HostSpec, reporter: Reporter, *, reap: bool, clock: _Clock,
              confirm: Confirm = no_lock, commands: StopCommands | None = None) -> FreeResult:  # fmt: skip
    started = clock.now()
    result = FreeResult()
    commands = commands or StopCommands.built(spec)
    verdict = _wait_free(host, spec, result, clock, commands.inspect)
    if not verdict.free and reap and verdict.holders and all(holder.orphan for holder in verdict.holders):
        for holder in verdict.holders:
            reporter.event(Event(spec.name, "gpus", f"reaping {holder.describe()}", level="warn"))
        confirm("reaping the old engine's orphans")
        targets = [(holder.pid, holder.start, holder.invocation) for holder in verdict.holders]
        host.run(commands.reap.filled(processes=reap_words(targets)).argv, timeout=COMMAND_TIMEOUT_S)
        result.reaped = list(verdict.holders)
        verdict = _wait_free(host, spec, result, clock, commands.inspect)
    result.seconds = clock.now() - started
    if not verdict.free:
        raise _busy(spec, verdict, reap)
    if result.checked:
        reporter.event(Event(spec.name, "gpus", f"the unit's cgroup is empty and its GPUs are free "
                                                f"({result.seconds:.1f} s)"))  # fmt: skip
    return result


def _wait_free(host: Host, spec: HostSpec, result: FreeResult, clock: _Clock, inspect: HostCommand) -> GpuVerdict:
    deadline = clock.now() + FREE_WAIT_S
    polls = 0
    while True:
        result.checked, verdict = inspect_gpus(host, spec, inspect)
        if verdict.free or clock.now() >= deadline:
            return verdict
        if verdict.holders and not verdict.unit_left:
            return verdict  # processes outside the unit: waiting does not make them go (memory being freed does)
        clock.sleep(poll_delay(polls))
        polls += 1


def _busy(spec: HostSpec, verdict: GpuVerdict, reap: bool) -> GpusBusy:
    lines = [holder.describe() for holder in verdict.holders]
    lines += [f"pid {proc.pid} ({mask_secrets(proc.cmdline) or '?'}) is still in {spec.unit_name}'s cgroup"
              for proc in verdict.unit_left]  # fmt: skip
    lines += verdict.unexplained
    orphans = [holder for holder in verdict.holders if holder.orphan]
    foreign = [holder for holder in verdict.holders if not holder.orphan]
    if foreign:
        pids = ", ".join(str(holder.pid) for holder in foreign)
        hint = (f"pid {pids} is not {spec.unit_name}'s: specops never stops it; free the GPU (or change "
                f"hosts.{spec.name}.gpus), then deploy again")  # fmt: skip
    elif orphans and not reap:
        hint = "rerun with --reap to stop the orphans of the old engine (only those), or `kill " + " ".join(
            str(holder.pid) for holder in orphans) + "` on the host"  # fmt: skip
    else:
        hint = f"wait for the memory to be freed, or see `nvidia-smi` on the host; {spec.unit_name} was not started"
    return GpusBusy(f"{spec.name}: the new engine was not started: its GPUs are not free:\n  " + "\n  ".join(lines),
                    hint=hint)  # fmt: skip

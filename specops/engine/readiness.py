"""Wait for a (re)started engine to serve, or fail fast and say why.

`systemctl is-active` is not readiness: a Type=simple unit is "active" the moment the process forks, and
stays so while it loads weights for 15 minutes, or for the seconds between a torchcodec traceback and the
crash. Ready means: HTTP 200 from /health_generate (a real 1-token generation through the GPU loop) while
the unit is active.

Each poll is ONE host.run (`systemctl show` + the journal since a cursor, specops.commands.journal) plus
one /health_generate through the SSH tunnel; during a deploy that run is a request on its command conversation
(specops/host/conversation.py), not an exec, so polls come twice a second. The wait ends AT ONCE when:
- the journal shows a fatal signature (specops.engine.signatures), e.g. torchcodec's FFmpeg error;
- the main process exits, systemd schedules a restart (auto-restart), or NRestarts / the main PID change;
- systemd refused to start the unit (Result=start-limit-hit): named as such, never as the old exit status.

Deadline rule: `profile.readiness.timeout_s` from the start; every PROGRESS line (weights loading, CUDA graph
capture, HTTP up...) moves the deadline to at least `now + grace_s` (default min(300 s, timeout_s)), so a slow
but advancing load is never cut off - up to a hard cap of 2 x timeout_s, so an endless loop still ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from specops.commands import journal
from specops.engine.readiness_commands import ReadinessCommands, position_reads
from specops.engine.signatures import JournalScanner, Match, primary_cause
from specops.errors import CommandFailed

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.profile import Profile
    from specops.host.base import Host

POLL_INTERVAL_S = 0.5  # a poll is one request on the deploy's conversation, not an exec: a crash shows within ~0.5 s
POLL_COMMAND_TIMEOUT_S = 30.0
HEALTH_TIMEOUT_S = 20.0  # SGLang's own health-check timeout; a longer wait learns nothing more
MAX_GRACE_S = 300.0
HARD_CAP_FACTOR = 2.0
TAIL_LINES = 40

ProgressCallback = Callable[[str, str], None]


@dataclass(frozen=True)
class Readiness:
    """How the wait ended. `cause` is the signature that explains a failure (None when ok, or unknown)."""

    ok: bool
    cause: Match | None
    phase: str
    seconds: float
    last_line: str
    restarts: int
    reason: str
    problems: list[Match] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "reason": self.reason,
            "cause": self.cause.to_json() if self.cause else None,
            "phase": self.phase,
            "seconds": round(self.seconds, 2),
            "last_line": self.last_line,
            "restarts": self.restarts,
            "problems": [problem.to_json() for problem in self.problems],
            "tail": self.tail,
        }


def journal_position(host: Host, timeout: float = POLL_COMMAND_TIMEOUT_S,
                     commands: ReadinessCommands | None = None) -> str:  # fmt: skip
    """The journal's end NOW, to pass to wait_ready BEFORE restarting: only lines after it are read.
    `commands`: a plan's (ReadinessCommands.planned); its cursor read, then its clock when the journal is empty."""
    cursor_read, clock_read = (commands.cursor, commands.clock) if commands else position_reads()
    result = host.run(cursor_read.argv, timeout=timeout, check=False)  # no journal: the host's clock below
    _, cursor = journal.split_journal(result.text)
    if cursor:
        return cursor
    epoch = host.run(clock_read.argv, timeout=timeout).text.strip()
    return f"@{epoch}"


def unit_problems(host: Host, spec: HostSpec, timeout: float = POLL_COMMAND_TIMEOUT_S,
                  commands: ReadinessCommands | None = None) -> list[Match]:  # fmt: skip
    """Fatal/error/warning signatures in the journal of the unit's current run (to explain a failed smoke)."""
    argv = (commands or ReadinessCommands.built(spec)).invocation.argv
    result = host.run(argv, timeout=timeout, check=False)  # not running (no InvocationID): nothing to explain
    found = JournalScanner().feed(journal.journal_lines(result.text))
    return [match for match in found if match.signature.kind in ("fatal", "error", "warning")]


class _Wait:
    """The state of one wait; `step()` runs one poll and returns a Readiness when the wait is over."""

    def __init__(
        self,
        host: Host,
        spec: HostSpec,
        profile: Profile,
        position: str | None,
        clock: Callable[[], float],
        grace_s: float | None,
        commands: ReadinessCommands,
    ) -> None:
        self.host, self.spec, self.position, self.clock = host, spec, position, clock
        self.commands = commands
        self.started = clock()
        limit = self.limit = float(profile.readiness.timeout_s)
        self.grace = grace_s if grace_s is not None else min(MAX_GRACE_S, limit)
        self.deadline = self.started + limit
        self.hard_cap = self.started + HARD_CAP_FACTOR * limit
        self.scanner = JournalScanner()
        self.phase, self.last_line, self.last_error = "starting", "", ""
        self.problems: list[Match] = []
        self.tail: list[str] = []
        self.first: journal.UnitState | None = None
        self.state = journal.UnitState()

    def poll_host(self) -> Match | None:
        """One round trip: unit state + new journal lines; returns the first fatal match among them."""
        # journalctl exits 1, silently, when the unit logged nothing after the cursor (an engine that kept running
        # through an interrupted stop): the unit's state, before the marker, is still the answer
        argv = self.commands.poll_at(self.position)
        result = self.host.run(argv, timeout=POLL_COMMAND_TIMEOUT_S, check=False)
        if result.exit_code != 0 and journal.POLL_MARKER not in result.text:
            raise CommandFailed(result, self.host.name)
        self.state, lines, cursor = journal.parse_poll(result.text)
        self.position = cursor or self.position
        self.first = self.first or self.state
        lines = [line for line in lines if line.strip() and line.strip() != "-- No entries --"]
        self.tail = (self.tail + lines)[-TAIL_LINES:]
        fatal = None
        for found in self.scanner.feed(lines):
            fatal = fatal or self._note(found)
        for line in lines:
            self.last_line = line.strip()
            if _looks_like_error(line):
                self.last_error = line.strip()
        return fatal

    def _note(self, found: Match) -> Match | None:
        kind = found.signature.kind
        if kind == "progress":
            self.phase = found.signature.phase or self.phase
            self.deadline = min(max(self.deadline, self.clock() + self.grace), self.hard_cap)
        elif kind == "ready":
            self.phase = "ready"
        elif found not in self.problems:
            self.problems.append(found)
        return found if found.fatal else None

    def process_ended(self) -> str:
        """Why the engine process is gone or replaced, or "" while it runs."""
        first, now = self.first or self.state, self.state
        if now.start_limit_hit:
            return start_limit_reason(self.spec.unit_name, now)
        if now.n_restarts > first.n_restarts:
            return f"systemd restarted the engine (NRestarts {first.n_restarts} -> {now.n_restarts})"
        if first.main_pid and now.main_pid not in (0, first.main_pid):
            return f"the engine process was replaced (PID {first.main_pid} -> {now.main_pid})"
        if now.failed or (now.main_pid == 0 and now.active_state != "activating"):
            status = f" with status {now.exec_main_status}" if now.exec_main_status else ""
            return f"the engine process exited{status} (unit {now.active_state}/{now.sub_state})"
        return ""

    def deadline_passed(self) -> str:
        """Why the wait gave up, with the deadline it applied: readiness.timeout_s, and how far start-up
        progress moved it (never past the hard cap)."""
        waited, allowed = self.clock() - self.started, self.deadline - self.started
        moved = ""
        if allowed > self.limit:
            moved = f", moved to {allowed:.0f}s by start-up progress (at most {HARD_CAP_FACTOR * self.limit:g}s)"
        return (f"not ready after {waited:.0f}s (phase: {self.phase}; deadline passed: "
                f"readiness.timeout_s = {self.limit:g}s{moved})")  # fmt: skip

    def result(self, ok: bool, reason: str, cause: Match | None = None) -> Readiness:
        if not ok and cause is None:
            cause = primary_cause(self.problems)
        if not ok and cause is None and self.last_error:
            reason += f"; last error: {self.last_error}"
        restarts = (self.state.n_restarts - self.first.n_restarts) if self.first else 0
        return Readiness(
            ok=ok,
            cause=None if ok else cause,
            phase=self.phase,
            seconds=self.clock() - self.started,
            last_line=self.last_line,
            restarts=restarts,
            reason=reason,
            problems=list(self.problems),
            tail=list(self.tail),
        )


def start_limit_reason(unit: str, state: journal.UnitState) -> str:
    """Why no engine runs when systemd's start-rate limit refused the start, and how to get going again."""
    burst = state.start_limit_burst or "?"
    interval = state.start_limit_interval or "?"
    return (
        f"systemd refused to start the unit: {journal.START_LIMIT_HIT} (StartLimitBurst={burst} in "
        f"StartLimitIntervalSec={interval}): it was started that often within the interval (a crash loop, or "
        f"restarts outside specops); run `systemctl reset-failed {unit}` on the host once the cause is fixed, "
        "then deploy again (raise readiness.start_limit_burst in the profile if the restarts are expected)"
    )


def wait_ready(
    host: Host,
    spec: HostSpec,
    profile: Profile,
    *,
    since_cursor_or_time: str | None,
    on_progress: ProgressCallback | None = None,
    health: Callable[[], int] | None = None,
    poll_interval_s: float = POLL_INTERVAL_S,
    grace_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    commands: ReadinessCommands | None = None,
) -> Readiness:
    """Poll until /health_generate answers 200 with the unit active, a failure shows, or the deadline passes.

    since_cursor_or_time: from journal_position(), taken BEFORE the restart. health: the /health_generate
    probe (default: EngineClient through host.open_tunnel). on_progress(phase, last journal line) after each poll.
    commands: a plan's (ReadinessCommands.planned): its poll, the position filled in each time.
    """
    wait = _Wait(host, spec, profile, since_cursor_or_time, clock, grace_s, commands or ReadinessCommands.built(spec))
    client = None
    if health is None:
        from specops.engine.client import EngineClient

        client = EngineClient(host, spec)
        probe = client  # bound once: mypy keeps the narrowed type inside the lambda
        health = lambda: probe.health_generate(timeout=HEALTH_TIMEOUT_S)  # noqa: E731
    try:
        return _loop(wait, health, on_progress, poll_interval_s, sleep)
    finally:
        if client is not None:
            client.close()


def _loop(
    wait: _Wait,
    health: Callable[[], int],
    on_progress: ProgressCallback | None,
    poll_interval_s: float,
    sleep: Callable[[float], None],
) -> Readiness:
    while True:
        fatal = wait.poll_host()
        if fatal is not None:
            wait.poll_host()  # the rest of the traceback (the FFmpeg majors tried) may follow in the next lines
            return wait.result(False, f"the journal shows a fatal error: {fatal.summary}", fatal)
        ended = wait.process_ended()
        if ended:
            return wait.result(False, ended)
        if on_progress is not None:
            on_progress(wait.phase, wait.last_line)
        if wait.state.active_state == "active" and health() == 200:
            wait.phase = "ready"
            return wait.result(True, "GET /health_generate answered 200 and the unit is active")
        if wait.clock() >= wait.deadline:
            return wait.result(False, wait.deadline_passed())
        sleep(poll_interval_s)


def _looks_like_error(line: str) -> bool:
    """A Python exception line (`RuntimeError: ...`) or an explicit error line: a cause when no signature fits."""
    head = line.strip().split(":", 1)[0]
    return (head.endswith(("Error", "Exception")) and " " not in head) or line.lstrip().startswith("ERROR:")

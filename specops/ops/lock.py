"""The per-host deploy lock: one deploy/rollback per host at a time, and never a lock that outlives its owner.

    holder = LockHolder.current("specops deploy llm-two --profile ddtree")
    with acquire(host, holder, wait_s=60) as lock:      # LockHeld (exit 6) names who holds it
        ...                                               # a thread rewrites holder.json every heartbeat_s
    # released here on every exit path: return, exception, KeyboardInterrupt

Lessons from Kamal: its lock is released on StandardError only, so a Ctrl-C or a
killed CI job left hosts locked for weeks. Here `__exit__` always releases, and a lock whose holder stopped
heartbeating (kill -9, lost laptop) turns stale after `stale_after_s` and is taken over, saying so; a holder
that is provably dead (a specops process on THIS machine that no longer runs: `dead_here`) is taken over at
once, without waiting for its heartbeat to age. The host-side steps and their atomicity are in
specops/commands/lock.py.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import TracebackType

from specops.commands.lock import DEFAULT_LOCK_ROOT, HOLDER_FILE, LockReply, lock_argv, parse_lock_reply
from specops.commands.planned import SLOTS, HostCommand, by_role, run
from specops.errors import CommandFailed, ExitCode, LockHeld, SpecopsError
from specops.host.base import Host
from specops.ops import interrupts, notify
from specops.ops.lock_holder import LockHolder, LockInfo, dead_here, local_who, utc_now

__all__ = ["HostLock", "LockHolder", "LockInfo", "LockLost", "acquire", "local_who", "status", "utc_now"]  # fmt: skip

DEFAULT_STALE_AFTER_S = 90.0
DEFAULT_HEARTBEAT_S = 15.0
POLL_S = 2.0
LOCK_COMMAND_TIMEOUT_S = 40.0

# A lock last proven ours longer ago than this (more than one heartbeat interval: the heartbeat thread did not run,
# the process was suspended) is asked about before the host is changed; otherwise confirming costs nothing.
CONFIRM_AFTER_S = DEFAULT_HEARTBEAT_S + 5.0

EventSink = Callable[[str], None]


class LockLost(SpecopsError):
    """The lock was removed or taken over while its holder ran (a suspended laptop, `specops lock release
    --force`, the guard): the holder changes nothing more on the host and stops."""

    exit_code = ExitCode.LOCK_HELD


def lock_root(root: str | None = None) -> str:
    """`root` if given, else DEFAULT_LOCK_ROOT, read at call time (tests point it at a temporary folder)."""
    return root or DEFAULT_LOCK_ROOT


# The roles of the lock's commands in a plan (HostCommand.role): a deploy and a restart take and release the lock
# with the very commands their plan shows (specops/deploy/step_commands.py builds them).
ACQUIRE, TAKEOVER, HEARTBEAT, RELEASE = "lock-acquire", "lock-takeover", "lock-heartbeat", "lock-release"


@dataclass(frozen=True)
class LockCommands:
    """The commands one holder takes, keeps and releases the lock with. `takeover` holds the slot `dead` (the
    token of a holder proven dead here, known only once its lock is seen)."""

    acquire: HostCommand
    takeover: HostCommand
    heartbeat: HostCommand
    release: HostCommand

    @classmethod
    def planned(cls, commands: tuple[HostCommand, ...]) -> LockCommands:
        """The plan's own lock commands, by role (a plan's lock and unlock steps together)."""
        parts = by_role(commands)
        return cls(parts[ACQUIRE], parts[TAKEOVER], parts[HEARTBEAT], parts[RELEASE])

    @classmethod
    def built(cls, root: str, token: str, stale_after_s: float) -> LockCommands:
        """For the commands that take the lock without a plan to print (`specops rollback`, `release prune`)."""
        return cls(run(lock_argv("acquire", root, token, stale_after_s)),
                   run(lock_argv("acquire", root, token, stale_after_s, DEAD_MARK)),
                   run(lock_argv("heartbeat", root, token)), run(lock_argv("release", root, token)))  # fmt: skip


DEAD_MARK = SLOTS["dead"].mark  # the dead holder's token, filled in once the lock is seen


def run_lock(host: Host, op: str, root: str, token: str = "", stale_after_s: float = 0,
              holder: LockHolder | None = None) -> LockReply:  # fmt: skip
    """An operator's lock command (`specops lock status|release`): no plan holds it."""
    return _run_command(host, run(lock_argv(op, root, token, stale_after_s)), root, holder)


def _run_command(host: Host, command: HostCommand, root: str, holder: LockHolder | None = None) -> LockReply:
    data = holder.to_json() if holder else None
    result = host.run(command.argv, input=data, timeout=LOCK_COMMAND_TIMEOUT_S, check=False)  # raised below
    if not result.ok:
        raise CommandFailed(result, host=host.name, hint=f"the lock lives in {root} on the host")
    return parse_lock_reply(result.text)


def lock_info(host: Host, reply: LockReply, stale_after_s: float, root: str) -> LockInfo:
    path = f"{root}/{HOLDER_FILE}"
    holder = LockHolder.from_json(reply.holder_text, host.name, path) if reply.holder_text else None
    return LockInfo(host.name, holder, reply.heartbeat_age_s, stale_after_s)


def status(host: Host, *, root: str | None = None, stale_after_s: float = DEFAULT_STALE_AFTER_S) -> LockInfo | None:
    """The lock's holder, or None when the host is free."""
    reply = run_lock(host, "status", lock_root(root))
    return lock_info(host, reply, stale_after_s, lock_root(root)) if reply.state == "held" else None


def acquire(
    host: Host,
    holder: LockHolder,
    *,
    wait_s: float = 0,
    stale_after_s: float = DEFAULT_STALE_AFTER_S,
    heartbeat_s: float = DEFAULT_HEARTBEAT_S,
    root: str | None = None,
    on_event: EventSink | None = None,
    commands: LockCommands | None = None,
) -> HostLock:
    """Take the host's lock (waiting up to wait_s for a live holder), or raise LockHeld naming the holder.
    `commands`: the plan's (a deploy's, a restart's), run as they are, the dead holder's token filled in."""
    say = on_event or (lambda message: None)
    root = lock_root(root)
    commands = commands or LockCommands.built(root, holder.token, stale_after_s)
    deadline = time.monotonic() + wait_s
    announced, dead = False, ("", "")
    while True:
        now = utc_now()
        attempt = replace(holder, started_at=now, heartbeat_at=now)  # "since" = when we got it, not asked
        try:
            command = commands.takeover.filled(dead=dead[0]) if dead[0] else commands.acquire
            reply = _run_command(host, command, root, attempt)
        except BaseException:  # Ctrl-C or a dropped connection mid-acquire: the lock may exist, remove it
            _release_quietly(host, root, commands.release)
            raise
        if reply.state in {"acquired", "taken-over"}:
            previous = lock_info(host, reply, stale_after_s, root) if reply.state == "taken-over" else None
            why = _takeover_reason(previous, dead)
            if previous is not None:
                say(f"{host.name}: {why}")
                notify.send(notify.event("lock.taken-over", host=host.name, release=None, outcome="taken-over",
                                         cause=why))  # fmt: skip
            return HostLock(host, attempt, root=root, heartbeat_s=heartbeat_s, took_over=previous, on_event=say,
                            took_over_why=why, commands=commands)  # fmt: skip
        info = lock_info(host, reply, stale_after_s, root)
        why = dead_here(info.holder) if info.holder and info.holder.token != dead[0] else ""
        if info.holder and why:
            dead = (info.holder.token, why)
            continue  # at once (once per holder), and only that holder: the script compares its token
        left = deadline - time.monotonic()
        if left <= 0:
            raise lock_held_error(info, wait_s)
        if not announced:
            say(f"{host.name}: waiting up to {wait_s:g}s for the lock held by {info.describe()}")
            announced = True
        time.sleep(min(POLL_S, left))


def _takeover_reason(previous: LockInfo | None, dead: tuple[str, str]) -> str:
    """The line that says a lock was taken over and why: its holder proven dead here, or its heartbeat too old."""
    if previous is None:
        return ""
    if previous.holder is not None and dead[0] == previous.holder.token:
        return f"took over the lock of a deploy that no longer runs ({dead[1]}): {previous.describe()}"
    return f"took over a stale lock held by {previous.describe()}"


def _release_quietly(host: Host, root: str, release: HostCommand) -> None:
    with contextlib.suppress(SpecopsError, OSError):
        _run_command(host, release, root)


def lock_held_error(info: LockInfo, waited_s: float = 0) -> LockHeld:
    waited = f" (waited {waited_s:g}s)" if waited_s else ""
    return LockHeld(
        f"{info.host}: locked by {info.describe()}{waited}",
        hint=f"wait for it with --lock-wait SECONDS, or, if you are sure no deploy is running there: "
        f"specops lock release {info.host}",
    )


class HostLock:
    """A held lock: a daemon thread heartbeats it; `__exit__` (or `release()`) stops that and removes it.
    `took_over`: the holder whose lock this one replaced (None: the lock was free); `took_over_why`: the line
    that said so."""

    def __init__(self, host: Host, holder: LockHolder, *, root: str, heartbeat_s: float,
                 took_over: LockInfo | None, on_event: EventSink, commands: LockCommands,
                 took_over_why: str = "") -> None:  # fmt: skip
        self.host = host
        self.commands = commands
        self.holder = holder
        self.root = root
        self.took_over = took_over
        self.took_over_why = took_over_why
        self.lost = False
        self.beats = 0
        self._proven_at = time.monotonic()  # when the lock was last proven ours (taken, or a heartbeat it took)
        self.release_error: SpecopsError | None = None
        self._say = on_event
        self._released = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat_loop, args=(heartbeat_s,), daemon=True,
                                        name=f"specops-lock-heartbeat-{host.name}")  # fmt: skip
        self._thread.start()

    def __enter__(self) -> HostLock:
        return self

    @property
    def takeover_note(self) -> str:
        """One line for the outcome and the audit log ("" when the lock was free)."""
        return self.took_over_why if self.took_over is not None else ""

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.release()

    def release(self) -> bool:
        """Stop the heartbeat and remove the lock if it is still ours; never raises (a failure leaves a lock
        that turns stale once the heartbeat stops, and is recorded in `release_error`). True if removed."""
        if self._released:
            return False
        self._released = True
        self._stop.set()
        self._thread.join(timeout=LOCK_COMMAND_TIMEOUT_S + 5)
        try:
            reply = _run_command(self.host, self.commands.release, self.root)
        except SpecopsError as error:
            self.release_error = error
            self._say(f"{self.host.name}: could not release the lock ({error.message}); it turns stale by itself")
            return False
        if reply.state != "released":
            self._say(f"{self.host.name}: the lock was no longer ours when we released it")
        return reply.state == "released"

    def confirm(self, before: str) -> None:
        """Raise LockLost unless the lock is still ours, right before a command that changes the host (`before`
        names it). The heartbeat thread's flag is not enough: a process suspended for minutes (SIGSTOP, a laptop
        lid) runs on after SIGCONT before its next heartbeat finds the lock gone, and would stop an engine
        someone else (the guard) just started. So a lock last proven ours over CONFIRM_AFTER_S ago is asked
        about now, with one heartbeat (while the heartbeat thread runs, never). A signal whose exception was
        dropped on the way (see ops/interrupts.py) ends the command here, before the next change."""
        interrupts.check()
        if not self.lost and time.monotonic() - self._proven_at > CONFIRM_AFTER_S:
            self._beat()
        if self.lost:
            raise LockLost(
                f"{self.host.name}: lost the lock (removed or taken over by someone else); stopped before {before}, "
                "changing nothing more on the host",
                hint=f"`specops lock status {self.host.name}` names the holder; if the release was switched, the "
                f"rollback guard puts the last verified one back; `specops status {self.host.name}` shows it",
            )

    def _beat_loop(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            if not self._beat():
                return

    def _beat(self) -> bool:
        """One heartbeat; False once the lock is found lost (a failed command leaves the question open)."""
        started = time.monotonic()
        beat = replace(self.holder, heartbeat_at=utc_now())
        try:
            reply = _run_command(self.host, self.commands.heartbeat, self.root, beat)
        except SpecopsError as error:
            self._say(f"{self.host.name}: lock heartbeat failed: {error.message}")
            return True
        if reply.state != "beat":
            if not self.lost:
                self.lost = True
                self._say(f"{self.host.name}: lost the lock (removed or taken over by someone else)")
            return False
        self._proven_at = max(self._proven_at, started)
        self.beats += 1
        return True

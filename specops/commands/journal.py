"""Pure argv builders and parsers for what the readiness wait reads on a host: `systemctl show` and the journal.

Why one combined poll: a readiness wait polls for up to tens of minutes, and every SSH round trip costs time
and a line in the host's auth log. `poll_argv` prints the unit's state AND the journal lines since a cursor
in ONE `host.run`, split by a marker line that no journal line can be (journal lines come after it).

Journal positions are cursors (`s=...;i=...`): global and exact, so a restart never re-reads the previous
run's lines (a timestamp can: two runs within the same second). Where no cursor exists yet, a time
(`@EPOCH` or any systemd.time(7) spec) is accepted instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from specops.commands.planned import SLOTS
from specops.config.redact import mask_secrets

SHOW_PROPERTIES = (
    "ActiveState", "SubState", "NRestarts", "ExecMainStatus", "ExecMainPID", "MainPID",
    "Result", "StartLimitBurst", "StartLimitIntervalUSec",
)  # fmt: skip
START_LIMIT_HIT = "start-limit-hit"
CURSOR_PREFIX = "-- cursor: "
POLL_MARKER = "--specops-journal-follows--"
CURSOR_PLACEHOLDER = SLOTS["cursor"].mark  # the cursor read right before a restart, in a command shown before it runs


def show_argv(unit: str) -> list[str]:
    """`systemctl show UNIT -p ...`: KEY=VALUE lines, stable across systemd versions (unlike `status`)."""
    return ["systemctl", "show", unit, "-p", ",".join(SHOW_PROPERTIES)]


def journal_argv(unit: str, position: str | None = None, lines: int | None = None, timed: bool = False) -> list[str]:
    """The unit's journal messages (`-o cat`: text only) after `position`, ending with the cursor line.

    position: a cursor from a previous read (`--after-cursor`), or a time (`--since`), or None (all).
    lines: only the last N (`-n N`), e.g. to show the tail of a failed start.
    timed: each entry headed by its time in seconds since the epoch (`-o short-unix`), for merging the journals
    of several hosts by time.
    """
    argv = ["journalctl", "-u", unit, "--no-pager", "-o", "short-unix" if timed else "cat", "--show-cursor"]
    if position and is_cursor(position):
        argv += ["--after-cursor", position]
    elif position:
        argv += ["--since", position]
    if lines is not None:
        argv += ["-n", str(lines)]
    return argv


def cursor_argv() -> list[str]:
    """The journal's current end as a cursor (the last entry of ANY unit, so it exists before the unit logs)."""
    return ["journalctl", "-n", "1", "--no-pager", "-o", "cat", "--show-cursor"]


POLL_SCRIPT = f'systemctl show "$1" -p {",".join(SHOW_PROPERTIES)}; echo {POLL_MARKER}; shift; journalctl "$@"'


def poll_argv(unit: str, position: str | None) -> list[str]:
    """One command printing `systemctl show` lines, the marker, then the journal since `position`.

    The script is a constant: the unit and the position (a cursor the host printed) are its positional
    arguments, never part of the script text, so no value can reach the shell as code."""
    return ["sh", "-c", POLL_SCRIPT, "specops-poll", unit, *journal_argv(unit, position)[1:]]


def position_slots(position: str) -> dict[str, str]:
    """The values of a planned poll's slots `since` and `cursor` for this position (a cursor, or a time on a
    host whose journal had no entry yet)."""
    return {"since": "--after-cursor" if is_cursor(position) else "--since", "cursor": position}


def is_cursor(position: str) -> bool:
    """Cursors look like `s=<hex>;i=<hex>;b=...`; anything else is treated as a time."""
    return position == CURSOR_PLACEHOLDER or (position.startswith("s=") and ";" in position)


@dataclass(frozen=True)
class UnitState:
    """The unit as `systemctl show` printed it; numbers are ints (0 when absent or unparsable)."""

    active_state: str = ""
    sub_state: str = ""
    n_restarts: int = 0
    exec_main_status: int = 0
    exec_main_pid: int = 0
    main_pid: int = 0
    result: str = ""  # systemd's Result=: "success", "exit-code", "signal", "start-limit-hit", ...
    start_limit_burst: str = ""  # as systemctl shows them (the interval as systemd.time(7), e.g. "30min")
    start_limit_interval: str = ""

    @property
    def start_limit_hit(self) -> bool:
        """systemd refused to start the unit at all: no process ran, so no exit status explains anything."""
        return self.result == START_LIMIT_HIT

    @property
    def running(self) -> bool:
        """A main process exists and systemd considers the unit up or coming up."""
        return self.main_pid > 0 and self.active_state in ("active", "activating", "reloading")

    @property
    def failed(self) -> bool:
        """The unit stopped or is waiting to be restarted after its process ended."""
        return self.active_state in ("failed", "inactive", "deactivating") or self.sub_state in (
            "auto-restart",
            "failed",
            "dead",
            "exited",
        )


def parse_show(text: str) -> UnitState:
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    return UnitState(
        active_state=values.get("ActiveState", ""),
        sub_state=values.get("SubState", ""),
        n_restarts=_int(values.get("NRestarts")),
        exec_main_status=_int(values.get("ExecMainStatus")),
        exec_main_pid=_int(values.get("ExecMainPID")),
        main_pid=_int(values.get("MainPID")),
        result=values.get("Result", ""),
        start_limit_burst=values.get("StartLimitBurst", ""),
        start_limit_interval=values.get("StartLimitIntervalUSec", ""),
    )


def split_journal(text: str) -> tuple[list[str], str | None]:
    """journalctl --show-cursor output -> (message lines, the cursor or None when there were no entries)."""
    lines = journal_lines(text)
    if lines and lines[-1].startswith(CURSOR_PREFIX):
        return lines[:-1], lines[-1][len(CURSOR_PREFIX) :].strip()
    return lines, None


def journal_lines(text: str) -> list[str]:
    """The lines of journalctl's output with every credential masked: SGLang logs its server_args at start
    (`api_key='...'`), so a journal line specops shows, quotes or scans must never carry the key as read."""
    return [mask_secrets(line) for line in text.splitlines()]


def parse_poll(text: str) -> tuple[UnitState, list[str], str | None]:
    """poll_argv output -> (unit state, new journal lines, cursor after them or None)."""
    show, _, journal = text.partition(POLL_MARKER + "\n")
    lines, cursor = split_journal(journal)
    return parse_show(show), lines, cursor


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def invocation_journal_argv(unit: str, lines: int = 5000) -> list[str]:
    """The journal of the unit's CURRENT run only (its InvocationID), last `lines` lines: what this process said.

    Why not `-u UNIT`: that mixes in every earlier run, and an old crash must not be blamed on a healthy server.
    """
    script = (
        'id=$(systemctl show -p InvocationID --value "$1") && [ -n "$id" ] && '
        'journalctl --no-pager -o cat -n "$2" "_SYSTEMD_INVOCATION_ID=$id"'
    )
    return ["sh", "-c", script, "specops-journal", unit, str(lines)]


def clock_argv() -> list[str]:
    """The host's clock as epoch seconds: the journal position when the journal has no entry yet."""
    return ["date", "+%s"]


def last_entry_argv(unit: str) -> list[str]:
    """The unit's last journal entry, its time first (`2026-12-02T07:01:02+00:00 host systemd[1]: Stopped ...`):
    when the engine stopped, once systemd has unloaded the inactive unit and forgotten its timestamps."""
    return ["journalctl", "-u", unit, "-n", "1", "--no-pager", "-o", "short-iso"]

"""The NVIDIA driver's GPU fault lines in the kernel journal: the command that reads them, and their parser.

Why here: Xid history exists only in the kernel log (NVML streams live events only), and both the doctor's probe
(since boot) and a failed start (since the engine started) read the same lines, so one parser serves both. The
driver writes three shapes, all accepted:

    NVRM: Xid (0000:01:00): 31, Ch 00000010, ...                           (older drivers)
    NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, ...     (current drivers)
    NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.                     (Xid 79 as free text)

and a fourth, multi-line free text for the same fault ("The NVIDIA GPU 0000:b3:00.0 ... has fallen off the bus").
A bus id is kept as domain:bus:device in lower case ("0000:3b:00"), the form nvidia-smi's "00000000:3B:00.0"
compares equal to (`bus_key`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from specops.commands.journal import CURSOR_PLACEHOLDER, is_cursor

KERNEL_GREP = r"NVRM: (Xid|.*fallen off the bus)"  # journalctl --grep (PCRE2, systemd >= 237)
MAX_EVENTS = 500  # the newest N matching entries: a flood of Xid 45 must not make the answer unbounded
FALLEN_OFF_XID = 79
MARKER = "--specops-gpus-follow--"
_BUS = r"(?:PCI:)?(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?"
_XID = re.compile(r"NVRM: Xid \(" + _BUS + r"\): (?P<code>\d+)(?:, (?P<rest>.*))?")
_FALLEN = (
    re.compile(r"NVRM: GPU " + _BUS + r": GPU has fallen off the bus"),
    re.compile(r"NVRM: The NVIDIA GPU " + _BUS + r"\b.*fallen off the bus"),
    re.compile(r"NVRM: GPU has fallen off the bus"),
)
_TIME = re.compile(r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?[+-]\d{2}:?\d{2})\s")
_PERMISSION = ("insufficient permissions", "not seeing messages from other users and the system")


@dataclass(frozen=True)
class XidEvent:
    """One GPU fault the driver logged: its Xid (79 for the free-text "fallen off the bus"), where, when."""

    code: int
    bus_id: str | None  # "0000:3b:00"; None when the line names no GPU
    time: str  # as journalctl printed it ("2026-12-03T13:52:46.123456+0000"); "" when the line had none
    text: str  # the driver's words after the code ("pid=..., name=..., GPU has fallen off the bus.")
    line: str  # the whole message


def kernel_log_argv(since: str | None = None, grep: bool = True, limit: int = MAX_EVENTS) -> list[str]:
    """`journalctl -k` of this boot (or after a cursor / since a time), newest `limit` GPU fault entries."""
    argv = ["journalctl", "-k", "-o", "short-iso-precise", "--no-pager", "-n", str(limit)]
    if since is None:
        argv.append("-b")
    else:
        word = since_word(since)
        argv += ["--since", word] if word else ["--after-cursor", since]
    return argv + (["--grep", KERNEL_GREP] if grep else [])


def since_word(position: str) -> str | None:
    """`--since`'s value for a journal position (the `cursor` slot of a planned kernel-journal read): the time a
    cursor carries, a time as it is; None for a cursor without one (journald's always carry `t=`). The plan's
    mark stays as it is, so the dry run shows `--since <cursor>`."""
    if position == CURSOR_PLACEHOLDER or not is_cursor(position):
        return position
    return cursor_time(position)


GPU_FAULT_SCRIPT = (
    f'"$@"; echo {MARKER}; nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader 2>/dev/null; true'
)


def gpu_fault_argv(position: str) -> list[str]:
    """After a failed start: the kernel journal's GPU fault lines since `position` (the restart's cursor or a
    time), then nvidia-smi's index/bus-id table, in one command; the script is a constant, the values are its
    positional arguments."""
    return ["sh", "-c", GPU_FAULT_SCRIPT, "specops-gpu-fault", *kernel_log_argv(since=position)]


def cursor_time(cursor: str) -> str | None:
    """The wall-clock time a journal cursor carries (`t=<hex µs>`) as `@SECONDS.MICROS`, None without one.

    Why a time and not the cursor: `journalctl -k --after-cursor` seeks in the files that hold the cursor's entry
    and misses kernel entries of files without one (seen with systemd 252); `--since` filters every file alike."""
    fields = dict(part.split("=", 1) for part in cursor.split(";") if "=" in part)
    try:
        micros = int(fields.get("t", ""), 16)
    except ValueError:
        return None
    seconds, rest = divmod(micros, 1_000_000)
    return f"@{seconds}.{rest:06d}"


def bus_key(bus_id: str) -> str | None:
    """'00000000:9B:00.0' or 'PCI:0000:9b:00' -> '0000:9b:00' (domain:bus:device, lower case); None if not one."""
    parts = bus_id.strip().removeprefix("PCI:").split(":")
    if len(parts) != 3:
        return None
    try:
        domain, bus, device = int(parts[0], 16), int(parts[1], 16), int(parts[2].split(".")[0], 16)
    except ValueError:
        return None
    return f"{domain:04x}:{bus:02x}:{device:02x}"


def permission_denied(stderr: str) -> bool:
    """journalctl's own words when the user may not read the system journal (not root, adm or systemd-journal)."""
    return any(words in stderr for words in _PERMISSION)


def _entries(text: str) -> list[str]:
    """journalctl's lines joined per entry: a multi-line message continues on lines that start with spaces."""
    entries: list[str] = []
    for line in text.splitlines():
        if line.startswith((" ", "\t")) and entries:
            entries[-1] += " " + line.strip()
        elif line.strip() and not line.startswith("-- "):
            entries.append(line.rstrip())
    return entries


def parse_entry(entry: str) -> XidEvent | None:
    """One journal entry -> the fault it reports, or None for any other line."""
    found = _TIME.match(entry)
    time = found.group("time") if found else ""
    message = entry[entry.index("NVRM: ") :] if "NVRM: " in entry else entry
    xid = _XID.search(message)
    if xid:
        return XidEvent(int(xid.group("code")), bus_key(xid.group("bus")), time, (xid.group("rest") or "").strip(),
                        message)  # fmt: skip
    for pattern in _FALLEN:
        fallen = pattern.search(message)
        if fallen:
            bus = fallen.groupdict().get("bus")
            return XidEvent(FALLEN_OFF_XID, bus_key(bus) if bus else None, time, "GPU has fallen off the bus.",
                            message)  # fmt: skip
    return None


def parse_kernel_log(text: str) -> list[XidEvent]:
    """Every GPU fault in journalctl's output, oldest first; the free-text "fallen off the bus" that repeats an
    Xid 79 line of the same GPU is dropped (the driver writes both for one fault)."""
    events = [event for entry in _entries(text) if (event := parse_entry(entry)) is not None]
    if all(event.time for event in events):  # journalctl -n with --grep may print newest first
        events.sort(key=lambda event: event.time)
    logged_79 = {event.bus_id for event in events if event.code == FALLEN_OFF_XID and event.line.startswith(
        "NVRM: Xid")}  # fmt: skip
    return [
        event
        for event in events
        if event.line.startswith("NVRM: Xid") or event.code != FALLEN_OFF_XID or event.bus_id not in logged_79
    ]


def parse_gpu_bus_ids(text: str) -> dict[str, int]:
    """`nvidia-smi --query-gpu=index,pci.bus_id,... --format=csv,noheader` -> {bus key: GPU index}."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) >= 2 and cells[0].isdigit() and (key := bus_key(cells[1])) is not None:
            found[key] = int(cells[0])
    return found

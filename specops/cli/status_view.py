"""How `specops status` and `specops releases` show what they read: one host's detailed view, a fleet's rows
and notes, the releases' table (specops/cli/cmd_status.py reads, this prints)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specops.cli.output import escape, print_json, stdout_console

if TYPE_CHECKING:
    from specops.ops.status import HostStatus

STATUS_COLUMNS = ("BUILD", "RELEASE", "PROFILE", "VERIFIED", "UNIT", "RESTARTS", "HEALTH", "TOK/S", "ACCEPT", "DRIFT")


def status_row(found: HostStatus) -> list[str]:
    unit = found.unit
    health = "-" if found.health is None else str(found.health)
    verified = "NO" if not found.verified else ("yes" if found.watching_left_s is None else "yes, watching")
    return [found.build or "-", found.current or "-", found.profile or "-", verified,
            f"{unit.get('ActiveState', '?')}/{unit.get('SubState', '?')}", unit.get("NRestarts", "-"), health,
            _figure(found.figures.get("tokens_per_s")), _figure(found.figures.get("accept_length")),
            _drift_cell(found.drift)]  # fmt: skip


def _drift_cell(drift: list[str] | None) -> str:
    return "-" if drift is None else (f"{len(drift)} change(s)" if drift else "none")


def _size(value: object) -> str:
    """Bytes as people read them: '812 KiB', '3.4 GiB'; '?' when unknown."""
    if not isinstance(value, int):
        return "?"
    size, unit = float(value), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            break
        size /= 1024
    return f"{size:.0f} {unit}" if unit == "B" or size >= 100 else f"{size:.1f} {unit}"


def _figure(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, float) else ("-" if value is None else str(value))


def status_notes(found: HostStatus) -> list[str]:
    notes = [] if found.serving else [found.engine]
    notes += [found.enabled_warning] if found.enabled_warning else []
    notes += [f"runs {found.running_release}, NOT current ({found.current})"] if found.uses_current is False else []
    return notes + [f"drifted since {found.current}: {change}" for change in found.drift or []]


def print_status(found: HostStatus, unit_name: str, as_json: bool) -> None:
    if as_json:
        print_json(found.to_json())
        return
    unit = found.unit
    mismatch = "" if found.uses_current is not False else f"  [red]runs {found.running_release}, NOT current[/]"
    lines = [
        f"[bold]{found.host}[/]  {unit_name}: {unit.get('ActiveState', '?')}/{unit.get('SubState', '?')}"
        f"  pid {unit.get('MainPID', '-')}  restarts {unit.get('NRestarts', '-')}",
        *([] if found.serving else [f"[red]engine: {escape(found.engine)}[/]"]),
        *([] if found.enabled_warning is None else [f"[yellow]{escape(found.enabled_warning)}[/]"]),
        f"current: {found.current or '-'} ({found.verified_text}, profile {found.profile or '-'}"
        f"{', build ' + found.build if found.build else ''}){mismatch}",
        f"health: {found.health if found.health is not None else 'not checked (unit not active)'}",
    ]
    if found.figures:
        lines.append(
            f"last smoke: {found.figures.get('tokens_per_s', '-')} tok/s, accept length "
            f"{found.figures.get('accept_length', '-')}"
        )
    watch = found.watch
    if watch is not None and (
        (watch.state == "rolled-back" and watch.rolled_back_to == found.current)
        or (watch.state in ("rollback-failed", "no-rollback", "cut-short") and watch.release == found.current)
    ):
        lines.append(f"[yellow]guard[/] ({watch.state}): {escape(str(watch.reason))}")
    lines += [f"[yellow]guard[/] {escape(note)}" for note in found.guard_notes]
    if found.drift is not None:
        changes = escape(", ".join(found.drift)) or "unchanged"
        lines.append(f"environment since {found.current} was deployed: {changes}")
    if found.compile_cache is not None:
        lines.append(f"compile cache: {_size(found.compile_cache.get('bytes'))} in {found.compile_cache.get('path')}")
    for line in lines:
        stdout_console().print(line)


def releases_json(found: HostStatus) -> dict[str, object]:
    return {"host": found.host, "current": found.current, "releases": found.releases}


def releases_row(found: HostStatus) -> list[str]:
    verified = [release["id"] for release in found.releases if release["verified"]]
    bad = [release["id"] for release in found.releases if release.get("bad")]
    newest = found.releases[-1]["id"] if found.releases else "-"
    return [found.current or "-", str(len(found.releases)), str(len(verified)), str(len(bad)), newest]


def print_releases(found: HostStatus, as_json: bool) -> None:
    from rich.table import Table

    if as_json:
        print_json(releases_json(found))
        return
    table = Table(box=None, pad_edge=False)
    for column in ("", "RELEASE", "CREATED", "PROFILE", "VERIFIED", "BAD"):
        table.add_column(column)
    for release in found.releases:
        verified = "yes" if release["verified"] else ("unfinished" if not release["complete"] else "no")
        bad = release.get("bad")
        mark = f"bad: {bad.get('reason') or '-'}" if isinstance(bad, dict) else ""
        table.add_row("*" if release["current"] else "", release["id"], str(release["created_at"] or "-"),
                      str(release["profile"] or "-"), verified, escape(mark))  # fmt: skip
    stdout_console().print(table)

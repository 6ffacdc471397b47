"""How doctor results look on a terminal: `[✓] [!] [✗]` lines, the fix under each problem, a closing count."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specops.cli.output import print_json, stdout_console

if TYPE_CHECKING:
    from rich.console import Console

    from specops.doctor.model import CheckResult, CheckSpec
    from specops.doctor.runner import HostReport

_MARKS = {
    "pass": "[green][✓][/]",
    "warn": "[yellow]\\[!][/]",
    "fail": "[red][✗][/]",
    "skip": "[dim][-][/]",
    "error": "[magenta][☠][/]",
}


def load_renderer() -> None:
    """Import rich now, while the hosts answer, so that printing the reports does not wait for it."""
    import rich.console
    import rich.markup  # noqa: F401


def print_check_list(checks: list[CheckSpec], as_json: bool, engine: dict[str, str] | None = None) -> None:
    """Every host check, then the engine checks (`engine`: id -> description) that `doctor ENGINE` adds."""
    listed = [(spec.id, spec.description) for spec in checks] + list((engine or {}).items())
    if as_json:
        print_json({"checks": [{"id": check_id, "description": description} for check_id, description in listed]})
        return
    console = stdout_console()
    width = max(len(check_id) for check_id, _ in listed)
    for check_id, description in listed:
        console.print(f"{check_id:<{width}}  {description}", markup=False)


def print_reports(reports: dict[str, HostReport], verbose: int) -> None:
    from specops.doctor.model import Status

    console = stdout_console()
    for name, report in reports.items():
        console.print(f"[bold]{name}[/]  [dim]({report.seconds:.1f} s)[/]")
        for result in report.results:
            _print_result(console, result, verbose)
        console.print()
    total = sum(len(report.results) for report in reports.values())
    passed = sum(report.count(Status.PASS) for report in reports.values())
    skipped = sum(report.count(Status.SKIP) for report in reports.values())
    waived = sum(report.waived() for report in reports.values())
    counted = total - skipped - waived
    hosts = len(reports)
    also = f", {waived} waived" if waived else ""
    console.print(f"{passed}/{counted} checks passed on {hosts} host{'s' if hosts != 1 else ''}{also}",
                  highlight=False)  # fmt: skip


def _print_result(console: Console, result: CheckResult, verbose: int) -> None:
    from rich.markup import escape

    console.print(f"  {_MARKS[result.status.value]} {result.id:<24} {escape(result.summary)}")
    if result.waived:  # the check ran; its failure is accepted on this host, for this reason
        console.print(f"        [yellow]waived:[/] {escape(result.waived)}")
    show_evidence = verbose > 0 or result.status.value in ("warn", "fail", "error")
    if show_evidence:
        for line in result.evidence:
            console.print(f"        [dim]{escape(line)}[/]")
    if result.hint and result.status.value != "pass":
        console.print(f"        [cyan]fix:[/] {escape(result.hint)}")

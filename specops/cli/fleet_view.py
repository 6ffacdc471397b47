"""The fleet form of the read-only commands: pick the hosts, ask them in parallel, one row per host.

`status llm-two` (one host name) keeps the detailed single-host view and its flat JSON; a group, several
names or `--all` gives the table and `{"hosts": {NAME: ...}}`. The shape therefore depends on what was
named, never on how many hosts a group happens to have, so a script reading a group's JSON never breaks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer

from specops.cli.output import print_json, stdout_console, unprefixed
from specops.errors import UsageError

if TYPE_CHECKING:
    from specops.cli.state import AppState
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config
    from specops.deploy.survey import Question, Reading

T = TypeVar("T")


def one_host(config: Config, names: Sequence[str], all_hosts: bool) -> str | None:
    """The host name when exactly one host (not a group) was named; None for a fleet request."""
    if all_hosts or len(names) != 1:
        return None
    name = names[0]
    if name in config.inventory.groups or name in config.inventory.engines:
        return None
    config.host(name)  # an unknown name is a usage error naming the known hosts
    return name


def selected(config: Config, names: Sequence[str], all_hosts: bool) -> list[HostSpec]:
    if all_hosts:
        specs = list(config.inventory.hosts.values())
        if not specs:
            raise UsageError(f"{config.display} has no hosts", hint="add a [hosts.NAME] table (see `specops init`)")
        return specs
    if not names:
        raise UsageError("name hosts or groups, or pass --all", hint="`specops hosts` lists the hosts and groups")
    return config.inventory.select(list(names))


def engine_ranks(config: Config, names: Sequence[str]) -> list[str]:
    """The names with each multi-node engine replaced by its hosts, rank 0 first; a group holding an engine is
    opened (its hosts, and each engine's ranks). For the commands that only read a host (lock status, audit):
    acting on a rank alone is refused elsewhere, reading one is not."""
    inventory, engines = config.inventory, config.inventory.engines
    opened = [member for name in names
              for member in (inventory.opened([name]) if _holds_engine(config, name) else [name])]  # fmt: skip
    return [host for name in opened for host in (engines[name].hosts if name in engines else [name])]


def _holds_engine(config: Config, name: str) -> bool:
    inventory = config.inventory
    return name in inventory.groups and any(member in inventory.engines for member in inventory.members(name))


def ask_fleet(app_state: AppState, specs: list[HostSpec], question: Question[T]) -> dict[str, Reading[T]]:
    from specops.deploy.survey import survey

    return survey(specs, app_state.opener, question)


def finish(
    readings: dict[str, Reading[T]],
    as_json: bool,
    to_json: Callable[[T], dict[str, Any]],
    columns: Sequence[str],
    row: Callable[[T], Sequence[str]],
    notes: Callable[[T], list[str]] | None = None,
) -> NoReturn:
    """Print the table (or the JSON) and exit with the most severe host's code."""
    from specops.deploy.survey import survey_exit_code

    if as_json:
        print_json({"hosts": {name: reading_json(reading, to_json) for name, reading in readings.items()}})
    else:
        _print_table(readings, columns, row, notes)
    raise typer.Exit(int(survey_exit_code(readings)))


def reading_json(reading: Reading[T], to_json: Callable[[T], dict[str, Any]]) -> dict[str, Any]:
    """One host's entry of a fleet command's --json document: its answer, or why there is none (the same keys
    for every command: error, hint, unreachable, exit_code)."""
    if reading.value is None:
        return {"error": reading.error, "hint": reading.hint, "unreachable": reading.unreachable,
                "exit_code": int(reading.exit_code)}  # fmt: skip
    return {**to_json(reading.value), "exit_code": int(reading.exit_code)}


def _print_table(
    readings: dict[str, Reading[T]],
    columns: Sequence[str],
    row: Callable[[T], Sequence[str]],
    notes: Callable[[T], list[str]] | None,
) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("HOST", *columns):
        table.add_column(column)
    below: list[str] = []
    for name, reading in readings.items():
        if reading.value is None:
            first = "unreachable" if reading.unreachable else "error"
            table.add_row(escape(name), f"[red]{first}[/]", *[""] * (len(columns) - 1))
            named = f"{name}: {unprefixed(name, reading.error)}"
            below.append(f"[red]{escape(named)}[/]")
            if reading.hint:
                below.append(f"  [yellow]hint:[/] {escape(reading.hint)}")
            continue
        table.add_row(escape(name), *[escape(cell) for cell in row(reading.value)])
        below += [f"{escape(name)}: {escape(note)}" for note in (notes(reading.value) if notes else [])]
    console = stdout_console()
    console.print(table)
    for line in below:
        console.print(line, soft_wrap=True)

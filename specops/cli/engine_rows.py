"""Multi-node engines in the read-only fleet views (status, releases): their ranks asked like hosts, shown as
one engine.

`status ds` (an engine) or `status gpu` (a group naming one) asks every rank in parallel, as for hosts, then
folds the ranks' readings into one row for the engine: a cell the ranks agree on shows once, the release and
the unit state show each rank's (`0:…,1:…`). JSON keeps every rank's whole reading under `engines.NAME.ranks`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config
    from specops.deploy.survey import Reading

T = TypeVar("T")


@dataclass(frozen=True)
class Selection:
    """The hosts to ask (each once, inventory order, every rank included) and the engines among the names."""

    specs: list[HostSpec]
    engines: dict[str, list[str]]  # engine -> its hosts, rank 0 first

    def rank_of(self, host: str) -> tuple[str, int] | None:
        """(engine, rank) of a host that is a rank of a named engine."""
        for engine, hosts in self.engines.items():
            if host in hosts:
                return engine, hosts.index(host)
        return None


def select_with_engines(config: Config, names: Sequence[str], all_hosts: bool) -> Selection:
    """Hosts, groups and engines (a group may name an engine); --all: every host, ranks shown as engines."""
    from specops.cli.fleet_view import selected

    inventory = config.inventory
    if all_hosts:
        return Selection(selected(config, names, True), {name: list(e.hosts) for name, e in inventory.engines.items()})
    engines: dict[str, list[str]] = {}
    plain: list[str] = []
    for member in inventory.opened(names):
        if member in inventory.engines:
            engines[member] = list(inventory.engines[member].hosts)
        else:
            plain.append(member)
    specs = selected(config, plain, False) if plain or not engines else []  # unknown names: a usage error
    hosts = {spec.name for spec in specs} | {host for ranks in engines.values() for host in ranks}
    return Selection([spec for key, spec in inventory.hosts.items() if key in hosts], engines)


def fold(
    readings: Mapping[str, Reading[T]], selection: Selection, engine_row: Callable[[list[Reading[T]]], Reading[Any]]
) -> dict[str, Reading[Any]]:
    """The readings with each engine's ranks replaced by one reading for the engine, where its first rank was."""
    folded: dict[str, Reading[Any]] = {}
    for name, reading in readings.items():
        ranked = selection.rank_of(name)
        if ranked is None:
            folded[name] = reading
        elif ranked[0] not in folded:
            folded[ranked[0]] = engine_row([readings[host] for host in selection.engines[ranked[0]]])
    return folded


@dataclass(frozen=True)
class EngineReading:
    """An engine's ranks' readings, in rank order (the value of its folded Reading)."""

    ranks: list[Reading[Any]]


def rank_cell(values: Sequence[str], always: bool = False) -> str:
    """One cell for the ranks: the value once when they agree (unless `always`), else `0:A,1:B`."""
    if not always and len(set(values)) == 1:
        return values[0]
    return ",".join(f"{rank}:{value}" for rank, value in enumerate(values))


def engine_reading(name: str, ranks: list[Reading[Any]]) -> Reading[EngineReading]:
    """The engine's reading: its ranks', with the most severe exit code among them."""
    from specops.deploy.survey import Reading, most_severe

    code = most_severe(reading.exit_code for reading in ranks)
    return Reading(name, EngineReading(ranks), code if code is not None else ExitCode.OK)


def engine_json(value: EngineReading, to_json: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    ranks = []
    for rank, reading in enumerate(value.ranks):
        if reading.value is None:
            ranks.append({"rank": rank, "host": reading.host, "error": reading.error,
                          "unreachable": reading.unreachable, "exit_code": int(reading.exit_code)})  # fmt: skip
        else:
            ranks.append({"rank": rank, "host": reading.host, **to_json(reading.value),
                          "exit_code": int(reading.exit_code)})  # fmt: skip
    return {"engine": True, "ranks": ranks}


def engine_selection(config: Config, names: Sequence[str], all_hosts: bool) -> Selection | None:
    """The selection when the names (or --all) take in a multi-node engine; None when they name hosts only."""
    inventory = config.inventory
    if not inventory.engines:
        return None
    named = set(names)
    for name in names:
        if name in inventory.groups:
            named |= inventory.members(name)
    if not all_hosts and not named & set(inventory.engines):
        return None
    return select_with_engines(config, names, all_hosts)

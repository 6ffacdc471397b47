"""`status`, `releases` and `logs` of a multi-node engine: every rank asked at once, shown as one engine.

status: one row for the engine (each rank's release and unit state; health and smoke figures are rank 0's,
the only rank that serves HTTP); a worker counts as healthy when it runs its verified current release.
releases: one row per rank, named `ENGINE rank N (HOST)`. logs: the ranks' journals merged by time, every
line tagged `rN HOST | `.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from specops.cli.engine_rows import EngineReading, Selection, engine_json, engine_reading, fold, rank_cell
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.cli.state import AppState
    from specops.config.inventory import HostSpec
    from specops.deploy.survey import Reading
    from specops.host.base import Host
    from specops.ops.status import HostStatus

PER_RANK = (1, 4)  # RELEASE, UNIT: always shown for each rank
RANK0_ONLY = (6, 7, 8)  # HEALTH, TOK/S, ACCEPT: rank 0 serves HTTP, the workers none


def engine_status_row(value: EngineReading) -> list[str]:
    from specops.cli.status_view import STATUS_COLUMNS, status_row

    rows = [status_row(r.value) if r.value is not None else _missing(r, len(STATUS_COLUMNS)) for r in value.ranks]
    cells = []
    for column in range(len(STATUS_COLUMNS)):
        values = [row[column] for row in rows]
        cells.append(values[0] if column in RANK0_ONLY else rank_cell(values, always=column in PER_RANK))
    return cells


def _missing(reading: Reading[Any], width: int) -> list[str]:
    return ["unreachable" if reading.unreachable else "error"] * width


def engine_status_notes(value: EngineReading) -> list[str]:
    from specops.cli.status_view import status_notes

    notes = []
    for rank, reading in enumerate(value.ranks):
        found = reading.value
        lines = [reading.error] if found is None else status_notes(found)
        notes += [f"rank {rank} ({reading.host}): {line}" for line in lines]
    return notes


def status_of_engines(app_state: AppState, selection: Selection, as_json: bool) -> NoReturn:
    """The fleet table (or JSON) with each engine folded into one row."""
    from specops.cli.fleet_view import ask_fleet, finish
    from specops.cli.status_view import STATUS_COLUMNS, status_notes, status_row
    from specops.ops.status import HostStatus, host_status

    def ask(host: Host, spec: HostSpec) -> tuple[HostStatus, ExitCode]:
        ranked = selection.rank_of(spec.name)
        worker = ranked is not None and ranked[1] > 0
        found = host_status(host, spec, check_health=not worker, check_drift=True)
        if not worker:
            return found, found.exit_code
        ok = found.verified and found.uses_current is not False and found.serving
        return found, ExitCode.OK if ok else ExitCode.CHECKS_FAILED

    readings = fold(ask_fleet(app_state, selection.specs, ask), selection,
                    lambda ranks: engine_reading(_engine_name(selection, ranks), ranks))  # fmt: skip

    def row(value: Any) -> list[str]:
        return engine_status_row(value) if isinstance(value, EngineReading) else status_row(value)

    def notes(value: Any) -> list[str]:
        return engine_status_notes(value) if isinstance(value, EngineReading) else status_notes(value)

    def to_json(value: Any) -> dict[str, Any]:
        return engine_json(value, HostStatus.to_json) if isinstance(value, EngineReading) else value.to_json()

    finish(readings, as_json, to_json, STATUS_COLUMNS, row, notes)


def releases_of_engines(app_state: AppState, selection: Selection, as_json: bool) -> NoReturn:
    """The releases' fleet table with a row per rank, named `ENGINE rank N (HOST)`."""
    from specops.cli.fleet_view import ask_fleet, finish
    from specops.cli.status_view import releases_json, releases_row
    from specops.ops.status import host_status

    def ask(host: Host, spec: HostSpec) -> tuple[HostStatus, ExitCode]:
        return host_status(host, spec, check_health=False), ExitCode.OK

    readings: dict[str, Reading[HostStatus]] = {}
    for name, reading in ask_fleet(app_state, selection.specs, ask).items():
        ranked = selection.rank_of(name)
        readings[name if ranked is None else f"{ranked[0]} rank {ranked[1]} ({name})"] = reading
    finish(readings, as_json, releases_json, ("CURRENT", "KEPT", "VERIFIED", "BAD", "NEWEST"), releases_row)


def _engine_name(selection: Selection, ranks: list[Reading[Any]]) -> str:
    ranked = selection.rank_of(ranks[0].host)
    return ranked[0] if ranked is not None else ranks[0].host

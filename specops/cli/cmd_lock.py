"""`specops lock status HOST` and `specops lock release HOST [--force]`: see and clear a host's deploy lock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from specops.cli.fleet_view import ask_fleet, engine_ranks, finish, one_host, selected
from specops.cli.options import AllOpt, HostArg, JsonOpt, TargetsArg
from specops.cli.output import print_json, report_error, stderr_console, stdout_console
from specops.cli.state import state
from specops.errors import ExitCode

if TYPE_CHECKING:
    from specops.cli.state import AppState
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config
    from specops.host.base import Host
    from specops.ops.lock import LockInfo
    from specops.ops.lock_admin import Released

app = typer.Typer(help="See or clear a host's deploy lock.", no_args_is_help=True)

StaleAfter = Annotated[
    float,
    typer.Option(
        "--stale-after",
        metavar="SECONDS",
        min=1,
        max=86400,
        help="Seconds without a heartbeat after which a lock is stale.",
    ),
]


@app.command("status")
def lock_status(
    ctx: typer.Context,
    names: TargetsArg = None,
    all_hosts: AllOpt = False,
    stale_after: StaleAfter = 90.0,
    json_output: JsonOpt = False,
) -> None:
    """Who holds the host's lock, since when, its last heartbeat, and whether it is stale (exit 0 either way).

    A group, several hosts or --all: a row per host (exit 4 when one is unreachable)."""
    from specops.ops.lock import status

    app_state = state(ctx)
    as_json = app_state.wants_json(json_output)
    config = app_state.load_config()
    names = engine_ranks(config, names or [])  # an engine: a row per rank
    single = one_host(config, names, all_hosts)
    if single is None:

        def ask(host: Host, spec: HostSpec) -> tuple[_Held, ExitCode]:
            return _Held(status(host, stale_after_s=stale_after)), ExitCode.OK

        readings = ask_fleet(app_state, selected(config, names, all_hosts), ask)
        finish(readings, as_json, _Held.to_json, ("STATE", "HOLDER", "SINCE", "HEARTBEAT", "STALE"), _Held.row)
    spec = config.host(single)
    with app_state.connect(spec) as connected:
        info = status(connected, stale_after_s=stale_after)
    if as_json:
        print_json({"host": spec.name, "locked": info is not None, "lock": info.to_json() if info else None})
        return
    _print_status(spec.name, info)


@dataclass(frozen=True)
class _Held:
    """A host's lock for the fleet table: None when free (a free host is still a reading, not an error)."""

    info: LockInfo | None

    def to_json(self) -> dict[str, object]:
        return {"locked": self.info is not None, "lock": self.info.to_json() if self.info else None}

    def row(self) -> list[str]:
        info = self.info
        if info is None:
            return ["free", "", "", "", ""]
        holder = info.holder
        who = f"{holder.who} pid {holder.pid}" if holder else "unknown"
        since = format_age(info.age_s) + " ago" if info.age_s is not None else "?"
        beat = "never" if info.heartbeat_age_s is None else f"{format_age(info.heartbeat_age_s)} ago"
        stale = "dead holder" if info.holder_dead else "yes" if info.stale else "no"
        return ["locked", who, since, beat, stale]


@app.command("release")
def lock_release(
    ctx: typer.Context,
    host: HostArg,
    force: Annotated[bool, typer.Option("--force", help="Release even a live holder's lock.")] = False,
    stale_after: StaleAfter = 90.0,
    json_output: JsonOpt = False,
) -> None:
    """Remove a stale lock (or your own crashed one); --force removes any lock. The release is audited.

    An engine: every rank's lock, the workers' first, rank 0's last (a deploy takes rank 0's first). A group:
    each host's, one after another; a host that refuses (a live holder, exit 6) or cannot be reached (exit 4)
    is named and the others go on."""
    app_state = state(ctx)
    config = app_state.load_config()
    order = release_order(config, host)
    as_json = app_state.wants_json(json_output)
    if len(order) == 1:
        outcome = _release(app_state, config.host(order[0]), force, stale_after)
        if as_json:
            print_json(_outcome_json(order[0], outcome))
        else:
            _say(order[0], outcome)
        return
    _release_each(app_state, config, order, force, stale_after, as_json)


def release_order(config: Config, name: str) -> list[str]:
    """The hosts whose locks `lock release NAME` removes, in order: an engine's workers before its rank 0 (a
    deploy takes rank 0's lock first), a group's members by name, each host once."""
    inventory = config.inventory
    order: list[str] = []
    for member in inventory.opened([name]):
        ranks = inventory.engines[member].hosts if member in inventory.engines else [member]
        order += [*ranks[1:], ranks[0]]
    return list(dict.fromkeys(order))


def _release_each(
    app_state: AppState, config: Config, order: list[str], force: bool, stale_after: float, as_json: bool
) -> NoReturn:
    """Every host's lock in `order`; a refusal or an unreachable host is said and the rest go on. Exits with the
    most severe host's code."""
    from specops.cli.fleet_view import reading_json
    from specops.deploy.survey import Reading, most_severe
    from specops.errors import SpecopsError

    documents: dict[str, dict[str, object]] = {}
    codes: list[ExitCode] = []
    for name in order:
        try:
            outcome = _release(app_state, config.host(name), force, stale_after)
        except SpecopsError as error:
            codes.append(error.exit_code)
            refused: Reading[Released] = Reading(name, None, error.exit_code, error.message, error.hint or "")
            documents[name] = reading_json(refused, lambda _: {})  # the keys every fleet command's --json has
            if not as_json:
                report_error(error, as_json=False)
            continue
        codes.append(ExitCode.OK)
        documents[name] = {**_outcome_json(name, outcome), "exit_code": 0}
        if not as_json:
            _say(name, outcome)
    if as_json:
        print_json({"hosts": documents})
    raise typer.Exit(int(most_severe(codes)))


def _release(app_state: AppState, spec: HostSpec, force: bool, stale_after: float) -> Released:
    """One host's lock released (audited; a failed audit is warned about); LockHeld when a live holder keeps it."""
    from specops.ops.lock_admin import release_audited

    with app_state.connect(spec) as connected:
        audited = release_audited(connected, spec, force=force, stale_after_s=stale_after)
    if audited.audit_error:
        stderr_console().print(f"[yellow]warning:[/] {audited.audit_error}", markup=True)
    return audited.outcome


def _outcome_json(name: str, outcome: Released) -> dict[str, object]:
    return {"host": name, "released": outcome.released, "reason": outcome.reason,
            "lock": outcome.info.to_json() if outcome.info else None}  # fmt: skip


def _say(name: str, outcome: Released) -> None:
    if outcome.released and outcome.info is not None:
        typer.echo(f"{name}: released the lock held by {outcome.info.describe()}")
    else:
        typer.echo(f"{name}: {outcome.reason}, nothing to release")


def _print_status(name: str, info: LockInfo | None) -> None:
    console = stdout_console()
    if info is None:
        console.print(f"{name}: free", markup=False)
        return
    holder = info.holder
    beat = "never" if info.heartbeat_age_s is None else f"{format_age(info.heartbeat_age_s)} ago"
    rows = [("holder", "unknown (holder.json missing or unreadable)")]
    if holder is not None:
        since = holder.started_at + (f" ({format_age(info.age_s)} ago)" if info.age_s is not None else "")
        rows = [("holder", f"{holder.who} pid {holder.pid}"), ("command", holder.command), ("since", since),
                ("version", f"specops {holder.version}")]  # fmt: skip
    stale = f"yes (no heartbeat for over {info.stale_after_s:g}s)" if info.stale else "no"
    rows += [("heartbeat", beat), ("stale", stale)]
    if info.holder_dead:
        rows.append(("dead", f"{info.holder_dead}: the next deploy takes the lock over"))
    console.print(f"{name}: locked", markup=False)
    for label, value in rows:
        console.print(f"  {label + ':':<11} {value}", markup=False)


def format_age(seconds: float) -> str:
    """`42s`, `5m 3s`, `2h 10m`, `3d 4h`: short, for people."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60}s"
    if whole < 86400:
        return f"{whole // 3600}h {whole % 3600 // 60}m"
    return f"{whole // 86400}d {whole % 86400 // 3600}h"

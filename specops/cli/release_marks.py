"""`specops releases HOST|GROUP --mark-bad ID` / `--unmark-bad ID`: the operator's bad marks, on one host or on
each host of a fleet (in parallel, a row per host). ID may be a build id: each host resolves it to its own
release of that build (specops/ops/bad_releases.py), so one build is marked across a fleet by one name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specops.cli.fleet_view import ask_fleet, finish, one_host, selected
from specops.cli.options import check_release_option
from specops.cli.output import escape, print_json, stdout_console
from specops.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from specops.cli.state import AppState
    from specops.commands.release import ReleaseInfo
    from specops.config.inventory import HostSpec
    from specops.host.base import Host


def change_mark(
    app_state: AppState, targets: tuple[list[str], bool], mark: str | None, unmark: str | None, reason: str,
    as_json: bool,
) -> None:  # fmt: skip
    """`releases HOST|GROUP --mark-bad ID` / `--unmark-bad ID`: one of the two, on one host or on each host of a
    fleet (then ID is usually a build id: each host resolves it to its own release of that build)."""
    from specops.ops.bad_releases import mark_bad, unmark_bad

    if mark is not None and unmark is not None:
        raise UsageError("--mark-bad and --unmark-bad: one of the two options",
                         hint="specops releases HOST|GROUP --mark-bad ID [--reason TEXT]")  # fmt: skip
    wanted = str(mark if mark is not None else unmark)
    check_release_option("--mark-bad" if mark is not None else "--unmark-bad", wanted)
    config = app_state.load_config()

    def change(host: Host, spec: HostSpec) -> tuple[ReleaseInfo, ExitCode]:
        info = mark_bad(host, spec, wanted, reason) if mark is not None else unmark_bad(host, spec, wanted)
        return info, ExitCode.OK

    names, all_hosts = targets
    single = one_host(config, names, all_hosts)
    if single is None:
        readings = ask_fleet(app_state, selected(config, names, all_hosts), change)
        finish(readings, as_json, _mark_json, ("RELEASE", "BAD"), _mark_row)
    spec = config.host(single)
    with app_state.connect(spec) as connection:
        info, _ = change(connection, spec)
    if as_json:
        print_json({"host": spec.name, **_mark_json(info)})
    elif info.bad_reason:
        stdout_console().print(f"{spec.name}: {info.id} marked bad ({escape(info.bad_reason)})")
    else:
        stdout_console().print(f"{spec.name}: {info.id} is not marked bad")


def _mark_json(info: ReleaseInfo) -> dict[str, object]:
    return {"release": info.id, "build": info.build, "bad": info.bad.to_json() if info.bad else None}


def _mark_row(info: ReleaseInfo) -> list[str]:
    return [info.id, f"bad: {info.bad_reason}" if info.bad_reason else "not marked bad"]

"""`specops diff A B` and `specops diff HOST --release ID`: what differs, grouped, differences first.

Parses and presents only: the reads are specops/ops/forensics.py, the comparison specops/diagnose/compare.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.options import JsonOpt, check_release_option
from specops.cli.output import print_json, stdout_console
from specops.cli.state import AppState, state
from specops.errors import UsageError

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.loader import Config
    from specops.diagnose.case import Material
    from specops.diagnose.compare import Comparison


def diff(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Argument(metavar="HOST|ENGINE", help="Host name (the left side), or a multi-node engine.")
    ],
    other: Annotated[str | None, typer.Argument(metavar="OTHER", help="A second host (the right side).")] = None,
    release: Annotated[
        str | None,
        typer.Option(
            "--release",
            metavar="ID",
            help="Compare HOST now with what this release recorded (`last-verified`: the newest verified).",
        ),
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Two hosts side by side, or a host now against a recorded release: driver/CUDA, Python packages, native
    libraries, system, unit and flags, build files. A multi-node engine: each other rank beside rank 0 (with
    --release, each rank against its own record)."""
    from specops.diagnose.compare import compare_hosts, compare_release

    if other is not None and release is not None:  # never a valid request: refused before the config is read
        raise _either()
    app_state = state(ctx)
    config = app_state.load_config()
    check_release_option("--release", release, "last-verified")
    if host in config.inventory.engines:
        _diff_engine(app_state, config, host, other, release, app_state.wants_json(json_output))
        return
    if other is None and release is None:  # a host (an engine compares its own ranks)
        raise _either()
    left = config.host(host)
    if release is not None:
        material = host_material(app_state, left, release)
        comparison = compare_release(material, material.reference or release)
    else:
        assert other is not None
        right = config.host(other)
        comparison = compare_hosts(host_material(app_state, left, None), host_material(app_state, right, None))
    if app_state.wants_json(json_output):
        print_json(comparison.to_json())
    else:
        print_comparison(comparison)


def _either() -> UsageError:
    return UsageError(
        "give either a second host or --release ID", hint="specops diff A B | specops diff A --release ID"
    )


def _diff_engine(app_state: AppState, config: Config, name: str, other: str | None, release: str | None,
                 as_json: bool) -> None:  # fmt: skip
    """The ranks of one engine must match (torch, CUDA, NCCL, the build: a difference fails the rendezvous or
    the first collective): each other rank beside rank 0, or with --release each rank now against what it
    recorded for that release. The units differ by design in --node-rank."""
    from specops.diagnose.compare import compare_hosts, compare_release

    if other is not None:
        raise UsageError(f"{name!r} is a multi-node engine: `specops diff {name}` compares its ranks with rank 0",
                         hint=f"specops diff {name}, or two hosts: specops diff HOST OTHER")  # fmt: skip
    ranks = [config.inventory.hosts[host] for host in config.inventory.engines[name].hosts]
    compared: list[tuple[str, Comparison]] = []
    if release is not None:
        for index, spec in enumerate(ranks):
            material = host_material(app_state, spec, release)
            compared.append((f"rank {index} ({spec.name})", compare_release(material, material.reference or release)))
    else:
        first = host_material(app_state, ranks[0], None)
        for index, spec in enumerate(ranks[1:], start=1):
            label = f"rank 0 ({ranks[0].name}) and rank {index} ({spec.name})"
            compared.append((label, compare_hosts(first, host_material(app_state, spec, None))))
    if as_json:
        print_json({"engine": name, "comparisons": [{"ranks": label, **found.to_json()} for label, found in compared]})
        return
    for label, found in compared:
        stdout_console().print(f"[bold]{name}[/]: {label}")
        print_comparison(found)


def host_material(app_state: AppState, spec: HostSpec, release: str | None) -> Material:
    from specops.ops.forensics import release_material

    with app_state.connect(spec) as connection:
        return release_material(connection, spec, release)


def print_comparison(comparison: Comparison) -> None:
    from rich.markup import escape

    from specops.diagnose.diff import GROUPS

    console = stdout_console()
    console.print(f"[bold]{escape(comparison.left)}[/] → [bold]{escape(comparison.right)}[/]")
    if comparison.same:
        console.print("[green]no differences[/]")
    for group in GROUPS:
        changes = comparison.fingerprints.group(group)
        files = comparison.files.changes if group == "build files" else []
        if not changes and not files:
            continue
        console.print(f"[bold]{group}[/]")
        for change in changes:
            console.print(f"  [yellow]≠[/] {escape(change.text)}", soft_wrap=True)
        for file in files[:20]:
            console.print(f"  [yellow]≠[/] {escape(file.text)}", soft_wrap=True)
        if len(files) > 20:
            console.print(f"  … and {len(files) - 20} more file(s)")
    console.print(f"[dim]{escape(comparison.fingerprints.equal_line)}[/]")

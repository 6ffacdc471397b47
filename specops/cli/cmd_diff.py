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
    from specops.diagnose.case import Material
    from specops.diagnose.compare import Comparison


def diff(
    ctx: typer.Context,
    host: Annotated[str, typer.Argument(metavar="HOST", help="Host name (the left side).")],
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
    libraries, system, unit and flags, build files."""
    from specops.diagnose.compare import compare_hosts, compare_release

    if (other is None) == (release is None):
        raise UsageError(
            "give either a second host or --release ID", hint="specops diff A B | specops diff A --release ID"
        )
    app_state = state(ctx)
    config = app_state.load_config()
    left = config.host(host)
    check_release_option("--release", release, "last-verified")
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

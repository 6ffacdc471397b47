"""The specops command line: the root typer app, global options, and the one error boundary.

Sub-commands live in one file per noun and are registered here. Heavy modules (pydantic, jinja2, paramiko,
rich) are imported inside the commands, so `specops --help` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

import specops.cli.cmd_audit as cmd_audit
import specops.cli.cmd_diagnose as cmd_diagnose
import specops.cli.cmd_diff as cmd_diff
import specops.cli.cmd_lock as cmd_lock
import specops.cli.cmd_smoke as cmd_smoke
from specops import __version__
from specops.cli import cmd_config, cmd_deploy, cmd_doctor, cmd_hosts, cmd_init, cmd_render, cmd_status
from specops.cli.state import AppState
from specops.errors import EXIT_CODE_MEANINGS, ExitCode, SpecopsError

_EXIT_TABLE = "\n".join(f"{int(code):>3}  {meaning}" for code, meaning in EXIT_CODE_MEANINGS.items())

app = typer.Typer(
    name="specops",
    help="Deploy patched SGLang speculative-decoding builds over SSH, keep the hosts healthy, roll back.",
    epilog=f"\b\nExit codes:\n{_EXIT_TABLE}",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.command("init")(cmd_init.init)
app.command("render")(cmd_render.render)
app.command("hosts")(cmd_hosts.hosts)
app.command("doctor")(cmd_doctor.doctor)
app.command("deploy")(cmd_deploy.deploy)
app.command("rollback")(cmd_deploy.rollback)
app.command("status")(cmd_status.status)
app.command("releases")(cmd_status.releases)
app.command("logs")(cmd_status.logs)
app.command("smoke")(cmd_smoke.smoke)
app.add_typer(cmd_config.app, name="config")
app.add_typer(cmd_lock.app, name="lock")
app.command("audit")(cmd_audit.audit)
app.command("diagnose")(cmd_diagnose.diagnose)
app.command("diff")(cmd_diff.diff)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"specops {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        Path | None, typer.Option("--config", help="specops.toml to use (default: ./, $SPECOPS_CONFIG, ~/.config)")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More detail (repeatable).")] = 0,
    version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Global options apply to every command."""
    ctx.obj = AppState(config_path=config, json=json_output, debug=debug, verbose=verbose)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; SpecopsError becomes a message + hint + exit code, never a traceback (unless --debug)."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    as_json = "--json" in args
    try:
        app(args=args, prog_name="specops")
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except SpecopsError as error:
        if debug:
            raise
        from specops.cli.output import report_error

        report_error(error, as_json)
        return int(error.exit_code)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    except Exception as error:  # the last line of defence: one line, not a traceback
        if debug:
            raise
        from specops.cli.output import report_internal_error

        return report_internal_error(error)
    return 0


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())

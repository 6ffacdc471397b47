"""The specops command line: the root typer app, global options, and the one error boundary.

Sub-commands live in one file per noun and are registered here. Heavy modules (pydantic, jinja2, paramiko,
rich) are imported inside the commands, so `specops --help` stays fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

import specops.cli.cmd_audit as cmd_audit
import specops.cli.cmd_diagnose as cmd_diagnose
import specops.cli.cmd_diff as cmd_diff
import specops.cli.cmd_lock as cmd_lock
import specops.cli.cmd_smoke as cmd_smoke
from specops import __version__
from specops.cli import (
    cmd_completion,
    cmd_config,
    cmd_deploy,
    cmd_doctor,
    cmd_hosts,
    cmd_init,
    cmd_render,
    cmd_rollback,
    cmd_status,
)
from specops.cli.entry import COMPLETE_VAR
from specops.cli.options import JsonOpt
from specops.cli.state import AppState
from specops.errors import EXIT_CODE_MEANINGS, ExitCode, SpecopsError

_EXIT_TABLE = "\n".join(f"{int(code):>3}  {meaning}" for code, meaning in EXIT_CODE_MEANINGS.items())

app = typer.Typer(
    name="specops",
    help="Deploy patched SGLang speculative-decoding builds over SSH, keep the hosts healthy, roll back.",
    epilog=f"\b\nExit codes:\n{_EXIT_TABLE}",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.command("init")(cmd_init.init)
app.command("render")(cmd_render.render)
app.command("hosts")(cmd_hosts.hosts)
app.command("doctor")(cmd_doctor.doctor)
app.command("deploy")(cmd_deploy.deploy)
app.command("rollback")(cmd_rollback.rollback)
app.command("status")(cmd_status.status)
app.command("releases")(cmd_status.releases)
app.command("logs")(cmd_status.logs)
app.command("smoke")(cmd_smoke.smoke)
app.add_typer(cmd_config.app, name="config")
app.add_typer(cmd_lock.app, name="lock")
app.command("audit")(cmd_audit.audit)
app.command("completion")(cmd_completion.completion)
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
        Path | None,
        # readable=False: click's own check would exit 2; the loader reports an unreadable file as exit 3,
        # exactly as it does for the same file found by default.
        typer.Option("--config", readable=False, help="specops.toml to use (default: ./, $SPECOPS_CONFIG, ~/.config)"),
    ] = None,
    json_output: JsonOpt = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    no_color: Annotated[
        bool, typer.Option("--no-color", help="No colours (also: the NO_COLOR environment variable).")
    ] = False,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More detail (repeatable).")] = 0,
    version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version.")
    ] = False,
    ask_become_pass: Annotated[
        bool,
        typer.Option("--ask-become-pass", "-K", help="Ask once for the sudo password of hosts with become = sudo."),
    ] = False,
) -> None:
    """Global options apply to every command."""
    ctx.obj = AppState(config_path=config, json=json_output, debug=debug, verbose=verbose, color=not no_color)
    if ask_become_pass and not ctx.resilient_parsing:
        from specops.cli.become_prompt import ask_become_password

        ctx.obj.become_password = ask_become_password()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; SpecopsError becomes a message + hint + exit code, never a traceback (unless --debug)."""
    args = sys.argv[1:] if argv is None else argv
    if os.environ.get(COMPLETE_VAR):  # the entry point answers before importing typer; tests come here
        from specops.cli.complete import respond

        return respond(os.environ)
    with no_color_if_asked(args):
        return _run(args)


@contextmanager
def no_color_if_asked(args: list[str]) -> Iterator[None]:
    """`--no-color` works like NO_COLOR=1 for the whole run: every console (ours, typer's usage errors, the live
    view) honours that variable, so no code path can forget the option. Restored afterwards."""
    if "--no-color" not in args or os.environ.get("NO_COLOR"):
        yield
        return
    os.environ["NO_COLOR"] = "1"
    try:
        yield
    finally:
        os.environ.pop("NO_COLOR", None)


def _run(args: list[str]) -> int:
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
        if _while_interrupted(error):  # a cleanup that failed while Ctrl-C unwound the stack: still Ctrl-C
            return int(ExitCode.INTERRUPTED)
        if debug:
            raise
        from specops.cli.output import report_internal_error

        return report_internal_error(error)
    return 0


def _while_interrupted(error: BaseException) -> bool:
    """Whether `error` was raised while a KeyboardInterrupt was being handled (its context chain holds one)."""
    seen: set[int] = set()
    current: BaseException | None = error.__context__
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__context__
    return False


def entry() -> None:
    """Same as specops.cli.entry:entry, for an install whose `specops` script still names this module
    (re-install to get the fast completion path: this module has already loaded typer)."""
    from specops.cli.entry import entry as console_entry

    console_entry()

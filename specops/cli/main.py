"""The specops command line: the root typer app, global options, and the one error boundary.

Sub-commands live in one file per noun and are listed here (COMMANDS); a run imports only the module of the
command it runs. Heavy modules (pydantic, jinja2, paramiko, rich) are imported inside the commands, so
`specops --help` and every command's start stay fast.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from pathlib import Path
from typing import Annotated

import typer

from specops import __version__
from specops.cli.early.command_line import ROOT_VALUE_OPTIONS
from specops.cli.early.start import HeadStart
from specops.cli.entry import COMPLETE_VAR
from specops.cli.options import JsonOpt
from specops.cli.state import AppState
from specops.cli.usage import SpecopsCommand, SpecopsGroup
from specops.errors import EXIT_CODE_MEANINGS, SpecopsError, UsageError

_EXIT_TABLE = "\n".join(f"{int(code):>3}  {meaning}" for code, meaning in EXIT_CODE_MEANINGS.items())

# name -> (module under specops.cli, attribute, a sub-app (group) rather than one command); in help order.
# A run imports only the module of the command it runs (see `build_app`): every command's module loaded and
# every command built by typer costs each run ~30 ms before it can do anything.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "init": ("cmd_init", "init", False),
    "render": ("cmd_render", "render", False),
    "hosts": ("cmd_hosts", "hosts", False),
    "doctor": ("cmd_doctor", "doctor", False),
    "deploy": ("cmd_deploy", "deploy", False),
    "rollback": ("cmd_rollback", "rollback", False),
    "trial": ("cmd_trial", "trial", False),
    "restart": ("cmd_restart", "restart", False),
    "status": ("cmd_status", "status", False),
    "releases": ("cmd_status", "releases", False),
    "logs": ("cmd_status", "logs", False),
    "smoke": ("cmd_smoke", "smoke", False),
    "config": ("cmd_config", "app", True),
    "lock": ("cmd_lock", "app", True),
    "audit": ("cmd_audit", "audit", False),
    "completion": ("cmd_completion", "completion", False),
    "diagnose": ("cmd_diagnose", "diagnose", False),
    "diff": ("cmd_diff", "diff", False),
}


def build_app(only: str | None = None) -> typer.Typer:
    """The root app with every command, or with the one command `only` (same options, help and errors for
    that command: typer builds each command from its own function alone)."""
    app = typer.Typer(
        name="specops",
        help="Deploy patched SGLang speculative-decoding builds over SSH, keep the hosts healthy, roll back.",
        epilog=f"\b\nExit codes:\n{_EXIT_TABLE}",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        cls=SpecopsGroup,
    )
    app.callback()(root)
    for name, (module_name, attribute, is_group) in COMMANDS.items():
        if only is None or name == only:
            target = getattr(import_module(f"specops.cli.{module_name}"), attribute)
            if is_group:
                for sub_command in target.registered_commands:  # a group's commands show metavars too
                    sub_command.cls = SpecopsCommand
                app.add_typer(target, name=name)
            else:
                app.command(name, cls=SpecopsCommand)(target)
    return app


def command_named(args: list[str]) -> str | None:
    """The command `args` run (`specops [ROOT OPTIONS] COMMAND ...`), or None: no command, a help or version
    request before it, or a word that is no command (the full app then answers, with its suggestions)."""
    words = iter(args)
    for word in words:
        if word in ("--help", "--version", "--"):
            return None
        if word in ROOT_VALUE_OPTIONS:
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"specops {__version__}")
        raise typer.Exit()


def root(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        # readable=False: click's own check would exit 2; the loader reports an unreadable file as exit 3,
        # exactly as it does for the same file found by default.
        typer.Option(
            "--config",
            metavar="PATH",
            readable=False,
            help="specops.toml to use (default: ./, $SPECOPS_CONFIG, ~/.config)",
        ),
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
    head_start = ctx.obj if isinstance(ctx.obj, HeadStart) else HeadStart()  # from the console script, if any
    ctx.obj = AppState(config_path=config, json=json_output, debug=debug, verbose=verbose, color=not no_color,
                       head_start=head_start)  # fmt: skip
    if ask_become_pass and not ctx.resilient_parsing:
        from specops.cli.become_prompt import ask_become_password

        ctx.obj.become_password = ask_become_password()


def main(argv: list[str] | None = None, head_start: HeadStart | None = None) -> int:
    """Run the CLI; SpecopsError becomes a message + hint + exit code, never a traceback (unless --debug).
    `head_start`: what the console script started before typer loaded, for the command to claim."""
    args = sys.argv[1:] if argv is None else argv
    if os.environ.get(COMPLETE_VAR):  # the entry point answers before importing typer; tests come here
        from specops.cli.complete import respond

        return respond(os.environ)
    with no_color_if_asked(args):
        code = _run(args, head_start)
    return _late_signal(code, "--json" in args)


def _late_signal(code: int, as_json: bool) -> int:
    """A signal whose exception was dropped (see specops/ops/interrupts.py) after the command's last step
    boundary: what the command did stands and was reported; the exit code still says it was interrupted."""
    if "specops.ops.interrupts" not in sys.modules:  # never loaded: no signal came
        return code
    from specops.ops import interrupts

    signum = interrupts.unanswered()
    return _interrupted(interrupts.Interrupted(signum), as_json, finished=True) if signum else code


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


def _run(args: list[str], head_start: HeadStart | None) -> int:
    debug = "--debug" in args
    as_json = "--json" in args
    try:
        build_app(command_named(args))(args=args, prog_name="specops", obj=head_start)
    except SystemExit as exit_:
        if (unwound := _while_interrupted(exit_)) is not None:  # typer answers an interruption with exit 130
            return _interrupted(unwound, as_json)
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except SpecopsError as error:
        if debug:
            _print_traceback()
        from specops.cli.output import report_error

        report_error(_with_command_help(error, command_named(args)), as_json)
        return int(error.exit_code)
    except KeyboardInterrupt as interruption:
        return _interrupted(interruption, as_json)
    except Exception as error:  # the last line of defence: one line, not a traceback
        if (unwinding := _while_interrupted(error)) is not None:  # a cleanup failed while Ctrl-C unwound
            return _interrupted(unwinding, as_json)
        if debug:
            _print_traceback()
        from specops.cli.output import report_internal_error

        return report_internal_error(error)
    return 0


def _print_traceback() -> None:
    """--debug: the traceback on stderr before the usual error lines, and the exit code stays the error's own (a
    script that runs with --debug must still tell exit 2 from exit 3)."""
    import traceback

    from specops.cli.output import visible

    sys.stderr.write("\n".join(visible(line) for line in traceback.format_exc().split("\n")))


def _with_command_help(error: SpecopsError, command: str | None) -> SpecopsError:
    """A usage error whose raise site gave no hint of its own points at the help of the command it refused."""
    if isinstance(error, UsageError) and error.hint == UsageError.default_hint and command is not None:
        error.hint = f"specops {command} --help"  # the same hint as a refusal by the parser
    return error


def _while_interrupted(error: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt being handled when `error` was raised (its chain of causes and contexts holds
    one), or None."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [error.__cause__, error.__context__]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        todo += [current.__cause__, current.__context__]
    return None


def _interrupted(interruption: KeyboardInterrupt, as_json: bool, *, finished: bool = False) -> int:
    """An interruption ends with what each host serves now (noted by the code that knew it) and 128 + the
    signal's number; a command that changed no host has no notes and says only that it was interrupted.
    `finished`: the signal came as the command ended, after all it reported above."""
    from specops.cli.output import print_json, stderr_console
    from specops.ops import interrupts

    interrupts.answered()
    code = interrupts.exit_code(interruption)
    message = f"interrupted ({interrupts.signal_name(interruption)})"
    notes = interrupts.take_notes()
    hint = "`specops status HOST` shows what serves" if notes else "run the command again to finish it"
    if finished:
        message, hint = f"{message} as the command ended", "what it reported above is what it did"
    with contextlib.suppress(OSError, ValueError):  # after SIGHUP the terminal may be gone: the code still counts
        if as_json:
            print_json({"error": {"message": message, "lines": [message, *notes], "hint": hint, "exit_code": code}})
            return code
        from rich.markup import escape

        console = stderr_console()
        for line in (message, *notes):
            console.print(f"[bold red]error:[/] {escape(line)}")
        console.print(f"[yellow]hint:[/] {escape(hint)}")
    return code


def entry() -> None:
    """Same as specops.cli.entry:entry, for an install whose `specops` script still names this module
    (re-install to get the fast completion path: this module has already loaded typer)."""
    from specops.cli.entry import entry as console_entry

    console_entry()

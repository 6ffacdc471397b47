"""How the command line is shown and refused: metavars in help, and the parser's refusals as specops errors.

typer shows an argument as its Python type (`names... <list[str]>`, `{host}`) and prints the parser's own
refusals (a missing argument, a bad value, an unknown command or option) in click's words, without the
`error:` and `hint:` lines every other refusal has. The root group here turns each parser refusal into a
UsageError, so it reaches the one error boundary (main.py) like any other, `--json` included; the command
class shows each argument by its metavar (`HOST`, `HOST|GROUP...`) in the usage line and in the help.
"""

from __future__ import annotations

from typing import Any

from typer._click import Context, HelpFormatter
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperArgument, TyperCommand, TyperGroup

from specops.errors import UsageError


def parser_refusal(error: ClickException) -> UsageError:
    """The parser's refusal as a UsageError (exit 2) whose hint names the refused command's help."""
    context = getattr(error, "ctx", None)
    command = context.command_path if isinstance(context, Context) else "specops"
    return UsageError(error.format_message(), hint=f"{command} --help")


class SpecopsGroup(TyperGroup):
    """The root group: a refusal by the parser, at any level of the command line, leaves as a UsageError."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: Context | None = None, **extra: Any
    ) -> Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except NoArgsIsHelpError:  # a bare `specops` shows the help, as it always has
            raise
        except ClickException as error:
            raise parser_refusal(error) from None

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except NoArgsIsHelpError:  # a bare group (`specops lock`) shows its help
            raise
        except ClickException as error:
            raise parser_refusal(error) from None


def argument_label(argument: TyperArgument) -> str:
    """`HOST`, `HOST|GROUP...`: the argument's metavar (else its name in capitals), `...` when repeatable."""
    label = argument.metavar or (argument.name or "arg").upper()
    return label + ("..." if argument.nargs != 1 else "")


class SpecopsCommand(TyperCommand):
    """A command whose usage line and help name each argument by its metavar, never by its Python type."""

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                label = argument_label(param)
                pieces.append(label if param.required else f"[{label}]")
        return pieces

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):
                arguments.append((argument_label(param), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

"""The start-up path's command-line grammar, generated from the typer app, and the one decision made by hand.

The console script reads a plain `doctor` or `deploy` command line before typer loads (command_line.py). It
must know every option of the root and of those two commands: which take a value, their aliases, their
numeric limits (all taken from the typer app here), and whether a plain run may carry it. That last part is
no property of the option, so it is decided here, once per option (DECISIONS): "early" when the early path
may start with the option on the command line (the parsed command applies it), "late" when the option changes
what is connected to or how, or must be checked or asked for before anything connects; then the early path
starts nothing and the parsed command connects as usual.

An option without a decision stops the generator (a unit test regenerates the table and fails), so a new
option cannot silently turn the early path off or on. `python -m specops.cli.cmd_completion` (or this module)
writes grammar_table.py, which the console script imports instead of typer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specops.cli.early.command_line import ROOT

TABLE_FILE = Path(__file__).with_name("grammar_table.py")
EARLY, LATE = "early", "late"
DECISIONS: dict[str, dict[str, str]] = {
    ROOT: {
        "config": EARLY,  # the config the plan is keyed by
        "json_output": EARLY, "debug": EARLY, "no_color": EARLY, "verbose": EARLY,  # presentation only
        "version": LATE, "install_completion": LATE, "show_completion": LATE,  # answer without connecting
        "ask_become_pass": LATE,  # the sudo password is asked for before any connection
    },
    "doctor": {
        "json_output": EARLY, "strict": EARLY,  # presentation and the exit code only
        "all_hosts": LATE, "local": LATE,  # other targets than the names
        "profile": LATE, "deep": LATE, "only": LATE,  # another probe request or other checks
        "list_checks": LATE,  # connects nowhere
        "since_verified": LATE,  # reads releases after the report: the parsed command connects for it
    },
    "deploy": {
        "build": EARLY, "patch": EARLY, "profile": EARLY,  # staged by the parsed command; the plan holds hosts
        "lock_wait": EARLY,  # sizes the early push session's time limit (read by deploy.py)
        "canary": EARLY, "parallel": EARLY, "max_fail_percent": EARLY,  # the order of the hosts, not their connection
        "force": EARLY, "no_rollback": EARLY, "reap": EARLY, "json_output": EARLY,
        "skip_check": LATE,  # a misspelt check id is refused before any connection
        "dry_run": LATE,  # connects its own way
    },
}  # fmt: skip


class Undecided(ValueError):
    """An option of an early command without a decision, or a decision for an option that is gone."""


def table_data() -> dict[str, dict[str, dict[str, Any]]]:
    """Every option of the root and of each command in DECISIONS, as command_line.py reads them."""
    import typer.main

    from specops.cli.main import build_app

    root = typer.main.get_command(build_app())
    commands = getattr(root, "commands", {})
    return {name: options(root if name == ROOT else commands[name], name) for name in DECISIONS}


def options(command: Any, name: str) -> dict[str, dict[str, Any]]:
    """`command`'s options, each alias with its parameter's name, kind of value, limits and decision."""
    decided = DECISIONS[name]
    params = [param for param in command.params if param.param_type_name == "option"]
    gone = sorted(set(decided) - {param.name for param in params})
    if gone:
        raise Undecided(f"{_where(name)}: DECISIONS names {gone[0]!r}, which is no option: remove it")
    found: dict[str, dict[str, Any]] = {}
    for param in params:
        if param.name not in decided:
            raise Undecided(f"{_where(name)} {param.opts[0]}: decide in DECISIONS whether a plain run may carry it")
        entry = {"name": param.name, "value": _value(param), "early": decided[param.name] == EARLY}
        if entry["value"] in ("int", "float"):
            entry.update(_limits(param))
        for opt in [*param.opts, *param.secondary_opts]:
            found[opt] = entry
    return found


def _where(name: str) -> str:
    return f"specops/cli/early/grammar.py: `specops{' ' + name if name else ''}`"


def _value(param: Any) -> str:
    """An empty kind for a flag (or a count), "int" or "float" for a number, "text" for anything else."""
    if param.is_flag or param.count:
        return ""
    annotation = getattr(param.type_descriptor, "annotation", None)
    return "int" if annotation is int else "float" if annotation is float else "text"


def _limits(param: Any) -> dict[str, float]:
    return {bound: limit for bound in ("min", "max") if (limit := getattr(param, bound, None)) is not None}


def build_table() -> str:
    """The source of grammar_table.py, formatted as `ruff format` leaves it."""
    lines = [
        '"""The command-line grammar the console script reads before typer loads. GENERATED by',
        'specops.cli.early.grammar from the typer app (run `python -m specops.cli.cmd_completion`)."""',
        "",
        "from typing import Any",
        "",
        "GRAMMAR: dict[str, dict[str, dict[str, Any]]] = {",
    ]
    for command, found in table_data().items():
        lines.append(f"    {_literal(command)}: {{")
        for opt, entry in found.items():
            fields = ", ".join(f"{_literal(key)}: {_literal(value)}" for key, value in entry.items())
            lines.append(f"        {_literal(opt)}: {{{fields}}},")
        lines.append("    },")
    return "\n".join([*lines, "}", ""])


def _literal(value: object) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


if __name__ == "__main__":
    TABLE_FILE.write_text(build_table(), encoding="utf-8")
    print(f"wrote {TABLE_FILE}")

"""`specops config check`: validate specops.toml, every profile, and every host/profile pair."""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from specops.cli.options import JsonOpt
from specops.cli.output import print_json, print_raw
from specops.cli.state import state
from specops.errors import ConfigError, SpecopsError, UsageError

if TYPE_CHECKING:
    from specops.config.loader import Config

app = typer.Typer(help="Inspect and validate the configuration.", no_args_is_help=True)


@app.command("check")
def check(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """Validate everything a deploy would need from the config; exit 0 when valid, 3 when not."""
    app_state = state(ctx)
    config = app_state.load_config()
    lines = _pair_errors(config) + _secret_errors(config)
    if lines:
        raise ConfigError(lines)
    hosts, groups, profiles = len(config.inventory.hosts), len(config.inventory.groups), sorted(config.profiles)
    engines = len(config.inventory.engines)
    if app_state.wants_json(json_output):
        print_json({"config": config.display, "hosts": hosts, "groups": groups, "engines": engines,
                    "profiles": profiles, "valid": True})  # fmt: skip
    else:
        shown_engines = f"{_count(engines, 'engine')}, " if engines else ""
        typer.echo(
            f"{config.display}: valid ({_count(hosts, 'host')}, {_count(groups, 'group')}, {shown_engines}"
            f"profiles: {', '.join(profiles)})"
        )


class SchemaKind(StrEnum):
    config = "config"
    profile = "profile"


@app.command("schema")
def schema(
    kind: Annotated[
        SchemaKind, typer.Argument(metavar="KIND", help="config: specops.toml; profile: a profiles/NAME.toml.")
    ] = (SchemaKind.config),
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="PATH", help="Write to this file instead.")
    ] = None,
) -> None:
    """Print the JSON Schema of specops.toml (or of a profile file) for editors: descriptions, defaults, enums.

    Save it next to specops.toml and put `#:schema ./specops.schema.json` on the file's first line."""
    import json

    from specops.config.schema import schema_for

    text = json.dumps(schema_for(kind.value), indent=2) + "\n"
    if output is None:
        print_raw(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        raise UsageError(
            f"{output}: cannot write: {error.strerror}", hint="give --output a path in a folder you can write to"
        ) from None
    typer.echo(f"wrote {output}")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _pair_errors(config: Config) -> list[str]:
    """Each host with its default profile and with every profile it overrides."""
    lines: list[str] = []
    for name, host in config.inventory.hosts.items():
        profiles = dict.fromkeys([*([host.profile] if host.profile else []), *host.overrides])
        for profile in profiles:
            try:
                config.resolve(name, profile)
            except SpecopsError as error:
                lines += getattr(error, "lines", [error.message])
    return lines + _engine_errors(config)


def _engine_errors(config: Config) -> list[str]:
    """Each multi-node engine with rank 0's profile: the rules that depend on the engine's parallelism, and
    rank 0's address when dist_addr is not set (its ssh HostName)."""
    from specops.config.engine_targets import resolve_engine
    from specops.host.ssh.resolve import resolve_ssh_target

    lines: list[str] = []
    for name in config.inventory.engines:
        first = config.inventory.hosts[config.inventory.engines[name].hosts[0]]
        if first.profile is None:
            continue  # named with --profile at render time; nothing to check yet
        try:
            resolve_engine(config, name, None, lambda spec: resolve_ssh_target(spec.ssh, jump=spec.jump).hostname)
        except SpecopsError as error:
            lines += [line for line in getattr(error, "lines", [error.message]) if line not in lines]
    return lines


def _secret_errors(config: Config) -> list[str]:
    from specops.config.secrets import resolve_secrets

    path = config.secrets_path
    lines: list[str] = []
    if path is not None and not path.is_file():
        return [f"{config.display}: secrets_file: {path} does not exist"]
    for name, host in config.inventory.hosts.items():
        try:
            resolve_secrets(host.secrets, os.environ, path, f"{config.display}: hosts.{name}.secrets")
        except ConfigError as error:
            lines += error.lines
    return lines

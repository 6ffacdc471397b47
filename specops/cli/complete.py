"""Shell completion that answers fast: no typer, no pydantic, no paramiko, no network.

The shells call `specops` with `_SPECOPS_COMPLETE=complete_bash|complete_zsh|complete_fish` and the words
typed so far (the protocol of typer's completion scripts, so `specops --install-completion` and
`specops completion SHELL` install scripts that land here). The command tree comes from a table generated
from the typer app (completion_table.py, kept current by a test); host, group and profile names come from
specops.toml read with tomllib; release ids from the local audit log (complete_releases.py). Anything
unreadable completes nothing.
"""

from __future__ import annotations

import contextlib
import shlex
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specops.cli.completion_table import TABLE
from specops.cli.entry import COMPLETE_VAR

Node = dict[str, Any]


def split_words(line: str) -> list[str]:
    """Split what the shell passed like a shell would; an unfinished quote keeps what was typed so far."""
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()


def shell_request(environ: Mapping[str, str]) -> tuple[str, list[str], str]:
    """(shell, words after `specops` before the cursor, the word being completed) from the environment."""
    shell = environ.get(COMPLETE_VAR, "").removeprefix("complete_")
    if shell == "bash":
        words = split_words(environ.get("COMP_WORDS", ""))
        cword = int(environ.get("COMP_CWORD", "0") or 0)
        return shell, words[1:cword], words[cword] if cword < len(words) else ""
    line = environ.get("_TYPER_COMPLETE_ARGS", "")
    words = split_words(line)[1:]
    if words and not line.endswith(" "):
        return shell, words[:-1], words[-1]
    return shell, words, ""


def _option(node: Node, word: str) -> Node | None:
    name = word.split("=", 1)[0]
    found: Node | None = node["options"].get(name)
    return found


def _walk(words: list[str]) -> tuple[Node, list[str], Node | None]:
    """The command the words reach, the positional words given to it, and an option still waiting a value."""
    node: Node = TABLE
    positionals: list[str] = []
    waiting: Node | None = None
    for word in words:
        if waiting is not None:
            waiting = None
            continue
        if word.startswith("-") and word != "-":
            option = _option(node, word) or _option(TABLE, word)
            if option is not None and option["value"] and "=" not in word:
                waiting = option
            continue
        if not positionals and word in node.get("commands", {}):
            node = node["commands"][word]
            continue
        positionals.append(word)
    return node, positionals, waiting


def candidates(words: list[str], incomplete: str, environ: Mapping[str, str], cwd: Path) -> list[tuple[str, str]]:
    """(value, help) pairs that complete `incomplete` after `words`."""
    node, positionals, waiting = _walk(words)
    if waiting is not None and waiting["value"] == "checks":  # a comma-separated list: complete its last id
        typed, comma, _ = incomplete.rpartition(",")
        values = [(typed + comma + choice, "check") for choice in waiting["choices"]]
    elif waiting is not None:
        values = _values(waiting["value"], waiting.get("choices", []), words, positionals, environ, cwd)
    elif incomplete.startswith("-"):
        values = [(name, option["help"]) for name, option in node["options"].items()]
    elif node.get("commands") and not positionals:
        values = [(name, sub["help"]) for name, sub in node["commands"].items()]
    else:
        arguments = node.get("arguments", [])
        index = min(len(positionals), len(arguments) - 1)
        if index < 0 or (len(positionals) >= len(arguments) and not arguments[-1]["many"]):
            return []
        argument = arguments[index]
        values = _values(argument["value"], argument.get("choices", []), words, positionals, environ, cwd)
    return [(value, text) for value, text in values if value.startswith(incomplete)]


def _values(
    kind: str, choices: list[str], words: list[str], positionals: list[str], environ: Mapping[str, str], cwd: Path
) -> list[tuple[str, str]]:
    if kind in ("choice", "checks"):
        return [(choice, "") for choice in choices]
    if kind in ("host", "target", "profile", "host-or-engine"):
        inventory = _inventory(words, environ, cwd)
        if inventory is None:
            return []
        hosts, groups, profiles = inventory
        if kind == "profile":
            return [(name, "profile") for name in profiles]
        named = [(name, "host") for name in hosts]
        if kind == "host-or-engine":  # render: a host, or an engine's every rank
            return named + [(name, "engine") for name in _engine_names(words, environ, cwd)]
        return named + [(name, "group") for name in groups] if kind == "target" else named
    if kind.startswith("release") or kind == "rollback-target":
        from specops.cli.complete_releases import known_releases

        host = positionals[0] if positionals else None
        if host and host in _inventory(words, environ, cwd)[1]:  # a group: its hosts share build ids; offer them all
            host = None
        return [(release, "release") for release in known_releases(host, environ).accepted(kind)]
    return []


def _config_path(words: list[str], environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The same search as the loader: --config, ./specops.toml, $SPECOPS_CONFIG, ~/.config/specops."""
    for index, word in enumerate(words):
        if word == "--config" and index + 1 < len(words):
            return Path(words[index + 1]).expanduser()
        if word.startswith("--config="):
            return Path(word.split("=", 1)[1]).expanduser()
    places = [cwd / "specops.toml"]
    if environ.get("SPECOPS_CONFIG"):
        places.append(Path(environ["SPECOPS_CONFIG"]))
    places.append(Path(environ.get("HOME", "~")).expanduser() / ".config" / "specops" / "specops.toml")
    return next((place for place in places if place.is_file()), None)


def _engine_names(words: list[str], environ: Mapping[str, str], cwd: Path) -> list[str]:
    """[engines.*] names; none when the config cannot be read."""
    path = _config_path(words, environ, cwd)
    if path is None:
        return []
    try:
        with path.open("rb") as handle:
            engines = tomllib.load(handle).get("engines", {})
    except (OSError, tomllib.TOMLDecodeError):
        return []
    return list(engines) if isinstance(engines, dict) else []


def _inventory(words: list[str], environ: Mapping[str, str], cwd: Path) -> tuple[list[str], list[str], list[str]]:
    """(host names, group names, profile names); empty lists when the config cannot be read."""
    path = _config_path(words, environ, cwd)
    if path is None:
        return [], [], _profile_names(None)
    try:
        with path.open("rb") as handle:
            raw = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return [], [], _profile_names(path)
    hosts = raw.get("hosts", {})
    groups = raw.get("groups", {})
    return (list(hosts) if isinstance(hosts, dict) else [], list(groups) if isinstance(groups, dict) else [],
            _profile_names(path))  # fmt: skip


def _profile_names(config: Path | None) -> list[str]:
    """Shipped profiles and the operator's own (profiles/ beside specops.toml), like the loader."""
    from specops.config.shipped import data_dir

    folders = [config.parent / "profiles"] if config is not None else []
    with contextlib.suppress(FileNotFoundError):
        folders.insert(0, data_dir("profiles"))
    names = {path.stem for folder in folders if folder.is_dir() for path in folder.glob("*.toml")}
    return sorted(names)


def format_reply(shell: str, found: list[tuple[str, str]]) -> str:
    """What each shell's script expects on stdout (typer's formats)."""
    if shell == "zsh":
        if not found:
            return "_files"
        quoted = "\n".join(f'"{_zsh(value)}":"{_zsh(text)}"' if text else f'"{_zsh(value)}"' for value, text in found)
        return f"_arguments '*: :(({quoted}))'"
    if shell == "fish":
        return "\n".join(f"{value}\t{text}" if text else value for value, text in found)
    return "\n".join(value for value, _ in found)


def _zsh(text: str) -> str:
    return (text.replace('"', '""').replace("'", "''").replace("$", "\\$").replace("`", "\\`")
            .replace(":", r"\\:"))  # fmt: skip


def respond(environ: Mapping[str, str], cwd: Path | None = None) -> int:
    """Answer one completion request on stdout; the exit code matters only to fish's `is-args` probe."""
    import sys

    shell, words, incomplete = shell_request(environ)
    found = candidates(words, incomplete, environ, cwd or Path.cwd())
    if shell == "fish" and environ.get("_TYPER_COMPLETE_FISH_ACTION") == "is-args":
        return 0 if found else 1
    text = format_reply(shell, found)
    if text:
        sys.stdout.write(text + "\n")
    return 0

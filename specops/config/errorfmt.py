"""Turn pydantic and TOML errors into `file: dotted.path: message` lines an operator can act on."""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError


def display_path(path: Path, cwd: Path) -> str:
    """The path as the operator would type it: relative to the current directory when below it."""
    try:
        return str(path.resolve().relative_to(cwd.resolve()))
    except ValueError:
        return str(path)


def dotted(parts: Iterable[Any]) -> str:
    """('hosts', 'llm-two', 'port') -> 'hosts.llm-two.port'; empty and pydantic's '[key]' parts dropped."""
    return ".".join(str(p) for p in parts if str(p) not in ("", "[key]"))


def validation_lines(
    source: str, prefix: Sequence[str], error: ValidationError, model: type[BaseModel] | None = None
) -> list[str]:
    """One line per pydantic error, path-qualified, with typo suggestions for unknown keys."""
    lines = []
    for item in error.errors(include_url=False):
        path = dotted([*prefix, *item["loc"]])
        lines.append(f"{source}: {path}: {_message(item, model)}")
    return lines


def _message(item: Any, model: type[BaseModel] | None) -> str:
    kind, msg = item["type"], str(item["msg"])
    if kind == "extra_forbidden":
        return _unknown_key_message(str(item["loc"][-1]), model if len(item["loc"]) == 1 else None)
    if kind == "missing":
        return "required setting is missing"
    if kind.endswith(("_parsing", "_type")) and not isinstance(item.get("input"), dict | list):
        return f"{msg.split(',')[0]} (got {item.get('input')!r})"
    return msg.removeprefix("Value error, ")


def _unknown_key_message(key: str, model: type[BaseModel] | None) -> str:
    message = "unknown key (specops rejects unknown keys to catch typos)"
    if model is not None:
        close = difflib.get_close_matches(key, list(model.model_fields), n=1)
        if close:
            message += f"; did you mean {close[0]!r}?"
    return message


def toml_line(source: str, error: Exception) -> str:
    """tomllib says 'Invalid value (at line 3, column 7)'; print it as 'file: line 3, column 7: Invalid value'."""
    match = re.fullmatch(r"(.*) \(at (line \d+, column \d+)\)", str(error))
    if match:
        return f"{source}: {match.group(2)}: {match.group(1)}"
    return f"{source}: {error}"


def read_toml_file(path: Path, source: str) -> dict[str, Any]:
    """A TOML file as a dict, or one `source: ...` line in a ConfigError for every way reading it can fail:
    bad syntax, bytes that are not UTF-8 (a binary file), a folder, no permission, nesting too deep to parse."""
    return read_toml_digest(path, source)[0]


def read_toml_digest(path: Path, source: str) -> tuple[dict[str, Any], bytes]:
    """`read_toml_file` and the SHA-256 digest of the very bytes parsed: what was validated is what a
    remembered connection plan is filed under (specops/cli/early/plan.py), never a second read of the file."""
    import hashlib

    from specops.errors import ConfigError

    try:
        with path.open("rb") as handle:
            data = handle.read()
        return tomllib.loads(data.decode("utf-8")), hashlib.sha256(data).digest()
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([toml_line(source, exc)]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{source}: not UTF-8 text (byte {exc.start}): is this the right file?"]) from None
    except IsADirectoryError:
        raise ConfigError([f"{source}: is a folder, not a TOML file"]) from None
    except OSError as exc:
        raise ConfigError([f"{source}: cannot read: {exc.strerror}"]) from None
    except RecursionError:
        raise ConfigError([f"{source}: nested too deeply to read"]) from None

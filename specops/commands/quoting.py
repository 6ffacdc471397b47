"""Quoting for the three places a value can land: a systemd command line, a unit directive, an env file.

Each has its own rules (systemd.service(5) "Command lines", systemd.exec(5) EnvironmentFile=). Values with
control characters never reach here: the config models reject them, because no quoting makes a newline
safe in a unit file.
"""

from __future__ import annotations

import re

_SAFE_WORD = re.compile(r"[A-Za-z0-9_@+=:,./-]+")


def systemd_specifiers(text: str) -> str:
    """`%` starts a specifier (%n, %h...) in almost every directive; `%%` is a literal percent."""
    return text.replace("%", "%%")


def exec_arg(arg: str) -> str:
    """One ExecStart= word: `%` and `$` escaped (specifier and variable expansion), quoted when needed."""
    text = systemd_specifiers(arg).replace("$", "$$")
    if text and _SAFE_WORD.fullmatch(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def environment_directive(name: str, value: str) -> str:
    """The value of an Environment= line: the whole assignment in double quotes."""
    text = systemd_specifiers(f"{name}={value}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def env_file_line(name: str, value: str) -> str:
    """A line of an EnvironmentFile=, double-quoted the way both systemd and a POSIX shell read it."""
    escaped = re.sub(r'(["\\`$])', r"\\\1", value)
    return f'{name}="{escaped}"'

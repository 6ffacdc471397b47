"""`--ask-become-pass`: the sudo password, asked once per run on the terminal, before any host is touched.

Why on the terminal only (/dev/tty, echo off, getpass): a password piped on stdin, given in argv or in the
environment ends up in shell history, process lists or CI logs. Without a terminal the option is refused with
a clear error instead of getpass's fallback, which would read stdin with echo on.
"""

from __future__ import annotations

import getpass

from specops.config.secrets import Secret
from specops.errors import UsageError
from specops.host.ssh.passphrase import has_terminal

PROMPT = "sudo password (of the login user on the hosts): "


def ask_become_password() -> Secret:
    """Read the password with echo off from the controlling terminal; UsageError (exit 2) without one."""
    if not has_terminal():
        raise UsageError(
            "--ask-become-pass needs a terminal to ask for the sudo password, and this run has none",
            hint="run it from a terminal, or allow the login user NOPASSWD sudo on the hosts (docs/configuration.md)",
        )
    try:
        password = getpass.getpass(PROMPT)
    except EOFError:
        raise UsageError(
            "no sudo password was typed (end of input at the prompt)",
            hint="type the password at the prompt, or give the login user NOPASSWD sudo and drop --ask-become-pass",
        ) from None
    if "\n" in password or "\0" in password:
        raise UsageError(
            "the sudo password cannot contain a newline or NUL byte", hint="type the password itself at the prompt"
        )
    return Secret(password)

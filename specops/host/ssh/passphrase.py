"""Passphrases for encrypted key files: asked once per key per run, on the terminal, never stored anywhere else.

Why here and not in connection.py: the rule (once per key, only with a terminal, a clear error without one) is the same
whatever library decrypts the key, and it must be testable without one. Several hosts of a fleet connect in
parallel threads; the lock makes the first one ask while the others wait for its answer.
"""

from __future__ import annotations

import getpass
import os
import threading
from collections.abc import Callable

from specops.errors import ConnectError

ATTEMPTS = 3  # as OpenSSH: three tries at a passphrase, then the key is given up


def has_terminal() -> bool:
    """True when a controlling terminal can be opened: getpass reads from it, with echo off."""
    try:
        os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
    except OSError:
        return False
    return True


def no_terminal(path: str) -> ConnectError:
    return ConnectError(
        f"the key {path} is protected by a passphrase, and there is no terminal to ask for it",
        hint=f"load it into ssh-agent first (`ssh-add {path}`), or run specops from a terminal to be asked once",
    )


def wrong_passphrase(path: str) -> ConnectError:
    return ConnectError(
        f"the key {path}: wrong passphrase ({ATTEMPTS} tries)",
        hint=f"check the passphrase with `ssh-keygen -y -f {path}`, or load the key with `ssh-add {path}`",
    )


class KeyUnlocker:
    """Decrypts each key once per run: `unlock(path, load)` where `load(passphrase)` returns the key or raises
    ValueError for a wrong passphrase. The decrypted key is kept in memory for the other hosts of the run."""

    def __init__(self, ask: Callable[[str], str] | None = None, terminal: Callable[[], bool] = has_terminal) -> None:
        self._ask = ask or (lambda prompt: getpass.getpass(prompt))
        self._terminal = terminal
        self._lock = threading.Lock()
        self._keys: dict[str, object] = {}
        self._failed: dict[str, ConnectError] = {}

    def unlock(self, path: str, load: Callable[[str], object]) -> object:
        with self._lock:  # one prompt at a time; the hosts waiting for the same key get it without a prompt
            if path in self._keys:
                return self._keys[path]
            if path in self._failed:
                raise self._failed[path]
            try:
                key = self._unlock(path, load)
            except ConnectError as error:
                self._failed[path] = error
                raise
            self._keys[path] = key
            return key

    def _unlock(self, path: str, load: Callable[[str], object]) -> object:
        if not self._terminal():
            raise no_terminal(path)
        for _ in range(ATTEMPTS):
            try:
                return load(self._ask(f"Enter passphrase for key '{path}': "))
            except ValueError:
                continue
        raise wrong_passphrase(path)

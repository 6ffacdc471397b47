"""~/.ssh/config read the way OpenSSH reads it for one alias, without paramiko (ssh_config(5)).

Why our own reader: paramiko's SSHConfig skips `Include` without a word, so a bastion or key set in an
included file silently vanished; and a `Match exec` needs a shell we do not want to run. Here:

- `Host` patterns (`*`, `?`, `!negation`, lists) match the alias as written in the inventory;
- `Match` with `all`, `host`, `originalhost`, `user`, `localuser` (each may be negated with `!`), where `host`
  is the HostName found so far, as in OpenSSH. Any other criterion (`exec`, `canonical`, `final`,
  `localnetwork`, `tagged`, ...) is refused with its file and line when it could decide the alias's options;
- `Include` (globs, `~`, relative to ~/.ssh), also inside a Host/Match block (then only when that block
  applies), at most 16 levels deep;
- the first value obtained for a keyword wins, except IdentityFile and CertificateFile, which add up;
- a file (the config or one it includes) that another user could have written is refused, as OpenSSH does.
"""

from __future__ import annotations

import getpass
import glob
import os
import pwd
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from specops.errors import ConfigError
from specops.host.ssh.known_hosts import host_matches

MAX_INCLUDE_DEPTH = 16
PROXIES = ("proxyjump", "proxycommand")
ADDITIVE = frozenset({"identityfile", "certificatefile"})
SUPPORTED_MATCH = frozenset({"all", "host", "originalhost", "user", "localuser"})
RAW_VALUE = frozenset({"proxycommand", "localcommand", "remotecommand", "knownhostscommand"})
_KEYWORD = re.compile(r"([^\s=]+)\s*(?:=\s*|\s+|$)(.*)")
HINT = "`ssh -G ALIAS` shows how OpenSSH reads it; docs/configuration.md lists what specops supports"


@dataclass
class _Lookup:
    """The state of one lookup: the alias, the options found so far, the block being read."""

    alias: str
    user: str | None
    options: dict[str, list[str]] = field(default_factory=dict)

    def set(self, key: str, values: list[str]) -> None:
        if key in PROXIES and any(proxy in self.options for proxy in PROXIES):
            return  # ProxyJump and ProxyCommand exclude each other: the first one found wins, as in OpenSSH
        if key in ADDITIVE:
            self.options.setdefault(key, []).extend(values)
        elif key not in self.options:
            self.options[key] = values

    def current_host(self) -> str:
        """What `Match host` compares: the HostName found so far (its %h expanded), else the alias."""
        hostname = self.options.get("hostname")
        return hostname[0].replace("%h", self.alias) if hostname else self.alias


def local_user() -> str:
    """The local user as OpenSSH names it (%u, `Match localuser`, the default User): the account of our uid,
    not $USER or $LOGNAME, which any environment can set."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:  # a uid without a passwd entry (some containers)
        return getpass.getuser()


def lookup(path: Path, alias: str, user: str | None = None) -> dict[str, list[str]]:
    """Every option that applies to `alias` (keywords lower-cased, each with its words); {} without a file.

    `user` is the user named in the inventory value (what `Match user` sees before any User line)."""
    state = _Lookup(alias, user)
    if path.is_file():
        _read_file(path, state, active=True, depth=0)
    return state.options


def _read_file(path: Path, state: _Lookup, active: bool, depth: int) -> None:
    """Apply one file; `active` says whether the block that included it applies (True at the top)."""
    text = _read_secure(path)
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{path}:{number}"
        words = _split(line, where)
        if not words:
            continue
        keyword, args = words[0].lower(), words[1:]
        if keyword == "host":
            active = _host_applies(args, state.alias, where)
        elif keyword == "match":
            active = _match_applies(args, state, where)
        elif not active:
            continue
        elif keyword == "include":
            _include(args, path, state, depth, where)
        elif args:
            state.set(keyword, args)
        else:
            raise ConfigError([f"{where}: {words[0]} has no value"], hint=HINT)


def _read_secure(path: Path) -> str:
    """The file's text, refused as OpenSSH refuses it (readconf.c, for ~/.ssh/config and what it includes) when
    another user could have written it: owned by someone other than us or root, or writable by group or others.
    Such a file can set a ProxyCommand, i.e. run code as the operator."""
    try:
        with path.open("rb") as handle:
            info = os.fstat(handle.fileno())
            if info.st_uid not in (0, os.getuid()) or info.st_mode & 0o022:
                raise ConfigError(
                    [f"Bad owner or permissions on {path}"],
                    hint=f"`chmod go-w {path}` and make it yours (`chown $USER {path}`), as OpenSSH requires",
                )
            return handle.read().decode("utf-8", errors="replace")
    except OSError as error:
        raise ConfigError([f"{path}: cannot read: {error.strerror or error}"], hint=HINT) from None


def _split(line: str, where: str) -> list[str]:
    """`Keyword value...`, `Keyword=value`; double quotes group words; `#` starts a comment. A ProxyCommand
    keeps the rest of its line as one word, quotes included: it is a command line, not a list of words."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return []
    found = _KEYWORD.match(stripped)
    if found is None:
        return []
    keyword, rest = found.group(1), found.group(2).strip()
    if keyword.lower() in RAW_VALUE:
        return [keyword, rest] if rest else [keyword]
    lexer = shlex.shlex(rest, posix=True)
    lexer.whitespace_split, lexer.commenters, lexer.escape = True, "#", ""
    try:
        return [keyword, *lexer]
    except ValueError:
        raise ConfigError([f"{where}: unbalanced quotes"], hint=HINT) from None


def _host_applies(patterns: list[str], alias: str, where: str) -> bool:
    if not patterns:
        raise ConfigError([f"{where}: Host without a pattern"], hint=HINT)
    return host_matches(",".join(patterns), alias)


def _match_applies(args: list[str], state: _Lookup, where: str) -> bool:
    """True when every criterion matches; an unsupported one is refused unless another already failed."""
    if not args:
        raise ConfigError([f"{where}: Match without criteria"], hint=HINT)
    results: list[bool] = []
    unsupported: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        negated, criterion = word.startswith("!"), word.lstrip("!").lower()
        if criterion == "all":
            results.append(not negated)
            index += 1
            continue
        if index + 1 >= len(args):
            raise ConfigError([f"{where}: Match {word} needs an argument"], hint=HINT)
        value = args[index + 1]
        index += 2
        if criterion not in SUPPORTED_MATCH:
            unsupported.append(f"{word} {value}")
            continue
        results.append(_criterion(criterion, value, state) != negated)
    if not all(results):
        return False
    if unsupported:
        raise ConfigError(
            [f"{where}: Match {', '.join(unsupported)}: specops cannot evaluate this criterion for {state.alias}"],
            hint="specops understands Match all, host, originalhost, user and localuser; rewrite this block as "
            "a Host block for the aliases it is meant for",
        )
    return True


def _criterion(name: str, patterns: str, state: _Lookup) -> bool:
    if name == "host":
        return host_matches(patterns, state.current_host())
    if name == "originalhost":
        return host_matches(patterns, state.alias)
    if name == "user":
        found = state.options.get("user")
        return host_matches(patterns, state.user or (found[0] if found else local_user()))
    return host_matches(patterns, local_user())  # localuser


def _include(args: list[str], current: Path, state: _Lookup, depth: int, where: str) -> None:
    if depth >= MAX_INCLUDE_DEPTH:
        raise ConfigError([f"{where}: Include nested more than {MAX_INCLUDE_DEPTH} levels deep"], hint=HINT)
    for pattern in args:
        expanded = os.path.expanduser(pattern)
        if not os.path.isabs(expanded):
            expanded = str(Path("~/.ssh").expanduser() / expanded)
        for name in sorted(glob.glob(expanded)):
            if Path(name).is_file() and Path(name) != current:
                _read_file(Path(name), state, active=True, depth=depth + 1)

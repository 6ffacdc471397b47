"""`[notify]` in specops.toml: where deploy, rollback and guard events go (a webhook, a local command).

Why a top-level table and not a host key: the events are the fleet's, read by one on-call channel; and the
host-side guard posts the same webhook itself (it acts at 3 a.m., when the operator's machine may be gone).

The webhook URL often carries a credential (a token in its query or path, a user:password): it is held as a
`Secret` (printed as ***), shown only through `shown_url` (credentials masked), and reaches a host only in a
0600 file, never in argv. One config per process, like the secrets file: `use_notify` remembers the loaded
one, so that code far from the CLI (the lock's stale takeover) can post its event.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from specops.config.errorfmt import validation_lines
from specops.config.fields import PlainText
from specops.config.secrets import MASK, Secret

_DOC = {
    "webhook": "an http(s) URL: each event is POSTed to it as JSON (retried, never failing a deploy); the "
    "host-side guard posts its own rollbacks to it too; credentials in it are masked in every output",
    "command": "a command run on THIS machine (argv list, no shell) with each event as JSON on its stdin",
    "timeout_s": "seconds one delivery may take (one webhook attempt, or the command)",
    "retries": "further webhook attempts after a failed one (1 s, then 2 s, ... apart)",
}


class Notify(BaseModel):
    """The [notify] table: at least one of webhook and command."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    webhook: str | None = Field(default=None, description=_DOC["webhook"])
    command: list[PlainText] | None = Field(default=None, description=_DOC["command"])
    timeout_s: int = Field(default=5, ge=1, le=60, description=_DOC["timeout_s"])
    retries: int = Field(default=2, ge=0, le=5, description=_DOC["retries"])

    @field_validator("webhook")
    @classmethod
    def _webhook(cls, url: str | None) -> str | None:
        return None if url is None else Secret(checked_url(url))

    @field_validator("command")
    @classmethod
    def _command(cls, words: list[str] | None) -> list[str] | None:
        if words is not None and (not words or not words[0].strip()):
            raise ValueError('a command is a list of words, e.g. ["/usr/local/bin/page", "--team", "gpu"]')
        return words

    def revealed_url(self) -> str:
        """The webhook itself, for the one place that posts it or writes it to a host's 0600 file."""
        return str.__str__(self.webhook) if self.webhook else ""

    def shown_url(self) -> str:
        """The webhook as output may show it: scheme, host and path, credentials masked."""
        return shown_url(self.webhook) if self.webhook else ""


def checked_url(url: str) -> str:
    """An absolute http(s) URL with a host, nothing a header or a log line could be broken with."""
    if any(ord(ch) < 33 or ord(ch) == 127 for ch in url):
        raise ValueError("a URL cannot contain spaces, newlines or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError:
        raise ValueError("not a valid URL") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("expected an http:// or https:// URL")
    if not parts.hostname:
        raise ValueError("the URL names no host")
    return url


def shown_url(url: str) -> str:
    """`url` as output may show it: scheme and host only. Its user:password, its path and its query are ***,
    because a webhook's credential may be any of them (a Slack-style path is the token itself)."""
    parts = urlsplit(url)
    login, _, host = parts.netloc.rpartition("@")
    rest = f"/{MASK}" if parts.path.strip("/") or parts.query else ""
    return f"{parts.scheme}://{MASK + '@' if login else ''}{host}{rest}"


def validate_notify(raw: Any, display: str, lines: list[str]) -> Notify | None:
    """The [notify] table validated (None when absent); its mistakes appended to `lines`, path-qualified."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        lines.append(f'{display}: notify: expected a table like [notify] with webhook = "https://..."')
        return None
    try:
        notify = Notify.model_validate(raw)
    except ValidationError as exc:
        lines += validation_lines(display, ["notify"], exc, Notify)
        return None
    if notify.webhook is None and notify.command is None:
        lines.append(f"{display}: notify: set webhook, command or both (an empty [notify] sends nothing)")
        return None
    return notify


_active: list[Notify | None] = [None]


def use_notify(notify: Notify | None) -> None:
    """Remember the loaded config's [notify] (None: no events are sent)."""
    _active[0] = notify


def active_notify() -> Notify | None:
    return _active[0]

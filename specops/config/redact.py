"""Mask credentials in text a host hands back, before it reaches an error, an event, `--json` or an audit log.

Why it is needed: specops itself never prints a secret (values are `Secret`s, see secrets.py), but a host's
own texts carry them. systemd expands `--api-key ${SGLANG_API_KEY}` into the engine's command line, so
`/proc/PID/cmdline` (read when the engine's GPUs are judged) holds the key; SGLang logs its server arguments
(`api_key='...'`) at start, so the journal holds it; and a command line or a log line may carry a token in a
URL (`https://user:TOKEN@host`, `?token=...`). Every such text goes through `mask_secrets` where it enters
an output: the one place that knows what a credential looks like.

What is masked (the value becomes ***, the name stays so the reader still sees what was there):
- a flag whose name ends in key, token, secret or password, and its value: `--api-key VALUE`,
  `--admin-api-key=VALUE`, `--hf-token VALUE` (a `${NAME}` reference is the unit's, not a value: kept);
- a `name=value` whose name ends the same way: `api_key='...'`, `SGLANG_API_KEY=...`, `?token=...&`, and
  such a name as a JSON key: `"api_key": "..."`;
- the password (or the lone token) of a URL: `https://user:***@host`, `https://***@host`;
- `Authorization: Bearer ***`.
"""

from __future__ import annotations

import re

from specops.config.secrets import MASK

_NAME = r"[\w.-]*(?:key|token|secret|password|passwd)"  # ends in one of these words (case-insensitive)
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_CREDENTIALS = re.compile(
    rf"(?P<flag>--{_NAME})(?P<fsep>=|[ \t]+)(?!--|\$\{{)(?P<fval>{_QUOTED}|\S+)"
    rf"|(?P<name>(?<![\w.-]){_NAME})=(?!\$\{{|None\b)(?P<val>{_QUOTED}|[^\s&#,;)]+)"
    rf"|(?P<key>[\"']{_NAME}[\"'][ \t]*:[ \t]*)(?P<kval>{_QUOTED})"
    r"|(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?P<user>[^\s/:@]*:)?[^\s/@]+@"
    r"|(?P<bearer>\bbearer[ \t]+)[^\s,;]+",
    re.IGNORECASE,
)


def mask_secrets(text: str) -> str:
    """`text` with every credential it shows (see the module's list) replaced by ***; the rest unchanged."""
    return _CREDENTIALS.sub(_masked, text)


def _masked(match: re.Match[str]) -> str:
    if match["flag"]:
        return match["flag"] + match["fsep"] + _like(match["fval"])
    if match["name"]:
        return match["name"] + "=" + _like(match["val"])
    if match["key"]:
        return match["key"] + _like(match["kval"])
    if match["scheme"]:
        return match["scheme"] + (match["user"] or "") + MASK + "@"
    return match["bearer"] + MASK


def _like(value: str) -> str:
    """*** in the value's own quotes, so `api_key='***'` still reads as the quoted string it was."""
    return value[0] + MASK + value[0] if value[:1] in ("'", '"') else MASK

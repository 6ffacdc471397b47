"""Which `--speculative-*` flags a staged build's own argument parser declares, read from its source.

Why: SGLang renamed flags between releases (`--speculative-dflash-draft-window-size` became
`--speculative-draft-window-size` in 0.5.12). The unit must use the name the build being deployed knows,
and the staged tree is on this machine before any host is touched, so its `server_args.py` says which
names it has without importing it (that would need torch). Every flag is an `add_argument("--name", ...)`
call or, in newer releases, a declared field whose flag name is a string literal in the same file.
"""

from __future__ import annotations

import re
from pathlib import Path

SERVER_ARGS = "sglang/srt/server_args.py"
_FLAG = re.compile(r"""["'](--speculative-[a-z0-9-]+)["']""")
_FIELD = re.compile(r"^\s+(speculative_[a-z0-9_]+)\s*:", re.MULTILINE)  # a ServerArgs field: its flag by name


def speculative_flags(stage: Path) -> frozenset[str] | None:
    """The `--speculative-*` names in the build's server_args.py; None when the build has no such file (or it
    cannot be read), and then nothing is renamed."""
    try:
        text = (stage / SERVER_ARGS).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = {"--" + name.replace("_", "-") for name in _FIELD.findall(text)}
    return frozenset(_FLAG.findall(text)) | fields

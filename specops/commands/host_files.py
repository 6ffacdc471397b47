"""Pure builder for the one read of the files a deploy's plan is decided from: the installed unit and the env
file the current release runs with (its own, else the live one), in one request instead of a `cat` each.

Why Python and not `cat`: the deploy's command conversation runs a `python -IS -c` script of its own
interpreter in a fork of itself (no interpreter start), and the reply is one JSON document, so two files that
may hold anything (the env file's secrets) come back without any framing of their own. Read as root, compared
on the deploying machine, never shown.
"""

from __future__ import annotations

# $1 the script's name, then the unit's path, the current release's env file ('' without a current release),
# the live env file (read only when the release has none). A file that cannot be read is null, as a failed `cat`.
FILES_SCRIPT = """import json, sys
def read(path):
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None
unit, own, live = sys.argv[2:5]
env = read(own)
print(json.dumps({"unit": read(unit), "env": env if env is not None else read(live)}))
"""


def files_argv(python: str, unit_path: str, release_env: str, live_env: str) -> list[str]:
    return [python, "-IS", "-c", FILES_SCRIPT, "specops-read", unit_path, release_env, live_env]

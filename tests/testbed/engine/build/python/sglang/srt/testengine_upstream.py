"""The test engine starts only with an argv that real upstream SGLang's parser accepts (plus the DDTree fork's).

Why: the stand-in knows only the flags we taught it, so a flag specops renders wrongly could pass every e2e
test. The test bed dumps the real parser's option table when it builds real SGLang
(tests/testbed/realsglang.py: parser-table.json); this module checks the argv against it at start-up (no
real import, which would cost ~10 s per start). The DDTree fork's additions (`--speculative-ddtree-budget`,
the DDTREE algorithm) are what the stand-in simulates on top of upstream, so they are allowed.

Table: $SGLANG_TESTENGINE_UPSTREAM_TABLE (a path, or "off"), else the newest
/var/cache/specops-testbed/env-sglang-*/parser-table.json; none found means no check.
"""

from __future__ import annotations

import glob
import json
import os
import sys

FORK_FLAGS = frozenset({"--speculative-ddtree-budget"})
FORK_ALGORITHMS = frozenset({"DDTREE"})
ALIASES = frozenset({"NEXTN"})  # upstream rewrites NEXTN to EAGLE; it is no enum member
DEFAULT_GLOB = "/var/cache/specops-testbed/env-sglang-*/parser-table.json"


def upstream_table() -> dict[str, object] | None:
    chosen = os.environ.get("SGLANG_TESTENGINE_UPSTREAM_TABLE", "")
    if chosen == "off":
        return None
    candidates = [chosen] if chosen else sorted(glob.glob(DEFAULT_GLOB), key=os.path.getmtime, reverse=True)
    for path in candidates:
        try:
            with open(path, encoding="utf-8") as handle:
                loaded = json.load(handle)
        except (OSError, ValueError):
            continue
        if isinstance(loaded, dict):
            return loaded
    return None


def upstream_errors(argv: list[str], table: dict[str, object]) -> list[str]:
    """argparse-like messages for what the real parser (or `from_string`) would refuse; [] when it accepts."""
    flags = dict(table.get("flags") or {})  # type: ignore[call-overload]
    no_value = set(table.get("store_true") or [])  # type: ignore[call-overload]
    algorithms = set(table.get("algorithms") or []) | ALIASES | FORK_ALGORITHMS  # type: ignore[call-overload]
    unknown: list[str] = []
    errors: list[str] = []
    index = 0
    while index < len(argv):
        name, has_inline, inline = argv[index].partition("=")
        index += 1
        if not name.startswith("--"):
            continue
        takes_value = name not in no_value and not has_inline and index < len(argv)
        takes_value = takes_value and not argv[index].startswith("--")
        value = inline if has_inline else (argv[index] if takes_value else None)
        index += 1 if takes_value else 0
        if name in FORK_FLAGS:
            continue
        if name not in flags:
            unknown.append(name)
            continue
        choices = flags[name]
        if choices and value is not None and value not in choices:
            errors.append(f"argument {name}: invalid choice: {value!r}")
        if name == "--speculative-algorithm" and value is not None and value.upper() not in algorithms:
            errors.append(f"Unknown speculative algorithm name: {value.upper()}")
    if unknown:
        errors.insert(0, f"unrecognized arguments: {' '.join(unknown)}")
    return errors


def check_against_upstream(argv: list[str]) -> None:
    """Exit 2 like argparse when upstream SGLang would refuse this argv."""
    table = upstream_table()
    if table is None:
        return
    errors = upstream_errors(argv, table)
    if errors:
        version = table.get("version", "?")
        for error in errors:
            print(f"launch_server.py: error: {error} (real sglang {version}'s parser refuses it)", file=sys.stderr)
        raise SystemExit(2)

"""Does the build accept the unit's argv? SGLang's own parser says, else the `add_argument` calls in its source.

Why: a flag the build does not know (a DDTree fork flag on an upstream build, a renamed DFlash window flag)
makes `launch_server` exit 2 at the restart, after the old release was stopped. The parser is built exactly
as `launch_server` builds it (`ServerArgs.add_cli_args(parser)`) and fed the exact argv of the unit. This
runs inside the same subprocess that imports spec_info (sglang.py), so each build is imported once per
probe. Validation (`ServerArgs.from_cli_args`, then `resolve_once()` where the build has it) runs only when
parsing succeeded, offline, with `--device cuda` added when the argv names no device (a CPU machine would
otherwise refuse before checking anything). It may need what only a GPU host has (model files, processors):
any error other than ValueError/AssertionError is reported as "not run", never as a verdict.
"""

from __future__ import annotations

import ast
import os
from typing import Any

from specops.remote.probe.common import read_text

# Appended to the spec_info snippet (sglang.py): `argv` is the JSON list given as sys.argv[2] ("null": skip).
SERVER_ARGS_SNIPPET = r"""
argv = json.loads(sys.argv[2]) if len(sys.argv) > 2 else None
if argv is not None:
    import argparse, os
    report = {"method": "parser", "unknown_flags": [], "errors": [], "validation": None, "validation_error": None}
    try:
        from sglang.srt import server_args as sa_module
        class _SpecopsParseError(Exception):
            pass
        class _SpecopsParser(argparse.ArgumentParser):
            def error(self, message):
                raise _SpecopsParseError(message)
        parser = _SpecopsParser(prog="launch_server")
        sa_module.ServerArgs.add_cli_args(parser)
        known = sorted({o for a in parser._actions for o in a.option_strings if o.startswith("--speculative")})
        report["speculative_flags"] = known
        try:
            _ns, extra = parser.parse_known_args(argv)
            report["unknown_flags"] = [w.split("=", 1)[0] for w in extra if w.startswith("-")]
            if not extra:
                parser.parse_args(argv)
        except _SpecopsParseError as exc:
            report["errors"].append(str(exc))
        if not report["unknown_flags"] and not report["errors"]:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            full = list(argv) if "--device" in argv else list(argv) + ["--device", "cuda"]
            try:
                record = sa_module.ServerArgs.from_cli_args(parser.parse_args(full))
                resolve = getattr(record, "resolve_once", None)  # 0.5.2x: validation moved out of __post_init__
                if resolve is not None:
                    resolve()
                report["validation"] = "passed"
            except (ValueError, AssertionError) as exc:
                report["validation"] = "failed"
                report["validation_error"] = "%s: %s" % (type(exc).__name__, exc)
            except BaseException as exc:
                report["validation"] = "not run"
                report["validation_error"] = "%s: %s" % (type(exc).__name__, exc)
    except BaseException as exc:
        report = {"method": "none", "error": "%s: %s" % (type(exc).__name__, exc)}
    print("SPECOPS_SERVER_ARGS " + json.dumps(report))
"""
SOURCE_FILES = (os.path.join("sglang", "srt", "server_args.py"),)
SOURCE_DIRS = (os.path.join("sglang", "srt", "arg_groups"),)


def _source_paths(root: str) -> list[str]:
    paths = [os.path.join(root, rel) for rel in SOURCE_FILES if os.path.isfile(os.path.join(root, rel))]
    for rel in SOURCE_DIRS:
        for folder, _dirs, files in os.walk(os.path.join(root, rel)):
            paths.extend(os.path.join(folder, name) for name in sorted(files) if name.endswith(".py"))
    return paths


def _choices(call: ast.Call) -> list[Any] | None:
    for keyword in call.keywords:
        if keyword.arg == "choices" and isinstance(keyword.value, (ast.List, ast.Tuple)):
            return [e.value for e in keyword.value.elts if isinstance(e, ast.Constant)]
    return None


def _strings(nodes: list[ast.expr]) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _declared_field(node: ast.AnnAssign) -> dict[str, Any]:
    """SGLang 0.5.2x declares flags as fields: `name: A[type, Arg(aliases=[...], cli_name=..., no_cli=...)]`."""
    annotation, target = node.annotation, node.target
    if not (isinstance(annotation, ast.Subscript) and isinstance(target, ast.Name)):
        return {}
    if not (isinstance(annotation.value, ast.Name) and annotation.value.id == "A"):
        return {}
    inner: Any = annotation.slice
    if type(inner).__name__ == "Index":  # Python 3.8 wraps subscripts in ast.Index
        inner = inner.value
    parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
    arg = next((p for p in parts if isinstance(p, ast.Call) and _call_attr(p) == "Arg"), None)
    keywords = {k.arg: k.value for k in arg.keywords} if arg else {}
    no_cli = keywords.get("no_cli")
    if isinstance(no_cli, ast.Constant) and no_cli.value is True:
        return {}
    cli = keywords.get("cli_name")
    names = _strings([cli]) if cli is not None else ["--" + target.id.replace("_", "-")]
    aliases = keywords.get("aliases")
    if isinstance(aliases, (ast.List, ast.Tuple)):
        names += _strings(list(aliases.elts))
    choices = _choices(arg) if arg else None
    return {name: choices for name in names}


def _call_attr(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _flags_in(path: str) -> dict[str, Any]:
    """Option strings of every `*.add_argument("--x", ...)` call and declared field, with their `choices`."""
    try:
        tree = ast.parse(read_text(path) or "", path)
    except (SyntaxError, ValueError):
        return {}
    flags: dict[str, Any] = {}
    looped = False
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            flags.update(_declared_field(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            choices = _choices(node)
            flags.update({name: choices for name in _strings(node.args) if name.startswith("--")})
            looped |= any(not isinstance(arg, ast.Constant) for arg in node.args)
    if looped:  # `for flag in (...): parser.add_argument(flag)`: every "--x" literal in the file may be one
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("--"):
                flags.setdefault(node.value.split("=", 1)[0], None)
    return flags


def read_server_args_source(root: str, argv: list[str]) -> dict[str, Any]:
    """The fallback when the parser cannot be imported: unknown flags and bad choices, by reading the source."""
    flags: dict[str, Any] = {}
    for path in _source_paths(root):
        flags.update(_flags_in(path))
    if "--model-path" not in flags:
        return {"method": "none", "error": "no add_argument calls found in the build's server_args source"}
    report: dict[str, Any] = {"method": "source", "unknown_flags": [], "errors": [], "validation": None}
    report["speculative_flags"] = sorted(name for name in flags if name.startswith("--speculative"))
    for index, word in enumerate(argv):
        if not word.startswith("--"):
            continue
        name = word.split("=", 1)[0]
        if name not in flags:
            report["unknown_flags"].append(name)
            continue
        choices = flags[name]
        value = word.split("=", 1)[1] if "=" in word else (argv[index + 1] if index + 1 < len(argv) else None)
        if choices and value is not None and value not in choices:
            shown = ", ".join(repr(c) for c in choices)
            report["errors"].append(f"argument {name}: invalid choice: {value!r} (choose from {shown})")
    return report

"""Releases on the host, and what each sglang build's `SpeculativeAlgorithm` enum says.

Why: the enum decides which algorithms a build accepts, whether DDTREE counts as DFLASH (the patch specops
deploys) and whether a patch renumbered the `auto()` values. It is read by importing ONLY spec_info in a
subprocess with a timeout (a build's package init may be heavy or broken), with a static AST read as fallback.
The same subprocess runs the build's own argument parser on the unit's argv (server_args.py), so each build
is imported once per probe. Which predicate decides the hidden-state capture changed in SGLang 0.5.16
(`is_dflash()` before, `is_dflash_family()` since): the probe reports both and which one the build has.
"""

from __future__ import annotations

import ast
import json
import os
from typing import Any

from specops.remote.probe.common import map_in_threads, package_version, read_text, run_command
from specops.remote.probe.server_args import SERVER_ARGS_SNIPPET, read_server_args_source
from specops.remote.probe.sitepath import python_argv

# a real SGLang spec_info + server_args import: ~6 s alone, 10-11 s with three at once on a busy 2-core host
SPEC_INFO_TIMEOUT_S = 40.0
SPEC_INFO_REL = os.path.join("sglang", "srt", "speculative", "spec_info.py")
RELEASE_SGLANG_SUBDIRS = ("python", ".", "src", "site-packages")
SPEC_INFO_SNIPPET = (
    r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from sglang.srt.speculative import spec_info
cls = spec_info.SpeculativeAlgorithm
members, is_dflash, family, aliases = {}, {}, {}, {}
for name, member in cls.__members__.items():
    value = member.value
    members[name] = value if isinstance(value, (int, str)) else repr(value)
    for method, into in (("is_dflash", is_dflash), ("is_dflash_family", family)):
        try:
            into[name] = bool(getattr(member, method)())
        except Exception:
            pass
for alias in ("NEXTN",):
    try:
        aliases[alias] = cls.from_string(alias).name
    except Exception:
        pass
rule = "is_dflash_family" if hasattr(cls, "is_dflash_family") else "is_dflash"
facts = {"members": members, "is_dflash": is_dflash, "is_dflash_family": family, "aliases": aliases}
facts["capture_rule"] = rule
print("SPECOPS_SPEC_INFO " + json.dumps(facts), flush=True)
"""
    + SERVER_ARGS_SNIPPET
)


def sglang_root_in(folder: str) -> str | None:
    """The folder holding the `sglang` package inside a release (or the folder itself)."""
    for sub in RELEASE_SGLANG_SUBDIRS:
        candidate = os.path.normpath(os.path.join(folder, sub))
        if os.path.isfile(os.path.join(candidate, "sglang", "__init__.py")):
            return candidate
    return None


def _manifest(folder: str) -> dict[str, Any]:
    text = read_text(os.path.join(folder, "manifest.json"), 1000000)
    try:
        loaded = json.loads(text) if text else {}
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def gather_releases(request: dict[str, Any]) -> dict[str, Any]:
    """current (the `current` link's target) and previous (newest VERIFIED release other than current)."""
    service_dir = os.path.join(request.get("base_dir") or "/opt/specops", request.get("service") or "sglang")
    releases_dir = os.path.join(service_dir, "releases")
    current_link = os.path.join(service_dir, "current")
    current_path = os.path.realpath(current_link) if os.path.exists(current_link) else None
    facts: dict[str, Any] = {"service_dir": service_dir, "current_id": None, "current_path": current_path}
    facts.update({"previous_id": None, "previous_path": None, "ids": []})
    if current_path:
        facts["current_id"] = os.path.basename(current_path)
    try:
        ids = sorted(os.listdir(releases_dir))
    except OSError:
        return facts
    facts["ids"] = ids
    verified = []
    for release_id in ids:
        path = os.path.join(releases_dir, release_id)
        manifest = _manifest(path)
        if manifest.get("verified") is True and os.path.realpath(path) != current_path:
            verified.append((str(manifest.get("created_at", "")), release_id, path))
    if verified:
        _created, facts["previous_id"], facts["previous_path"] = max(verified)
    return facts


def spec_info_roots(request: dict[str, Any], releases: dict[str, Any], venv_root: str | None) -> list[list[str]]:
    """[label, root] pairs to inspect: the venv's sglang, current, previous, then the request's extra roots."""
    roots: list[list[str]] = []
    if venv_root:
        roots.append(["venv", venv_root])
    for label in ("current", "previous"):
        path = releases.get(label + "_path")
        if path:
            roots.append([label, sglang_root_in(path) or path])
    for label, path in sorted((request.get("sglang_roots") or {}).items()):
        roots.append([label, sglang_root_in(path) or path])
    return roots


def inspect_spec_info(
    label: str, root: str, argv: list[str] | None = None, timeout: float = SPEC_INFO_TIMEOUT_S
) -> dict[str, Any]:
    """SpecInfoFacts-shaped dict for one root: import in a subprocess, else the AST fallback.

    With `argv` (the unit's arguments after `-m sglang.launch_server`) the same subprocess runs the build's
    parser on it; `server_args` then says what it found, or what the source's add_argument calls say.
    """
    facts: dict[str, Any] = {"root": root, "label": label, "found": False, "method": "import", "error": None}
    if not os.path.isfile(os.path.join(root, SPEC_INFO_REL)):
        facts["error"] = f"no {SPEC_INFO_REL} under {root}"
        return facts
    facts["found"] = True
    facts["version"] = package_version(os.path.join(root, "sglang"))
    command = [*python_argv(SPEC_INFO_SNIPPET), root, json.dumps(argv)]
    done = run_command(command, timeout)
    found: dict[str, dict[str, Any]] = {}
    for line in done["out"].splitlines():
        tag, _space, payload = line.partition(" ")
        if tag in ("SPECOPS_SPEC_INFO", "SPECOPS_SERVER_ARGS"):
            found[tag] = json.loads(payload)
    if "SPECOPS_SPEC_INFO" in found:
        facts.update(found["SPECOPS_SPEC_INFO"])
    else:
        lines = [x for x in (done["err"] or "").strip().splitlines() if x.strip()]
        facts["error"] = lines[-1].strip() if lines else "import failed (exit {})".format(done["rc"])
        facts["method"] = "ast"
        facts.update(read_spec_info_ast(os.path.join(root, SPEC_INFO_REL)))
    if argv is not None:
        report = found.get("SPECOPS_SERVER_ARGS")
        if report is None or report.get("method") == "none":
            why = (report or {}).get("error") or facts.get("error") or "the parser did not answer"
            report = read_server_args_source(root, argv)
            report["parser_error"] = why
        facts["server_args"] = report
    return facts


def read_spec_info_ast(path: str) -> dict[str, Any]:
    """Members (auto() numbered like Enum: last int + 1, from 1), is_dflash by the names its body mentions."""
    tree = ast.parse(read_text(path) or "", path)
    aliases = _reserved_aliases(tree)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "SpeculativeAlgorithm":
            members = _enum_members(node)
            mentioned = _method_names(node, "is_dflash", set())
            family = _method_names(node, "is_dflash_family", set())
            result: dict[str, Any] = {"members": members, "aliases": aliases}
            result["is_dflash"] = {name: name in mentioned for name in members}
            result["capture_rule"] = "is_dflash_family" if _has_method(node, "is_dflash_family") else "is_dflash"
            if result["capture_rule"] == "is_dflash_family":
                result["is_dflash_family"] = {name: name in family for name in members}
            return result
    return {"members": {}, "is_dflash": {}, "aliases": aliases}


def _enum_members(node: ast.ClassDef) -> dict[str, Any]:
    members: dict[str, Any] = {}
    last = 0
    for item in node.body:
        if not (isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name)):
            continue
        name, value = item.targets[0].id, item.value
        if isinstance(value, ast.Call) and _call_name(value) == "auto":
            last += 1
            members[name] = last
        elif isinstance(value, ast.Constant) and isinstance(value.value, (int, str)):
            members[name] = value.value
            if isinstance(value.value, int) and not isinstance(value.value, bool):
                last = value.value
    return members


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _has_method(node: ast.ClassDef, method: str) -> bool:
    return any(isinstance(item, ast.FunctionDef) and item.name == method for item in node.body)


def _method_names(node: ast.ClassDef, method: str, seen: set[str]) -> set[str]:
    """Names a predicate's body mentions, following `self.is_x()` calls into sibling predicates."""
    names: set[str] = set()
    seen.add(method)
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == method:
            for sub in ast.walk(item):
                if isinstance(sub, ast.Attribute):
                    names.add(sub.attr)
                    if sub.attr.startswith("is_") and sub.attr not in seen:
                        names |= _method_names(node, sub.attr, seen)
                elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    names.add(sub.value)
    return names


def _reserved_aliases(tree: ast.Module) -> dict[str, str]:
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_RESERVED_ALIASES" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            pairs = zip(node.value.keys, node.value.values)  # noqa: B905 - zip(strict=) needs 3.10
            return {
                str(k.value): str(v.value)
                for k, v in pairs
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and isinstance(v.value, str)
            }
    return {}


def gather_sglang(request: dict[str, Any], releases: dict[str, Any], venv_root: str | None) -> list[dict[str, Any]]:
    """One SpecInfoFacts dict per root; the import subprocesses run side by side (each has its own timeout).

    The unit's argv (request["server_argv"]) is checked against every build but `previous` (a rollback
    target is judged by the unit it was installed with, not the one about to be).
    """
    roots = spec_info_roots(request, releases, venv_root)
    if not roots:
        return []
    argv = request.get("server_argv")

    def inspect(pair: list[str]) -> dict[str, Any]:
        return inspect_spec_info(pair[0], pair[1], argv if pair[0] != "previous" else None)

    return map_in_threads(inspect, roots, workers=4)

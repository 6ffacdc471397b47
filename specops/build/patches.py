"""Applying the operator's patches to the staged tree with GNU `patch`, failing loudly and early.

Strip level: like `git apply`, -p1 (`a/sglang/...`), run inside the folder that holds `sglang/`. A patch made at
the root of an sglang checkout (`a/python/sglang/...`) is detected and applied with -p2, so both common ways of
producing a patch work. `--forward` makes an already-applied patch an error instead of a silent reversal.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from specops.errors import BuildError

MAX_REJECT_LINES = 40
PATCH_TIMEOUT_S = 120


def patch_sha256(patch: Path) -> str:
    return hashlib.sha256(patch.read_bytes()).hexdigest()


_GIT_PATH_HEADERS = ("rename from ", "rename to ", "copy from ", "copy to ")


def patch_targets(text: str) -> list[str]:
    """Every path a diff names, before stripping: `--- `/`+++ ` lines, and a git diff's `diff --git a/X b/Y`,
    rename and copy headers (a mode-only change has no `---` line, yet patch chmods the file); /dev/null dropped.
    Rename/copy headers carry no `a/` prefix, so one is added to strip like the others."""
    paths = []
    for line in text.splitlines():
        if line.startswith(("--- ", "+++ ")):
            paths.append(line[4:].split("\t")[0].strip())
        elif line.startswith("diff --git "):
            paths += line[len("diff --git ") :].split(" ")[:2]
        elif line.startswith(_GIT_PATH_HEADERS):
            paths.append("a/" + line.split(" ", 2)[2].strip())
    return list(dict.fromkeys(path for path in paths if path and path != "/dev/null"))


def strip_level(stage: Path, targets: list[str]) -> int:
    """-p1 unless only -p2 (checkout root) or -p0 (plain paths) names files that exist in the stage."""
    for level in (1, 2, 0):
        if any((stage / stripped).exists() for stripped in _stripped(targets, level)):
            return level
    return 1


def _stripped(targets: list[str], level: int) -> list[str]:
    return ["/".join(path.split("/")[level:]) for path in targets if len(path.split("/")) > level]


def apply_patch(stage: Path, patch: Path) -> None:
    """Apply one patch inside the stage; BuildError (exit 2) with patch's output and the rejected hunks."""
    if not patch.is_file():
        raise BuildError(f"--patch {patch}: no such file")
    if shutil.which("patch") is None:
        raise BuildError("GNU patch is not installed on this machine", hint="apt-get install patch")
    text = patch.read_text(encoding="utf-8", errors="replace")
    if not patch_targets(text):  # GNU patch accepts an empty file as "nothing to do": a wrong file, silently
        raise BuildError(f"--patch {patch}: names no file to change (empty, or not a diff)")
    _refuse_outside(patch, patch_targets(text))
    level = strip_level(stage, patch_targets(text))
    for relpath in _stripped(patch_targets(text), level):
        _unshare(stage, stage / relpath)
    argv = ["patch", f"-p{level}", "--forward", "--batch", "--no-backup-if-mismatch", "-i", str(patch.resolve())]
    try:
        done = subprocess.run(argv, cwd=stage, capture_output=True, text=True, timeout=PATCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BuildError(f"--patch {patch}: `patch` did not finish within {PATCH_TIMEOUT_S}s") from None
    if done.returncode != 0:
        raise BuildError(_rejection_message(stage, patch, level, done.stdout + done.stderr), hint=_hint(done.stdout))


def _refuse_outside(patch: Path, targets: list[str]) -> None:
    """A diff that names an absolute path or `..` could only mean a file outside the build: refused before any
    file is touched (the unsharing below would otherwise replace that file by a copy, breaking its hard links,
    whatever `patch` then decides)."""
    for target in targets:
        if target.startswith("/") or ".." in target.split("/"):
            raise BuildError(
                f"--patch {patch}: names {target!r}, a path outside the build (absolute, or with '..'); "
                "refusing it before any file is touched",
                hint="a patch names files as a/sglang/... (git diff) or sglang/...: make it from the build's folder",
            )


def _unshare(stage: Path, path: Path) -> None:
    """Replace a hard-linked staged file by a private copy, so patching it cannot touch the source. Only a file
    really inside the stage (a staged symlink to a folder is no way out)."""
    if not path.resolve().is_relative_to(stage.resolve()):
        return
    if path.is_file() and not path.is_symlink() and path.stat().st_nlink > 1:
        private = path.with_name(path.name + ".specops-copy")
        shutil.copy2(path, private)
        os.replace(private, path)


def _rejection_message(stage: Path, patch: Path, level: int, output: str) -> str:
    lines = [f"--patch {patch} does not apply to the build (patch -p{level}, run in the folder holding sglang/):"]
    lines += [f"  | {line}" for line in output.strip().splitlines()]
    for reject in sorted(stage.rglob("*.rej")):
        lines.append(f"rejected hunks for {reject.relative_to(stage).with_suffix('')}:")
        content = reject.read_text(encoding="utf-8", errors="replace").splitlines()
        lines += [f"  | {line}" for line in content[:MAX_REJECT_LINES]]
        if len(content) > MAX_REJECT_LINES:
            lines.append(f"  | ... ({len(content) - MAX_REJECT_LINES} more lines in the reject)")
    return "\n".join(lines)


def _hint(output: str) -> str:
    if "previously applied" in output:
        return "the build already contains this change: drop the --patch, or start from an unpatched build"
    if "can't find file" in output.lower() or "No file to patch" in output:
        return "the patch names files the build does not have: is --build the folder holding sglang/?"
    return "rebase the patch on this build (the hunks above show what it expected to find)"

"""Local staging of a build: the exact tree a release will hold, patched and hashed, before any host is touched.

Why stage at all: a patch that does not apply must fail here, with the rejected hunk on screen, not halfway
through a deploy; and the tree hash that the host verifies is computed once, from these very bytes.
Why hard links: an SGLang tree is ~5,800 files; linking them into the stage costs a fraction of copying,
keeps the source's inode and mtime (so the hash cache hits on the next deploy), and a file a patch touches
is first replaced by a private copy, so the source folder is never modified.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from specops.build.hashes import HashCache, default_cache_file
from specops.build.patches import apply_patch, patch_sha256
from specops.errors import BuildError
from specops.remote.release.script import (
    MANIFEST_SCHEMA,
    NOT_HASHED,
    Refused,
    check_symlink,
    file_kind,
    host_mode,
    tree_hash,
    tree_line,
)

SKIP_DIRS = frozenset({"__pycache__", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
SKIP_SUFFIXES = (".pyc", ".pyo", ".egg-info")  # build junk; a wheel's .dist-info is kept (metadata, entry points)


def build_id(tree_hash: str, profile: str) -> str:
    """12 hex digits naming a build as it serves: its tree and the profile it runs under. The same on every host
    that gets this build with this profile, so one build is recognisable across a fleet."""
    return hashlib.sha256(f"build\0{tree_hash}\0{profile}".encode()).hexdigest()[:12]


def config_id(*texts: str) -> str:
    """6 hex digits naming a host's configuration of a release: the rendered unit's text and the env file's, its
    secrets shown as *** (an id is printed and logged everywhere: no hash of a secret's value goes into it)."""
    digest = hashlib.sha256(b"config")
    for text in texts:
        digest.update(b"\0" + text.encode())
    return digest.hexdigest()[:6]


def content_release_id(tree_hash: str, profile: str, unit_text: str, env_shown: str = "") -> str:
    """`<build12>-<cfg6>`: the build part is the same on every host (build_id), the config part tells apart a
    host's releases of one build that differ only in their configuration (a unit- or env-only change makes a new
    release, every file hard-linked from the same tree). Derived, never minted: deploying the same build with the
    same configuration twice names the same release. `env_shown` has its secrets as ***, so a change of a
    secret's value alone keeps the id: that release's env file is rewritten in place."""
    return f"{build_id(tree_hash, profile)}-{config_id(unit_text, env_shown)}"


def legacy_release_id(tree_hash: str, moment: datetime) -> str:
    """The time-based id older specops minted (`YYYYmmddTHHMMSSZ-<tree12>`): still valid on hosts, never made
    by a deploy now; tests use it to stand for such a host."""
    return f"{moment.astimezone(UTC):%Y%m%dT%H%M%SZ}-{tree_hash[:12]}"


@dataclass(frozen=True)
class StagedBuild:
    """A staged release tree: `files` is the manifest's files map, `tree_hash` what the host must reproduce."""

    root: Path
    tree_hash: str
    files: dict[str, dict[str, Any]]
    source: dict[str, str]
    patches: list[dict[str, str]]
    staged_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def total_bytes(self) -> int:
        return sum(int(entry.get("size", 0)) for entry in self.files.values())

    def release_id(self, profile: str, unit_text: str, env_shown: str = "") -> str:
        """This build's release id for a host with this profile, unit and env file (content_release_id)."""
        return content_release_id(self.tree_hash, profile, unit_text, env_shown)

    def manifest(self, release_id: str, now: datetime | None = None, **fields: Any) -> dict[str, Any]:
        """The release's manifest.json as the push writes it; `fields` adds profile, unit_sha256, deployed_by,
        unit. The deploy sets verified/verified_at/gates after its gates (update_manifest). `created_at` (now,
        to the millisecond) is what orders a host's releases: their ids do not."""
        created = (now or datetime.now(UTC)).astimezone(UTC)
        manifest: dict[str, Any] = {
            "schema": MANIFEST_SCHEMA,
            "id": release_id,
            "created_at": f"{created:%Y-%m-%dT%H:%M:%S}.{created.microsecond // 1000:03d}Z",
            "tree_hash": self.tree_hash,
            "source": dict(self.source),
            "patches": [dict(patch) for patch in self.patches],
            "profile": "",
            "unit_sha256": "",
            "deployed_by": "",
            "facts": {},
            "gates": {},
            "verified": False,
            "verified_at": None,
        }
        manifest.update(fields)
        manifest["files"] = self.files
        return manifest


def stage_build(build: Path, patches: list[Path], workdir: Path, cache_file: Path | None = None) -> StagedBuild:
    """Stage `build` (a folder holding the `sglang` package, or a wheel) with `patches` into `workdir/stage`."""
    build = build.expanduser().resolve()
    if not build.exists():
        raise BuildError(f"--build {build}: no such file or folder", hint="point --build at sglang's python/ folder")
    if build.is_file():
        source_root = _unpacked_wheel(build, workdir)
        source = {"kind": "wheel", "path": str(build)}
    else:
        source_root = _package_root(build)
        source = {"kind": "dir", "path": str(build)}
    stage = workdir / "stage"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    _link_tree(source_root, stage)
    for patch in patches:
        apply_patch(stage, patch)
        if not (stage / "sglang" / "__init__.py").is_file():  # the release would not import as a package
            raise BuildError(f"--patch {patch}: removes sglang/__init__.py; the build would no longer be sglang")
    cache = HashCache(cache_file or default_cache_file())
    files, lines = _scan(stage, cache)
    cache.save()
    patch_list = [{"name": patch.name, "sha256": patch_sha256(patch)} for patch in patches]
    return StagedBuild(stage, tree_hash(lines), files, source, patch_list)


def _package_root(build: Path) -> Path:
    """The folder holding `sglang/`: the folder itself, or its python/ (an sglang checkout's root)."""
    for candidate in (build, build / "python"):
        if (candidate / "sglang" / "__init__.py").is_file():
            return candidate
    raise BuildError(
        f"--build {build}: no `sglang` package inside (expected {build}/sglang/__init__.py)",
        hint="pass the folder that holds the sglang package (in a checkout: sglang/python), or a .whl file",
    )


def _unpacked_wheel(wheel: Path, workdir: Path) -> Path:
    """Unzip a wheel once per content (keyed by its sha256), so re-staging the same wheel hits the hash cache."""
    if wheel.suffix != ".whl":
        raise BuildError(f"--build {wheel}: a file must be a wheel (.whl)", hint="or pass a folder")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    target = workdir / "wheels" / digest[:16]
    if not target.is_dir():
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        try:
            with zipfile.ZipFile(wheel) as archive:
                for info in archive.infolist():
                    _extract_zip_member(archive, info, partial, wheel)
        except zipfile.BadZipFile as error:
            raise BuildError(f"--build {wheel}: not a valid wheel ({error})") from None
        partial.rename(target)
    return _package_root(target)


def _extract_zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, root: Path, wheel: Path) -> None:
    name = info.filename
    if name.startswith("/") or ".." in name.split("/"):
        raise BuildError(f"--build {wheel}: wheel member {name!r} has an absolute or '..' path; refusing to unpack it")
    path = root / name
    if info.is_dir():
        path.mkdir(parents=True, exist_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with archive.open(info) as source, open(path, "wb") as handle:
        shutil.copyfileobj(source, handle, 1 << 20)
    mode = (info.external_attr >> 16) & 0o777
    path.chmod(mode | 0o644 if mode else 0o644)
    mtime = datetime(*info.date_time).timestamp()
    os.utime(path, (mtime, mtime))


def _skipped(name: str, is_dir: bool) -> bool:
    return (is_dir and name in SKIP_DIRS) or name.endswith(SKIP_SUFFIXES)


def _link_tree(source: Path, stage: Path) -> None:
    """Mirror `source` into `stage` by hard links (copies across filesystems), without build junk."""
    for folder, dirs, files in os.walk(source):
        dirs[:] = sorted(name for name in dirs if not _skipped(name, True))
        relative = Path(folder).relative_to(source)
        (stage / relative).mkdir(exist_ok=True)
        for name in dirs:
            if (Path(folder) / name).is_symlink():
                _copy_symlink(source, Path(folder) / name, stage / relative / name)
        for name in sorted(files):
            if _skipped(name, False):
                continue
            path = Path(folder) / name
            if path.is_symlink():
                _copy_symlink(source, path, stage / relative / name)
            elif path.is_file():
                _link_or_copy(path, stage / relative / name)


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _copy_symlink(root: Path, link: Path, target: Path) -> None:
    """Keep a symlink only if it points inside the tree (the release must be self-contained), once resolved:
    `y -> x/x/../..` with `x -> .` leaves the tree though it reads as staying in."""
    destination = os.readlink(link)
    resolved = os.path.realpath(link.parent / destination)
    if os.path.isabs(destination) or not resolved.startswith(str(root) + os.sep):
        raise BuildError(
            f"{link}: symlink to {destination!r} points outside the build",
            hint="a release must be self-contained: replace the link by the file it points to",
        )
    os.symlink(destination, target)


def _scan(stage: Path, cache: HashCache) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The files map and the tree-hash lines of the staged tree (same rules as the host's verification). Modes
    are recorded as the host will hold them (host_mode), never as the build has them: the stage is hard-linked
    to the operator's source, so nothing here is chmod-ed."""
    files: dict[str, dict[str, Any]] = {}
    lines: list[str] = []
    for folder, dirs, names in os.walk(stage):
        dirs.sort()
        for name in [*dirs, *names]:
            path = os.path.join(folder, name)
            relpath = os.path.relpath(path, stage)
            if relpath in NOT_HASHED:
                continue
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                files[relpath] = {"link": _checked_link(stage, relpath, os.readlink(path))}
                lines.append(tree_line(relpath, "l", files[relpath]["link"]))
            elif stat.S_ISREG(info.st_mode):
                sha = cache.sha256(path, info)
                mode = host_mode(info.st_mode)  # as the host will hold it: the host normalises on receive
                files[relpath] = {"size": info.st_size, "mode": mode, "sha256": sha}
                lines.append(tree_line(relpath, file_kind(mode, MANIFEST_SCHEMA), sha))
            elif not stat.S_ISDIR(info.st_mode):
                raise BuildError(
                    f"staged build: {relpath} is not a file, folder or symlink; a release holds only those"
                )
    return files, lines


def _checked_link(stage: Path, relpath: str, target: str) -> str:
    """The host refuses a symlink that leaves the release (an unfinished release would stay behind): refuse it
    here, with the host's own rule, before any host is touched. A patch can create one (git's mode 120000)."""
    try:
        check_symlink(str(stage), relpath, target)
    except Refused as refused:
        raise BuildError(
            f"staged build: {refused} (a --patch or the build created it)",
            hint="a release must be self-contained: make the link point inside the build, or ship the file",
        ) from None
    return target

"""Nothing outside the stage: a patch, a symlink or a stale hash cache cannot reach or vouch for a file that is
not the release's own."""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tarfile
from pathlib import Path

import pytest

from specops.build.stage import stage_build
from specops.errors import BuildError
from specops.remote.release import receive
from specops.remote.release.script import (
    MANIFEST_SCHEMA,
    Refused,
    manifest_entry,
    scan_release_dir,
    tree_hash,
    tree_line,
)


def _hard_linked_file(folder: Path) -> tuple[Path, os.stat_result]:
    """A file outside the stage that shares its inode with another name (like a file in a deduplicated tree)."""
    folder.mkdir(parents=True, exist_ok=True)
    outside = folder / "outside.py"
    outside.write_text("a = 1\n")
    os.link(outside, folder / "twin.py")
    return outside, outside.stat()


@pytest.mark.parametrize("named", ["a/../outside.py", "{outside}"])
def test_a_patch_naming_a_path_outside_the_stage_is_refused_before_any_file_is_touched(
    build: Path, tmp_path: Path, named: str
) -> None:
    """`--- a/../outside.py` or an absolute path: today the file outside the stage is replaced by a copy (its
    hard link to twin.py broken) before `patch` even runs."""
    workdir = tmp_path / "work"
    outside, before = _hard_linked_file(workdir)
    path = named.format(outside=outside)
    patch = tmp_path / "escape.patch"
    patch.write_text(f"--- {path}\n+++ {path}\n@@ -1 +1 @@\n-a = 1\n+a = 2\n")
    with pytest.raises(BuildError) as caught:
        stage_build(build, [patch], workdir)
    assert caught.value.message == (
        f"--patch {patch}: names {path!r}, a path outside the build (absolute, or with '..'); "
        "refusing it before any file is touched"
    )
    after = outside.stat()
    assert (after.st_ino, after.st_nlink, outside.read_text()) == (before.st_ino, 2, "a = 1\n")


def test_a_symlink_that_escapes_only_once_resolved_is_refused_by_the_stage(build: Path, tmp_path: Path) -> None:
    """`x -> .` and `y -> x/x/../..`: lexically y stays inside sglang/, really it is the folder above the build."""
    (build / "sglang" / "x").symlink_to(".")
    (build / "sglang" / "y").symlink_to("x/x/../..")
    assert (build / "sglang" / "y").resolve() == build.parent
    with pytest.raises(BuildError) as caught:
        stage_build(build, [], tmp_path / "work")
    assert caught.value.message == f"{build}/sglang/y: symlink to 'x/x/../..' points outside the build"


def test_a_symlink_that_escapes_only_once_resolved_is_refused_by_the_host(tmp_path: Path) -> None:
    """The host's final scan of a received release (all links exist then) checks each link's real path."""
    release = tmp_path / "service" / "releases" / "r-01"
    (release / "sglang").mkdir(parents=True)
    (release / "sglang" / "__init__.py").write_text("")
    (release / "sglang" / "x").symlink_to(".")
    (release / "sglang" / "y").symlink_to("x/x/../../..")
    assert (release / "sglang" / "y").resolve() == tmp_path / "service"
    with pytest.raises(Refused, match=r"refusing symlink 'sglang/y' -> 'x/x/../../..': points outside"):
        scan_release_dir(str(release))


def test_links_that_stay_inside_the_release_are_kept(tmp_path: Path) -> None:
    release = tmp_path / "r"
    (release / "sglang" / "sub").mkdir(parents=True)
    (release / "sglang" / "x").symlink_to(".")
    (release / "sglang" / "sub" / "up").symlink_to("../x/x/sub")
    (release / "top").symlink_to("sglang/x/x")
    entries = scan_release_dir(str(release))
    assert entries["sglang/sub/up"] == ("l", "../x/x/sub") and entries["top"] == ("l", "sglang/x/x")


def _tar(manifest: dict[str, object], links: list[tuple[str, str]], files: dict[str, bytes]) -> bytes:
    """A push's stream: manifest.json first, then the members in the order given."""
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w") as archive:
        for name, data in [("manifest.json", json.dumps(manifest).encode()), *files.items()]:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
        for name, target in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            archive.addfile(info)
    return stream.getvalue()


def test_a_received_release_whose_link_escapes_once_resolved_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A push that bypassed the local checks (a hand-made stream): `y` arrives before `x`, so when it is
    written it still resolves inside; the host's final scan, every link in place, refuses the release."""
    links = [("sglang/y", "x/x/../.."), ("sglang/x", ".")]  # y: inside as written, releases/ once resolved
    files = {"sglang/__init__.py": b""}
    entries = {name: {"link": target} for name, target in links}
    entries["sglang/__init__.py"] = {"size": 0, "mode": 0o644, "sha256": hashlib.sha256(b"").hexdigest()}
    lines = [tree_line(name, *manifest_entry(entry)) for name, entry in entries.items()]
    manifest = {"schema": MANIFEST_SCHEMA, "id": "r-01", "tree_hash": tree_hash(lines), "files": entries}
    stream = io.TextIOWrapper(io.BytesIO(_tar(manifest, links, files)))
    monkeypatch.setattr(sys, "stdin", stream)
    with pytest.raises(Refused, match=r"refusing symlink 'sglang/y' -> 'x/x/../..': points outside"):
        receive.op_receive(str(tmp_path), "r-01", "", manifest["tree_hash"], extractor="python")
    assert os.listdir(tmp_path / "releases") == ["r-01"] and (tmp_path / "releases" / "r-01" / "unfinished").exists()


@pytest.mark.parametrize("extractor", ["tar", "python"])
def test_a_build_holding_a_symlink_to_a_folder_is_received_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extractor: str
) -> None:
    """A link to a folder inside the build (a package alias) is an entry of the tree like a file: the receive
    finds it where the manifest says, with either extractor, and the release verifies."""
    links = [("sglang/alias", "srt")]
    files = {"sglang/srt/__init__.py": b"x = 1\n"}
    entries: dict[str, dict[str, object]] = {name: {"link": target} for name, target in links}
    data = files["sglang/srt/__init__.py"]
    entries["sglang/srt/__init__.py"] = {"size": len(data), "mode": 0o644, "sha256": hashlib.sha256(data).hexdigest()}
    lines = [tree_line(name, *manifest_entry(entry)) for name, entry in entries.items()]
    manifest = {"schema": MANIFEST_SCHEMA, "id": "r-02", "tree_hash": tree_hash(lines), "files": entries}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_tar(manifest, links, files))))
    receive.op_receive(str(tmp_path), "r-02", "", manifest["tree_hash"], extractor=extractor)
    release = tmp_path / "releases" / "r-02"
    assert os.readlink(release / "sglang" / "alias") == "srt" and not (release / "unfinished").exists()

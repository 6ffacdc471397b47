"""A patch's unchanged files are hard-linked from the base and vouched for as they are linked (one lstat each,
no second walk that stats them again): the shortcut must keep every promise of the full check. A linked file
is taken as verified only when the verified record of its inode matches its size, its mtime and the manifest's
sha256, and it has its host mode; anything else is read back by the final scan, so a manifest that lies about
a linked file, or a base file edited since it was verified, still fails the push."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from specops.build.stage import StagedBuild, stage_build
from specops.commands import release as cmd
from specops.config.inventory import HostSpec
from specops.host.local import LocalHost
from specops.ops import release as push
from specops.remote.release.baselink import link_unchanged
from specops.remote.release.hostdata import Refused
from specops.remote.release.script import MANIFEST_SCHEMA, entries_hash, manifest_entry

SHA_A, SHA_B = "a" * 64, "b" * 64


def _base(tmp_path: Path) -> tuple[Path, Path, dict[str, object]]:
    """A base release with two files, a new release folder, and the record of the base's inodes."""
    base, root = tmp_path / "base", tmp_path / "new"
    (base / "pkg").mkdir(parents=True)
    (base / "pkg" / "a.py").write_text("a = 1\n")
    (base / "pkg" / "b.py").write_text("b = 1\n")
    (base / "pkg" / "a.py").chmod(0o644)
    (base / "pkg" / "b.py").chmod(0o644)
    root.mkdir()
    record: dict[str, object] = {}
    for name, sha in (("pkg/a.py", SHA_A), ("pkg/b.py", SHA_B)):
        info = (base / name).lstat()
        record[f"{info.st_dev}:{info.st_ino}"] = [info.st_size, info.st_mtime_ns, sha]
    return base, root, record


def _manifest(a_sha: str = SHA_A, b_sha: str = SHA_B) -> dict[str, object]:
    return {"files": {"pkg/a.py": {"mode": 0o644, "sha256": a_sha}, "pkg/b.py": {"mode": 0o644, "sha256": b_sha}}}


def test_a_linked_file_is_vouched_for_only_when_its_record_and_the_manifest_agree(tmp_path: Path) -> None:
    base, root, record = _base(tmp_path)
    linked = link_unchanged(str(root), str(base), _manifest(b_sha="c" * 64), set(), record, MANIFEST_SCHEMA)
    assert linked.counts == {"linked": 2, "copied": 0}
    assert linked.entries == {"pkg/a.py": ("0644", SHA_A)}  # b: the manifest wants other content: read it
    assert (root / "pkg" / "b.py").read_text() == "b = 1\n"  # linked all the same; the scan decides
    assert os.path.samefile(root / "pkg" / "a.py", base / "pkg" / "a.py")


def test_a_base_file_edited_or_with_another_mode_since_it_was_verified_is_not_vouched_for(tmp_path: Path) -> None:
    base, root, record = _base(tmp_path)
    info = (base / "pkg" / "a.py").lstat()
    os.utime(base / "pkg" / "a.py", ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))  # edited in place
    (base / "pkg" / "b.py").chmod(0o600)  # not its host mode: the scan gives it a private copy
    linked = link_unchanged(str(root), str(base), _manifest(), set(), record, MANIFEST_SCHEMA)
    assert linked.entries == {} and linked.records == {}
    (tmp_path / "again").mkdir()
    assert link_unchanged(str(tmp_path / "again"), str(base), _manifest(), set(), {}, MANIFEST_SCHEMA).entries == {}


def test_a_file_missing_from_the_base_fails_the_push_as_incomplete_naming_it_and_the_base(tmp_path: Path) -> None:
    base, root, record = _base(tmp_path)
    (base / "pkg" / "b.py").unlink()
    with pytest.raises(Refused, match=rf"file 'pkg/b.py' is missing from base release {base}$") as caught:
        link_unchanged(str(root), str(base), _manifest(), set(), record, MANIFEST_SCHEMA)
    assert caught.value.kind == "incomplete"


def _lying_stream(staged: StagedBuild, name: str) -> tuple[bytes, str]:
    """A patch's stream whose manifest says `name` changed but which does not send it (so the host links the
    base's file), with the tree hash that this lying manifest adds up to."""
    files = {**staged.files, name: {**staged.files[name], "sha256": "0" * 64}}
    expected = entries_hash({path: manifest_entry(entry) for path, entry in files.items()})
    data = json.dumps({**staged.manifest("r-02"), "files": files, "tree_hash": expected}).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue(), expected


def test_a_manifest_that_lies_about_a_linked_file_fails_even_with_the_base_verified(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged = stage_build(build, [], tmp_path / "work")
    push.push_release(host, spec, staged, base=None, release_id="r-01")
    name = next(name for name in sorted(staged.files) if name.startswith("sglang/srt/"))
    record = json.loads((Path(spec.service_dir) / ".verified-hashes.json").read_text())["inodes"]
    info = (Path(spec.service_dir) / "releases" / "r-01" / name).lstat()
    assert record[f"{info.st_dev}:{info.st_ino}"][2] == staged.files[name]["sha256"]  # the base IS vouched for
    stream, expected = _lying_stream(staged, name)
    result = host.run(cmd.receive_argv(spec, "r-02", "r-01", expected, "tar"), input=stream, check=False)
    reply = cmd.parse_reply(result.text)
    assert (reply["ok"], reply["kind"]) == (False, "mismatch")
    assert reply["files"] == [f"{name} (content or mode differs)"]
    assert (Path(spec.service_dir) / "releases" / "r-02" / "unfinished").exists()

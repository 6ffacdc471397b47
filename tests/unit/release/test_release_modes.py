"""Release files land with the host's modes (0644/0755, folders 0755), never the build's: no setuid, no group or
world write on a tree a root-run engine imports. The tree hash holds each file's mode as on the host."""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
from pathlib import Path

from specops.build.stage import StagedBuild, stage_build
from specops.commands import release as cmd
from specops.config.inventory import HostSpec
from specops.host.local import LocalHost
from specops.ops import release as push
from specops.ops import release_changes as changes
from specops.remote.release.script import entries_hash, scan_release_dir
from tests.testbed.engine import DDTREE_PATCH

HOSTILE = {"sglang/open_exec.py": 0o777, "sglang/open_data.py": 0o666, "sglang/setuid_tool.py": 0o4755}
EXPECTED = {"sglang/open_exec.py": 0o755, "sglang/open_data.py": 0o644, "sglang/setuid_tool.py": 0o755}


def _hostile_build(build: Path) -> None:
    for name, mode in HOSTILE.items():
        (build / name).write_text("# " + name + "\n")
        os.chmod(build / name, mode)
    os.chmod(build / "sglang" / "srt", 0o777)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _assert_host_modes(release: Path) -> None:
    for name, mode in EXPECTED.items():
        assert _mode(release / name) == mode, name
    for folder, dirs, files in os.walk(release):
        for name in dirs:
            assert _mode(Path(folder) / name) == 0o755, os.path.join(folder, name)
        for name in files:
            assert _mode(Path(folder) / name) in (0o644, 0o755), os.path.join(folder, name)
    assert _mode(release) == 0o755


def test_a_push_with_gnu_tar_lands_every_file_0644_or_0755_and_every_folder_0755(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    _hostile_build(build)
    staged = stage_build(build, [], tmp_path / "work")
    assert {name: staged.files[name]["mode"] for name in HOSTILE} == EXPECTED  # the manifest says the host's mode
    assert _mode(build / "sglang/setuid_tool.py") == 0o4755  # the operator's source is never chmod-ed
    result = push.push_release(host, spec, staged, base=None, release_id="r-01")
    assert result.tree_hash == staged.tree_hash
    _assert_host_modes(Path(spec.service_dir) / "releases" / "r-01")


def _tar_of(staged: StagedBuild, release_id: str) -> bytes:
    buffer = io.BytesIO()
    manifest = json.dumps(staged.manifest(release_id)).encode()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        info = tarfile.TarInfo("manifest.json")
        info.size, info.mode = len(manifest), 0o666
        archive.addfile(info, io.BytesIO(manifest))
        for name in sorted(staged.files):
            member = archive.gettarinfo(str(staged.root / name), arcname=name)
            with open(staged.root / name, "rb") as handle:
                archive.addfile(member, handle)
    return buffer.getvalue()


def test_the_python_reader_writes_the_host_modes_too(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    _hostile_build(build)
    staged = stage_build(build, [], tmp_path / "work")
    argv = cmd.receive_argv(spec, "r-07", None, staged.tree_hash, "python")
    reply = cmd.parse_reply(host.run(argv, input=_tar_of(staged, "r-07"), check=False).text)
    assert reply["ok"] is True, reply
    release = Path(spec.service_dir) / "releases" / "r-07"
    _assert_host_modes(release)
    assert _mode(release / "manifest.json") == 0o644


def test_a_base_file_with_an_old_mode_is_copied_not_chmod_ed_so_the_older_release_stays_as_it_was(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged = stage_build(build, [], tmp_path / "work1")
    push.push_release(host, spec, staged, base=None, release_id="r-01")
    old = Path(spec.service_dir) / "releases" / "r-01" / "sglang" / "version.py"
    os.chmod(old, 0o666)  # as a push from before modes were normalised left it
    before = old.lstat()
    patched = stage_build(build, [DDTREE_PATCH], tmp_path / "work2")
    base = push.list_releases(host, spec)[0]
    second = push.push_release(host, spec, patched, base=base, release_id="r-02")
    assert second.tree_hash == patched.tree_hash
    new = Path(spec.service_dir) / "releases" / "r-02" / "sglang" / "version.py"
    assert _mode(new) == 0o644 and new.stat().st_ino != before.st_ino
    after = old.lstat()
    assert (_mode(old), after.st_ino, after.st_mtime_ns) == (0o666, before.st_ino, before.st_mtime_ns)
    other = "sglang/__init__.py"  # a base file already in the host mode is still a hard link
    assert (new.parent.parent / other).stat().st_ino == (old.parent.parent / other).stat().st_ino


def test_a_file_left_world_writable_on_the_host_fails_the_tree_hash_under_the_new_rule(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged = stage_build(build, [], tmp_path / "work")
    push.push_release(host, spec, staged, base=None, release_id="r-01")
    release = str(Path(spec.service_dir) / "releases" / "r-01")
    assert entries_hash(scan_release_dir(release)) == staged.tree_hash
    os.chmod(os.path.join(release, "sglang", "version.py"), 0o666)
    assert entries_hash(scan_release_dir(release)) != staged.tree_hash


def test_an_older_release_keeps_its_recorded_hash_under_its_own_schema_and_is_never_reused_as_identical(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged = stage_build(build, [], tmp_path / "work")
    push.push_release(host, spec, staged, base=None, release_id="r-01")
    release = Path(spec.service_dir) / "releases" / "r-01"
    os.chmod(release / "sglang" / "version.py", 0o666)  # schema 1 pushes kept the build's modes
    old_hash = entries_hash(scan_release_dir(str(release), schema=1))  # the exec-bit-only rule of schema 1
    manifest = json.loads((release / "manifest.json").read_text())
    manifest.update(schema=1, tree_hash=old_hash)
    (release / "manifest.json").write_text(json.dumps(manifest))
    assert entries_hash(scan_release_dir(str(release), schema=1)) == old_hash  # still verifies by its rule
    listing = push.list_releases(host, spec)
    assert [(r.id, r.complete, r.tree_hash) for r in listing] == [("r-01", True, old_hash)]
    assert old_hash != staged.tree_hash and push.identical_release(staged, listing) is None  # pushed anew
    changes.switch_current(host, spec, "r-01")  # and it is still a release that can be switched to
    assert os.readlink(Path(spec.service_dir) / "current").endswith("r-01")

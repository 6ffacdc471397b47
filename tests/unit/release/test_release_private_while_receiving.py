"""A local user of the host never gets at a release before it is verified: while a build with a 0666 file, a 0777
folder and a setuid file streams in, the release folder is 0700 and nothing in it is group/world-writable or
setuid; once verified it is 0755 (the engine's run_as user reads it) and the unchanged files are still hard
links of the base release. The real host-side script runs here, paused half-way through its stream."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from specops.build.stage import StagedBuild, stage_build
from specops.commands import release as cmd
from specops.config.inventory import HostSpec
from specops.host.local import LocalHost
from specops.ops import release as push
from tests.testbed.engine import DDTREE_PATCH

HOSTILE = {"sglang/open_data.py": 0o666, "sglang/setuid_tool.py": 0o4755, "sglang/srt/open_exec.py": 0o777}
RECORD = 10240  # GNU tar reads a pipe a record at a time: the pause leaves the hostile members well behind it


def _hostile_build(build: Path) -> None:
    for name, mode in HOSTILE.items():
        (build / name).write_text("# " + name + "\n")
        os.chmod(build / name, mode)
    os.chmod(build / "sglang" / "srt", 0o777)


def _stream(staged: StagedBuild, release_id: str, names: list[str]) -> tuple[bytes, int]:
    """The push's tar with the build's own modes (manifest first, then the hostile files, then the rest), and
    the offset just after the hostile files."""
    buffer = io.BytesIO()
    manifest = json.dumps(staged.manifest(release_id)).encode()
    first = [name for name in names if name in HOSTILE]
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        info = tarfile.TarInfo("manifest.json")
        info.size, info.mode = len(manifest), 0o666
        archive.addfile(info, io.BytesIO(manifest))
        archive.addfile(archive.gettarinfo(str(staged.root / "sglang"), arcname="sglang"))  # a 0777 folder member
        hostile_end = 0
        for name in first + [name for name in names if name not in HOSTILE]:
            with open(staged.root / name, "rb") as handle:
                archive.addfile(archive.gettarinfo(str(staged.root / name), arcname=name), handle)
            hostile_end = hostile_end or (buffer.tell() if name == first[-1] else 0)
    return buffer.getvalue(), hostile_end


def _unsafe(release: Path) -> list[str]:
    """Everything a local user could write to or run as its owner, with its mode."""
    found = []
    for folder, dirs, files in os.walk(release):
        for name in dirs + files:
            mode = stat.S_IMODE((Path(folder) / name).lstat().st_mode)
            if mode & (stat.S_ISUID | stat.S_ISGID | stat.S_IWGRP | stat.S_IWOTH):
                found.append(f"{os.path.relpath(os.path.join(folder, name), release)} {mode:o}")
    return found


def _receive_paused(spec: HostSpec, staged: StagedBuild, release_id: str, base_id: str | None, extractor: str,
                    names: list[str]) -> dict[str, object]:  # fmt: skip
    """Start the receive, stop the stream once the hostile files are on disk, check, then let it finish."""
    data, hostile_end = _stream(staged, release_id, names)
    cut = hostile_end + 3 * RECORD
    assert cut < len(data) - RECORD, "the build is too small to pause after its hostile files"
    release = Path(spec.service_dir) / "releases" / release_id
    argv = cmd.receive_argv(spec, release_id, base_id, staged.tree_hash, extractor)
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None
    try:
        process.stdin.write(data[:cut])
        process.stdin.flush()
        deadline = time.monotonic() + 20
        while not all((release / name).exists() and (release / name).stat().st_size for name in HOSTILE):
            assert time.monotonic() < deadline and process.poll() is None, "the hostile files never arrived"
            time.sleep(0.02)
        assert stat.S_IMODE(release.stat().st_mode) == 0o700, "the release is open before it verified"
        assert _unsafe(release) == []
    finally:
        out, _ = process.communicate(data[cut:], timeout=60)
    return json.loads(out.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("extractor", ["tar", "python"])
def test_a_hostile_build_is_never_open_or_writable_to_local_users_while_it_streams_in(
    spec: HostSpec, build: Path, tmp_path: Path, extractor: str
) -> None:
    _hostile_build(build)
    staged = stage_build(build, [], tmp_path / "work")
    reply = _receive_paused(spec, staged, "r-01", None, extractor, sorted(staged.files))
    assert reply["ok"] is True, reply
    release = Path(spec.service_dir) / "releases" / "r-01"
    assert stat.S_IMODE(release.stat().st_mode) == 0o755  # verified: the engine's run_as user reads it
    assert _unsafe(release) == [] and not (release / "unfinished").exists()


def test_a_delta_push_is_private_until_verified_and_still_hard_links_the_base(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    push.push_release(host, spec, stage_build(build, [], tmp_path / "work1"), base=None, release_id="r-01")
    _hostile_build(build)
    (build / "sglang" / "srt" / "table.py").write_text("TABLE = " + repr(list(range(20000))) + "\n")  # room to pause
    patched = stage_build(build, [DDTREE_PATCH], tmp_path / "work2")
    releases = Path(spec.service_dir) / "releases"
    base_files = json.loads((releases / "r-01" / "manifest.json").read_text())["files"]
    sent = [name for name in cmd.files_to_send(patched.files, base_files) if name in patched.files]
    reply = _receive_paused(spec, patched, "r-02", "r-01", "tar", sent)
    assert reply["ok"] is True, reply
    assert stat.S_IMODE((releases / "r-02").stat().st_mode) == 0o755
    linked = [name for name in patched.files if name not in sent]
    assert linked and all((releases / "r-02" / n).stat().st_ino == (releases / "r-01" / n).stat().st_ino
                          for n in linked)  # fmt: skip
    assert _unsafe(releases / "r-02") == []

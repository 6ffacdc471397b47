"""The push's speed-ups keep their promises: `list` reads the small per-release summary (and the manifest when
the summary is missing or stale), the hash taken while the tar streams equals the hash of the files on disk,
and tampering is still caught by the tree hash. Real host script through LocalHost, real GNU tar."""

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
from specops.errors import ReleaseVerifyFailed
from specops.host.local import LocalHost
from specops.ops import release as push
from specops.ops import release_changes as changes
from specops.ops.push_stream import build_tar
from specops.remote.release.receive import known_sha
from specops.remote.release.script import file_sha256
from specops.remote.release.stream import TarHasher

LONG_NAME = "sglang/" + "deep_folder_name/" * 8 + "module_with_a_name_longer_than_one_hundred_bytes.py"


def _release(spec: HostSpec, release_id: str) -> Path:
    return Path(spec.service_dir) / "releases" / release_id


def _summary(spec: HostSpec, release_id: str) -> Path:
    return Path(spec.service_dir) / ".release-summaries" / f"{release_id}.json"


def _push(host: LocalHost, spec: HostSpec, build: Path, work: Path, release_id: str) -> StagedBuild:
    staged = stage_build(build, [], work)
    push.push_release(host, spec, staged, base=None, release_id=release_id, manifest_fields={"profile": "ddtree"})
    return staged


def test_list_reads_the_summary_and_falls_back_to_the_manifest_when_it_is_missing_or_stale(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    _push(host, spec, build, tmp_path / "work", "r-01")
    summary_file = _summary(spec, "r-01")
    summary = json.loads(summary_file.read_text())
    assert "files" not in summary and summary["profile"] == "ddtree" and summary_file.stat().st_size < 1000

    summary["profile"] = "from-the-summary"  # same manifest stamp: list must believe the summary
    summary_file.write_text(json.dumps(summary))
    assert push.list_releases(host, spec)[0].profile == "from-the-summary"

    summary_file.unlink()  # a release pushed by an older specops: no summary
    assert push.list_releases(host, spec)[0].profile == "ddtree"

    summary_file.write_text(json.dumps(summary))
    manifest_file = _release(spec, "r-01") / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest_file.write_text(json.dumps({**manifest, "profile": "edited", "verified": True}))  # not via specops
    [info] = push.list_releases(host, spec)
    assert (info.profile, info.verified) == ("edited", True)


def test_update_manifest_rewrites_the_summary_so_list_sees_the_verdict(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    _push(host, spec, build, tmp_path / "work", "r-01")
    changes.update_manifest(host, spec, "r-01", {"verified": True, "verified_at": "2026-01-01T00:00:00Z"})
    summary = json.loads((_summary(spec, "r-01")).read_text())
    assert (summary["verified"], summary["verified_at"]) == (True, "2026-01-01T00:00:00Z")
    [info] = push.list_releases(host, spec)
    assert info.rollback_target and info.verified_at == "2026-01-01T00:00:00Z"


def test_the_summary_lives_outside_the_release_and_goes_with_it_when_pruned(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    _push(host, spec, build, tmp_path / "w1", "r-01")
    _push(host, spec, build, tmp_path / "w2", "r-02")
    assert sorted(p.name for p in _release(spec, "r-01").iterdir()) == ["manifest.json", "sglang"]
    assert changes.prune(host, spec, keep=1, protect=set()) == ["r-01"]
    assert [p.name for p in _summary(spec, "r-01").parent.iterdir()] == ["r-02.json"]


def _odd_tree(root: Path) -> None:
    """Members that exercise the header reader: a GNU long name, empty, exactly one block, multi-MB, a symlink,
    an executable."""
    (root / LONG_NAME).parent.mkdir(parents=True)
    (root / LONG_NAME).write_text("long = True\n")
    (root / "sglang" / "empty.py").write_bytes(b"")
    (root / "sglang" / "one_block.bin").write_bytes(b"b" * 512)
    (root / "sglang" / "big.so").write_bytes(os.urandom(3 * 2**20 + 7))
    (root / "sglang" / "big.so").chmod(0o755)
    (root / "sglang" / "alias.py").symlink_to("empty.py")


@pytest.mark.parametrize("chunk", [7, 512, 4099, 1 << 16])
def test_the_hash_taken_while_streaming_equals_the_hash_of_each_file(build: Path, tmp_path: Path, chunk: int) -> None:
    _odd_tree(build)
    staged = stage_build(build, [], tmp_path / "work")
    stream = build_tar(staged.root, sorted(staged.files))
    hasher = TarHasher()
    for start in range(0, len(stream), chunk):
        hasher.feed(stream[start : start + chunk])
    regular = {name: entry for name, entry in staged.files.items() if "link" not in entry}
    assert set(hasher.found) == set(regular) and LONG_NAME in hasher.found
    for name, (size, mtime_ns, sha) in hasher.found.items():
        info = (staged.root / name).lstat()
        assert (size, sha) == (info.st_size, file_sha256(str(staged.root / name))), name
        assert mtime_ns == int(info.st_mtime) * 1_000_000_000, name


def test_a_stream_the_reader_does_not_follow_is_verified_from_disk_instead(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged = stage_build(build, [], tmp_path / "work")
    (staged.root / "manifest.json").write_text(json.dumps(staged.manifest("r-01")))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in ["manifest.json", *sorted(staged.files)]:
            archive.add(staged.root / name, arcname=name, recursive=False)
    hasher = TarHasher()
    hasher.feed(buffer.getvalue())
    assert not hasher.active and len(hasher.found) < len(staged.files)  # stopped at the first pax header
    result = host.run(cmd.receive_argv(spec, "r-01", None, staged.tree_hash, "tar"), input=buffer.getvalue())
    assert cmd.parse_reply(result.text)["tree_hash"] == staged.tree_hash
    assert not (_release(spec, "r-01") / "unfinished").exists()


def test_content_that_differs_from_the_staged_hash_in_the_stream_is_caught_and_left_unfinished(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged = stage_build(build, [], tmp_path / "work")
    victim = staged.root / "sglang" / "version.py"
    victim.unlink()  # the stage hard-links the source: replace, never edit in place
    victim.write_text("__version__ = 'tampered between staging and sending'\n")
    with pytest.raises(ReleaseVerifyFailed) as caught:
        push.push_release(host, spec, staged, base=None, release_id="r-01")
    assert "  | sglang/version.py (content or mode differs)" in caught.value.message
    assert (_release(spec, "r-01") / "unfinished").exists()
    assert not push.list_releases(host, spec)[0].complete


def test_a_streamed_hash_counts_only_for_the_file_tar_left_with_the_same_size_and_mtime(tmp_path: Path) -> None:
    path = tmp_path / "f.py"
    path.write_text("x = 1\n")
    info = path.lstat()
    streamed = {"f.py": (info.st_size, info.st_mtime_ns, "a" * 64)}
    lookup = known_sha(streamed, {}, {}, {}, {"f.py"})
    assert lookup("f.py", info) == "a" * 64
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))  # changed after tar wrote it
    assert lookup("f.py", path.lstat()) is None
    assert lookup("other.py", info) is None  # a file the stream did not carry: read it
    assert known_sha(streamed, {}, {}, {}, set())("f.py", info) is None  # not written by tar (hard-linked)


def test_a_hard_linked_file_is_vouched_for_only_by_a_record_matching_inode_size_mtime_and_manifest(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f.py"
    path.write_text("x = 1\n")
    info = path.lstat()
    key = f"{info.st_dev}:{info.st_ino}"
    files = {"f.py": {"size": info.st_size, "mode": 0o644, "sha256": "b" * 64}}
    record = {key: [info.st_size, info.st_mtime_ns, "b" * 64]}
    assert known_sha({}, {}, record, files, set())("f.py", info) == "b" * 64
    assert known_sha({}, {}, record, files, {"f.py"})("f.py", info) is None  # it came in the stream: not vouched
    other = {"f.py": {**files["f.py"], "sha256": "c" * 64}}
    assert known_sha({}, {}, record, other, set())("f.py", info) is None  # the manifest wants other content


def test_a_base_file_is_never_linked_through_a_symlink_folder_of_the_new_release(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged = _push(host, spec, build, tmp_path / "work", "r-01")
    name = next(name for name in sorted(staged.files) if name.startswith("sglang/srt/"))
    manifest = {**staged.manifest("r-02"), "files": {name: staged.files[name]}}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        data = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("sglang")
        link.type, link.linkname = tarfile.SYMTYPE, "elsewhere"
        archive.addfile(link)
    argv = cmd.receive_argv(spec, "r-02", "r-01", staged.tree_hash, "tar")
    result = host.run(argv, input=buffer.getvalue(), check=False)  # the refusal: exit 3 and a JSON reply
    reply = cmd.parse_reply(result.text)
    assert reply["ok"] is False and "refusing to write through symlink 'sglang'" in str(reply["error"])
    assert (_release(spec, "r-02") / "unfinished").exists()


@pytest.mark.parametrize("extractor", ["tar", "python"])
def test_both_extractors_verify_a_real_tree_and_leave_a_summary_for_list(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path, extractor: str
) -> None:
    _odd_tree(build)
    staged = stage_build(build, [], tmp_path / "work")
    (staged.root / "manifest.json").write_text(json.dumps(staged.manifest("r-01")))
    stream = build_tar(staged.root, cmd.files_to_send(staged.files, None))
    result = host.run(cmd.receive_argv(spec, "r-01", None, staged.tree_hash, extractor), input=stream)
    assert cmd.parse_reply(result.text)["tree_hash"] == staged.tree_hash
    [info] = push.list_releases(host, spec)
    assert info.complete and info.tree_hash == staged.tree_hash and _summary(spec, "r-01").is_file()

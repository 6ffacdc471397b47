"""The host-side release script, run for real through LocalHost against a host folder in tmp: push (full and
delta with hard links), verification, unsafe tar streams, switch, prune rules, manifest updates."""

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
from specops.errors import ReleaseError, ReleaseVerifyFailed
from specops.host.local import LocalHost
from specops.ops import release as push
from specops.ops import release_changes as changes
from tests.testbed.engine import DDTREE_PATCH

SPEC_INFO = "sglang/srt/speculative/spec_info.py"


def _releases(spec: HostSpec) -> Path:
    return Path(spec.service_dir) / "releases"


def _first_push(host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path) -> tuple[StagedBuild, push.PushResult]:
    staged = stage_build(build, [], tmp_path / "work1")
    return staged, push.push_release(host, spec, staged, base=None, release_id="r-01")


def test_full_push_then_one_line_patch_sends_one_file_and_links_the_rest(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged, first = _first_push(host, spec, build, tmp_path)
    assert (first.sent_files, first.linked_files, first.base_id) == (len(staged.files), 0, None)
    assert first.tree_hash == staged.tree_hash
    listing = push.read_listing(host, spec)
    assert [(r.id, r.complete, r.verified) for r in listing.releases] == [("r-01", True, False)]
    patched = stage_build(build, [DDTREE_PATCH], tmp_path / "work2")
    messages: list[str] = []
    second = push.push_release(
        host, spec, patched, base=listing.releases[0], release_id="r-02", progress=messages.append
    )
    assert (second.sent_files, second.linked_files, second.base_id) == (1, len(staged.files) - 1, "r-01")
    assert messages == [
        f"sending 1 changed file(s), ~{second.sent_bytes:,} bytes; hard-linking {len(staged.files) - 1} from r-01"
    ]
    old, new = _releases(spec) / "r-01", _releases(spec) / "r-02"
    assert (new / SPEC_INFO).stat().st_ino != (old / SPEC_INFO).stat().st_ino
    for name in staged.files:
        if name != SPEC_INFO:
            assert (new / name).stat().st_ino == (old / name).stat().st_ino, name
    assert not (new / "unfinished").exists()
    manifest = json.loads((new / "manifest.json").read_text())
    assert manifest["tree_hash"] == patched.tree_hash and manifest["files"] == patched.files


def test_tampered_base_file_fails_verification_and_leaves_the_release_unfinished(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    _first_push(host, spec, build, tmp_path)
    with open(_releases(spec) / "r-01" / "sglang" / "version.py", "a") as handle:
        handle.write("# edited on the host\n")
    patched = stage_build(build, [DDTREE_PATCH], tmp_path / "work2")
    base = push.list_releases(host, spec)[0]
    with pytest.raises(ReleaseVerifyFailed) as caught:
        push.push_release(host, spec, patched, base=base, release_id="r-02")
    error = caught.value
    assert error.expected == patched.tree_hash and error.actual != patched.tree_hash
    assert f"staged {patched.tree_hash}, on the host {error.actual}" in error.message
    assert "  | sglang/version.py (content or mode differs)" in error.message
    assert "left `unfinished`" in error.hint
    assert (_releases(spec) / "r-02" / "unfinished").exists()
    info = {r.id: r for r in push.list_releases(host, spec)}["r-02"]
    assert not info.complete and not info.rollback_target
    with pytest.raises(ReleaseError, match="r-02 is unfinished"):
        changes.switch_current(host, spec, "r-02")
    full = push.push_release(host, spec, patched, base=None, release_id="r-03")  # the way out: no base
    assert full.sent_files == len(patched.files)


def _receive(host: LocalHost, spec: HostSpec, members: list[tarfile.TarInfo], extractor: str) -> dict[str, object]:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for member in members:
            content = b'{"files": {}}' if member.name == "manifest.json" else b"x" * member.size
            archive.addfile(member, io.BytesIO(content) if member.isreg() else None)
    result = host.run(cmd.receive_argv(spec, "r-09", None, "0" * 64, extractor), input=buffer.getvalue(), check=False)
    return cmd.parse_reply(result.text)


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    info.size = (13 if name == "manifest.json" else 1) if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize(
    ("members", "refusal"),
    [
        ([_member("../escaped")], "'../escaped': absolute or '..' path"),
        ([_member("/abs/file")], "'/abs/file': absolute or '..' path"),
        ([_member("sglang/x", tarfile.SYMTYPE, "/etc")], "symlink 'sglang/x' -> '/etc': points outside"),
        ([_member("x", tarfile.SYMTYPE, "../../..")], "symlink 'x' -> '../../..': points outside"),
        ([_member("d", tarfile.SYMTYPE, "sub"), _member("d/f")], "refusing to write through symlink 'd'"),
        ([_member("h", tarfile.LNKTYPE, "a")], "'h': not a file, folder or symlink"),
        ([_member("f"), _member("f")], "'f': it is in the stream twice"),
    ],
)
def test_unsafe_tar_members_are_refused_before_writing_by_the_python_reader(
    host: LocalHost, spec: HostSpec, tmp_path: Path, members: list[tarfile.TarInfo], refusal: str
) -> None:
    reply = _receive(host, spec, members, "python")
    assert reply["ok"] is False and reply["kind"] == "unsafe" and refusal in str(reply["error"])
    assert not (Path(spec.service_dir) / "escaped").exists() and not Path("/abs/file").exists()
    assert (_releases(spec) / "r-09" / "unfinished").exists()


@pytest.mark.parametrize(
    ("members", "refusal"),
    [
        ([_member("manifest.json"), _member("../escaped")], "Member name contains '..'"),
        (
            [_member("manifest.json"), _member("sglang/x", tarfile.SYMTYPE, "/etc")],
            "'sglang/x' -> '/etc': points outside",
        ),
        ([_member("manifest.json"), _member("x", tarfile.SYMTYPE, "../..")], "'x' -> '../..': points outside"),
        ([_member("manifest.json"), _member("pipe", tarfile.FIFOTYPE)], "'pipe': not a file, folder or symlink"),
    ],
)
def test_unsafe_entries_are_refused_after_gnu_tar_and_before_the_release_counts(
    host: LocalHost, spec: HostSpec, members: list[tarfile.TarInfo], refusal: str
) -> None:
    reply = _receive(host, spec, members, "tar")
    assert reply["ok"] is False and reply["kind"] == "unsafe" and refusal in str(reply["error"])
    assert not (Path(spec.service_dir) / "escaped").exists()
    assert (_releases(spec) / "r-09" / "unfinished").exists()


def test_switch_is_a_rename_of_a_symlink_and_reports_the_previous_release(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged, _ = _first_push(host, spec, build, tmp_path)
    push.push_release(host, spec, staged, base=push.list_releases(host, spec)[0], release_id="r-02")
    assert changes.switch_current(host, spec, "r-01") is None
    assert changes.switch_current(host, spec, "r-02") == "r-01"
    link = Path(spec.current_dir)
    assert link.is_symlink() and os.readlink(link) == str(_releases(spec) / "r-02")
    assert push.read_current(host, spec) == "r-02"
    assert [p.name for p in link.parent.iterdir() if "tmp" in p.name] == []
    with pytest.raises(ReleaseError, match="release r-07 does not exist"):
        changes.switch_current(host, spec, "r-07")
    link.unlink()
    link.mkdir()
    with pytest.raises(ReleaseError, match="exists and is not a symlink") as caught:
        changes.switch_current(host, spec, "r-01")
    assert "symlink to releases/<id>" in caught.value.hint


def _fake_release(spec: HostSpec, release_id: str, verified: bool, unfinished: bool = False) -> None:
    folder = _releases(spec) / release_id
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"id": release_id, "verified": verified}))
    if unfinished:
        (folder / "unfinished").touch()


def test_prune_keeps_newest_current_newest_verified_protected_and_a_newer_unfinished(
    host: LocalHost, spec: HostSpec
) -> None:
    layout = {"r-01": (True, False), "r-02": (False, False), "r-03": (True, False), "r-04": (True, True),
              "r-05": (False, False), "r-06": (False, False), "r-07": (False, False), "r-08": (False, True)}  # fmt: skip
    for release_id, (verified, unfinished) in layout.items():
        _fake_release(spec, release_id, verified, unfinished)
    changes.switch_current(host, spec, "r-05")
    assert changes.prune(host, spec, keep=2, protect={"r-01"}) == ["r-02", "r-04"]
    assert sorted(p.name for p in _releases(spec).iterdir()) == ["r-01", "r-03", "r-05", "r-06", "r-07", "r-08"]
    assert changes.prune(host, spec, keep=1, protect=set()) == ["r-01", "r-06"]


def test_update_manifest_merges_atomically_and_guards_the_content_keys(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    _first_push(host, spec, build, tmp_path)
    info = changes.update_manifest(host, spec, "r-01", {"verified": True, "verified_at": "2026-01-01T00:00:00Z",
                                                      "gates": {"smoke": {"figures": {"tokens_per_s": 41.0}}}})  # fmt: skip
    assert info.rollback_target and info.gates.figures == {"tokens_per_s": 41.0}
    manifest = json.loads((_releases(spec) / "r-01" / "manifest.json").read_text())
    assert manifest["verified_at"] == "2026-01-01T00:00:00Z" and len(manifest["files"]) > 10
    with pytest.raises(ReleaseError, match="without schema, id, tree_hash, files, created_at"):
        changes.update_manifest(host, spec, "r-01", {"files": {}})


def test_identical_tree_is_found_and_the_base_files_come_from_the_local_cache_or_the_manifest(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path, private_cache: Path
) -> None:
    staged, _ = _first_push(host, spec, build, tmp_path)
    changes.switch_current(host, spec, "r-01")
    releases = push.list_releases(host, spec)
    found = push.identical_release(staged, releases)
    assert found is not None and found.id == "r-01" and found.is_current
    assert push.identical_release(stage_build(build, [DDTREE_PATCH], tmp_path / "w2"), releases) is None
    (_releases(spec) / "r-01" / "manifest.json").write_text("{broken")
    cached = push.push_release(host, spec, staged, base=releases[0], release_id="r-02")
    assert (cached.base_id, cached.sent_files, cached.linked_files) == ("r-01", 0, len(staged.files))
    for tree in (private_cache / "specops" / "trees").iterdir():
        tree.unlink()
    said: list[str] = []
    again = push.push_release(host, spec, staged, base=releases[0], release_id="r-03", progress=said.append)
    assert again.base_id is None and again.sent_files == len(staged.files)
    assert said[0] == "cannot read the manifest of base release r-01: sending the whole tree"


def test_a_host_python_that_does_not_run_is_a_release_error_naming_the_setting(host: LocalHost, tmp_path: Path) -> None:
    spec = HostSpec(name="h1", ssh="h1", python="/nonexistent/bin/python", model_path="/m", base_dir=str(tmp_path))
    with pytest.raises(ReleaseError, match=r"the release script \(list\) exited with 127") as caught:
        push.list_releases(host, spec)
    assert "hosts.h1.python" in caught.value.hint

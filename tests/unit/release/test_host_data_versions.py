"""Versioned host data on the release side: the manifest, the release summaries and the verified-hashes record,
read by the real host-side script through LocalHost. A newer file is refused with the one message that says to
upgrade (exit 5); an older one, or one without a version (written before versions existed), is read."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from specops.build.stage import stage_build
from specops.commands import release as cmd
from specops.config.inventory import HostSpec
from specops.errors import ExitCode, HostDataTooNew
from specops.host.local import LocalHost
from specops.ops import release as push
from specops.ops import release_changes as changes
from specops.remote.release.hostdata import HASHES_SCHEMA, MANIFEST_SCHEMA, PLAIN_SUMMARY_SCHEMA, SUMMARY_SCHEMA
from tests.testbed.engine import DDTREE_PATCH


def _release(spec: HostSpec, release_id: str) -> Path:
    return Path(spec.service_dir) / "releases" / release_id


def _summary(spec: HostSpec, release_id: str) -> Path:
    return Path(spec.service_dir) / ".release-summaries" / f"{release_id}.json"


def _hashes(spec: HostSpec) -> Path:
    return Path(spec.service_dir) / ".verified-hashes.json"


def _rewrite(path: Path, change: dict[str, Any], drop: str = "") -> None:
    data = json.loads(path.read_text())
    data.update(change)
    data.pop(drop, None)
    path.write_text(json.dumps(data))


@pytest.fixture
def pushed(host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path) -> str:
    push.push_release(host, spec, stage_build(build, [], tmp_path / "w1"), base=None, release_id="r-01")
    return "r-01"


def _too_new(error: HostDataTooNew, path: Path, found: int, newest: int) -> None:
    assert error.message == (
        f"local: {path}: this host was deployed by a newer specops (schema {found}, this specops reads up to "
        f"{newest}): upgrade specops"
    )
    assert error.exit_code == ExitCode.REMOTE_FAILED == 5
    assert "upgrade specops" in error.hint


def test_every_file_a_push_writes_carries_its_version(host: LocalHost, spec: HostSpec, pushed: str) -> None:
    assert json.loads((_release(spec, pushed) / "manifest.json").read_text())["schema"] == MANIFEST_SCHEMA
    assert json.loads(_summary(spec, pushed).read_text())["schema"] == PLAIN_SUMMARY_SCHEMA  # no bad mark: as before
    assert json.loads(_hashes(spec).read_text())["schema"] == HASHES_SCHEMA


def test_a_newer_manifest_is_refused_by_every_operation_that_reads_it(
    host: LocalHost, spec: HostSpec, pushed: str
) -> None:
    manifest = _release(spec, pushed) / "manifest.json"
    _rewrite(manifest, {"schema": MANIFEST_SCHEMA + 2, "verified": True})
    for operation in (
        lambda: push.read_listing(host, spec),
        lambda: changes.update_manifest(host, spec, pushed, {"verified": False}),
        lambda: changes.rollback_release(host, spec, pushed, "test"),
        lambda: push.base_files(host, spec, cmd.ReleaseInfo(id=pushed, complete=True)),
    ):
        with pytest.raises(HostDataTooNew) as caught:
            operation()
        _too_new(caught.value, manifest, MANIFEST_SCHEMA + 2, MANIFEST_SCHEMA)
    assert json.loads(manifest.read_text())["verified"] is True  # the update was refused before writing


def test_a_manifest_without_a_version_is_read_as_before(host: LocalHost, spec: HostSpec, pushed: str) -> None:
    _rewrite(_release(spec, pushed) / "manifest.json", {"profile": "ddtree"}, drop="schema")
    [release] = push.list_releases(host, spec)
    assert (release.id, release.complete, release.profile, release.error) == (pushed, True, "ddtree", None)
    updated = changes.update_manifest(host, spec, pushed, {"verified": True})
    assert updated.verified and updated.profile == "ddtree"


def test_a_newer_summary_is_refused_and_one_without_a_version_is_read(
    host: LocalHost, spec: HostSpec, pushed: str
) -> None:
    summary = _summary(spec, pushed)
    _rewrite(summary, {"profile": "from-the-summary"}, drop="schema")  # the manifest is unchanged: still valid
    assert push.list_releases(host, spec)[0].profile == "from-the-summary"
    _rewrite(summary, {"schema": SUMMARY_SCHEMA + 1})
    with pytest.raises(HostDataTooNew) as caught:
        push.list_releases(host, spec)
    _too_new(caught.value, summary, SUMMARY_SCHEMA + 1, SUMMARY_SCHEMA)


def test_the_verified_hashes_record_without_a_version_is_migrated(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path, pushed: str
) -> None:
    """The record written before versions was the bare inode map: a delta push still trusts it (proved by a
    base file edited in place with its size and mtime kept, which only a re-read would notice) and rewrites it
    in the current layout."""
    record = json.loads(_hashes(spec).read_text())
    _hashes(spec).write_text(json.dumps(record["inodes"]))
    _edit_in_place_keeping_size_and_mtime(_release(spec, pushed) / "sglang" / "__init__.py")
    [base] = push.list_releases(host, spec)
    patched = stage_build(build, [DDTREE_PATCH], tmp_path / "w2")
    result = push.push_release(host, spec, patched, base=base, release_id="r-02")
    assert result.tree_hash == patched.tree_hash  # vouched for by the migrated record, not read again
    assert json.loads(_hashes(spec).read_text())["schema"] == HASHES_SCHEMA


def test_a_newer_verified_hashes_record_is_refused_and_the_release_stays_unfinished(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path, pushed: str
) -> None:
    _rewrite(_hashes(spec), {"schema": HASHES_SCHEMA + 1})
    [base] = push.list_releases(host, spec)
    patched = stage_build(build, [DDTREE_PATCH], tmp_path / "w2")
    with pytest.raises(HostDataTooNew) as caught:
        push.push_release(host, spec, patched, base=base, release_id="r-02")
    _too_new(caught.value, _hashes(spec), HASHES_SCHEMA + 1, HASHES_SCHEMA)
    assert (_release(spec, "r-02") / "unfinished").exists()


def _edit_in_place_keeping_size_and_mtime(path: Path) -> None:
    before = path.stat()
    data = path.read_bytes()
    path.write_bytes(data[:-1] + (b"#" if data[-1:] != b"#" else b" "))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize(
    "op_args",
    [
        ["switch", "../../etc"],
        ["update-manifest", "a/b"],
        ["prune", "1", "r-01,../x"],
        ["rollback", "sglang.service", ".hidden", "why"],
        ["receive", "r-09", "../r-01", "0" * 64, "python"],
    ],
)
def test_every_operation_re_checks_its_release_ids_on_the_host(
    host: LocalHost, spec: HostSpec, pushed: str, op_args: list[str]
) -> None:
    argv = cmd.script_argv(spec, op_args[0], *op_args[1:])  # past the client's own check, as a bug would be
    result = host.run(argv, input=b"{}", check=False)
    reply = cmd.parse_reply(result.text)
    assert result.exit_code == 3 and reply["kind"] == "request"
    assert str(reply["error"]).startswith("not a release id: ")
    assert [path.name for path in (Path(spec.service_dir) / "releases").iterdir()] == [pushed]


def test_the_listing_shows_only_folders_named_like_releases(host: LocalHost, spec: HostSpec, pushed: str) -> None:
    for stray in ("a b", ".trash-r-00", "-rf"):
        (Path(spec.service_dir) / "releases" / stray).mkdir()
    assert [release.id for release in push.list_releases(host, spec)] == [pushed]

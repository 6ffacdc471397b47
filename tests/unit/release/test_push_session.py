"""The push conversation (one exec: listing, files, receive), run for real through LocalHost: what the deploy
relies on to push with one login shell, and what a malformed or refused conversation does."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from specops.build.stage import stage_build
from specops.commands import release as cmd
from specops.config.inventory import HostSpec
from specops.errors import ReleaseError
from specops.host.local import LocalHost
from specops.ops import release as push
from specops.ops.push_stream import build_tar, expected_tar_bytes, send_tar
from tests.testbed.engine import DDTREE_PATCH


def test_one_conversation_lists_then_pushes_and_reports_every_byte(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged = stage_build(build, [], tmp_path / "w1")
    progress: list[tuple[int, int]] = []
    with push.open_push(host, spec, max_bytes=staged.total_bytes) as session:
        assert session.listing.releases == [] and session.listing.current is None
        result = session.push(staged, base=None, release_id="r-01", on_bytes=lambda *sent: progress.append(sent))
    assert result.sent_bytes == progress[-1][0] == progress[-1][1]  # the bar ends full, at the bytes really sent
    assert [sent for sent, _ in progress] == sorted(sent for sent, _ in progress)
    assert progress[0][1] == result.sent_bytes  # the total was right from the start
    assert not (staged.root / "manifest.json").exists()  # per host, in memory: never in the shared stage
    with push.open_push(host, spec) as session:
        [release] = session.listing.releases
    assert (release.id, release.complete, release.tree_hash) == ("r-01", True, staged.tree_hash)


def test_without_a_cached_tree_the_base_files_come_through_the_same_conversation(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path, private_cache: Path
) -> None:
    push.push_release(host, spec, stage_build(build, [], tmp_path / "w1"), base=None, release_id="r-01")
    shutil.rmtree(private_cache / "specops" / "trees")
    patched = stage_build(build, [DDTREE_PATCH], tmp_path / "w2")
    with push.open_push(host, spec) as session:
        [base] = session.listing.releases
        result = session.push(patched, base=base, release_id="r-02")
    assert (result.base_id, result.sent_files, result.linked_files) == ("r-01", 1, len(patched.files) - 1)


def test_ending_the_conversation_without_a_push_changes_nothing(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    push.push_release(host, spec, stage_build(build, [], tmp_path / "w1"), base=None, release_id="r-01")
    before = sorted(str(path) for path in Path(spec.service_dir).rglob("*"))
    with push.open_push(host, spec) as session:
        assert [r.id for r in session.listing.releases] == ["r-01"]
    assert sorted(str(path) for path in Path(spec.service_dir).rglob("*")) == before


def test_a_refused_receive_is_a_release_error_and_the_existing_release_is_untouched(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged = stage_build(build, [], tmp_path / "w1")
    push.push_release(host, spec, staged, base=None, release_id="r-01")
    manifest = (Path(spec.service_dir) / "releases" / "r-01" / "manifest.json").read_bytes()
    with pytest.raises(ReleaseError, match="release r-01 already exists on the host") as caught:
        push.push_release(host, spec, staged, base=None, release_id="r-01")
    assert "wait a second and push again" in caught.value.hint
    assert (Path(spec.service_dir) / "releases" / "r-01" / "manifest.json").read_bytes() == manifest


@pytest.mark.parametrize(
    ("request_line", "error"),
    [
        ({"op": "receive", "args": ["r-02", "../../etc", "x" * 64, "auto"]}, "not a release id: '../../etc'"),
        ({"op": "files", "id": "/etc"}, "not a release id: '/etc'"),
        ({"op": "receive", "args": ["r-02"]}, "receive needs [id, base_id, tree_hash, extractor]"),
        ({"op": "rm -rf"}, "unknown request 'rm -rf'"),
    ],
)
def test_the_host_refuses_a_malformed_request_before_touching_anything(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path, request_line: dict[str, object], error: str
) -> None:
    staged = stage_build(build, [], tmp_path / "w1")
    with host.stream(cmd.session_argv(spec), timeout=30) as command:
        assert json.loads(command.read_line())["ok"] is True
        command.write(json.dumps(request_line).encode() + b"\n" + build_tar(staged.root, sorted(staged.files)))
        reply = json.loads(command.read_line())
        assert command.wait(check=False).exit_code == 3
    assert reply == {"ok": False, "kind": "request", "error": error}
    assert not (Path(spec.service_dir) / "releases").exists()


def test_the_expected_tar_size_is_exact_for_long_names_links_and_empty_files(tmp_path: Path) -> None:
    tree = tmp_path / "python"
    deep = tree / "sglang" / ("folder_" * 12) / ("sub_" * 20)
    deep.mkdir(parents=True)
    (deep / ("long_module_name_" * 5 + ".py")).write_text("x = 1\n" * 1000)
    (tree / "sglang" / "__init__.py").write_text("")
    (tree / "sglang" / "short_link.py").symlink_to("__init__.py")
    (tree / "sglang" / "long_link.py").symlink_to(
        str((deep / ("long_module_name_" * 5 + ".py")).relative_to(tree / "sglang"))
    )
    staged = stage_build(tree, [], tmp_path / "work")
    names = sorted(staged.files)
    assert expected_tar_bytes(staged.files, names) == len(build_tar(staged.root, names))


def test_hosts_pushing_the_same_stage_at_once_each_get_their_own_manifest(
    host: LocalHost, build: Path, tmp_path: Path
) -> None:
    """A fleet deploy pushes one stage to several hosts in parallel; each manifest names its host's release and
    unit (it used to be written into the shared stage, where the last writer won)."""
    staged = stage_build(build, [], tmp_path / "w1")
    specs = [
        HostSpec(name=name, ssh=name, python=sys.executable, model_path="/m", base_dir=str(tmp_path / name))
        for name in ("one", "two")
    ]
    sessions = [push.open_push(host, spec) for spec in specs]
    opened = [session.__enter__() for session in sessions]
    for index, session in enumerate(opened):
        session.prepare(staged, release_id=f"r-{index}", manifest_fields={"unit": f"unit of host {index}"})
    for session in opened:
        session.push(staged, base=None)
    for session in sessions:
        session.__exit__(None, None, None)
    for index, spec in enumerate(specs):
        manifest = json.loads((Path(spec.service_dir) / "releases" / f"r-{index}" / "manifest.json").read_text())
        assert (manifest["id"], manifest["unit"]) == (f"r-{index}", f"unit of host {index}")


def test_a_local_tar_failure_mid_push_is_an_error_and_the_release_stays_unfinished(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    staged = stage_build(build, [], tmp_path / "w1")
    (staged.root / "sglang" / "launch_server.py").unlink()  # vanished between staging and sending
    with pytest.raises(ReleaseError, match=r"launch_server\.py: Cannot stat") as caught:
        push.push_release(host, spec, staged, base=None, release_id="r-01")
    # the host finished its side (it was not killed mid-receive) and said why it refused
    assert "the host then refused the push: local: file 'sglang/launch_server.py' was neither sent" in str(caught.value)
    [release] = push.list_releases(host, spec)
    assert (release.id, release.complete) == ("r-01", False)  # never switched to, never a rollback target


@pytest.mark.parametrize("leftover", ["unfinished", "neither marker nor manifest"])
def test_a_push_replaces_the_unfinished_release_of_the_same_id_that_a_killed_push_left(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path, leftover: str
) -> None:
    """Same build, same second: a deploy killed mid-push and the next one ask for the same release id."""
    root = Path(spec.service_dir) / "releases" / "r-01"
    root.mkdir(parents=True)
    (root / "half-written.bin").write_bytes(b"x" * 100)
    if leftover == "unfinished":
        (root / "unfinished").touch()
    said: list[str] = []
    result = push.push_release(
        host, spec, stage_build(build, [], tmp_path / "w1"), base=None, release_id="r-01", progress=said.append
    )
    assert result.release_id == "r-01"
    assert not (root / "half-written.bin").exists() and not (root / "unfinished").exists()
    assert "replaced the unfinished release r-01 that a stopped push had left" in said
    assert [r.id for r in push.list_releases(host, spec) if r.complete] == ["r-01"]
    assert not [name for name in os.listdir(root.parent) if name.startswith(".trash")]


def test_a_symlink_named_like_the_release_is_never_followed_or_replaced(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "unfinished").touch()
    (Path(spec.service_dir) / "releases").mkdir(parents=True)
    (Path(spec.service_dir) / "releases" / "r-01").symlink_to(elsewhere)
    with pytest.raises(ReleaseError, match="release r-01 already exists on the host"):
        push.push_release(host, spec, stage_build(build, [], tmp_path / "w1"), base=None, release_id="r-01")
    assert sorted(os.listdir(elsewhere)) == ["unfinished"]


def test_a_session_started_before_the_lock_lists_only_when_asked(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    push.push_release(host, spec, stage_build(build, [], tmp_path / "w1"), base=None, release_id="r-01")
    with host.stream(cmd.session_argv(spec, on_request=True), timeout=30) as command:
        command.write(b'{"op": "end"}\n')  # the lock was not taken: the session ends without a word
        ended = command.wait()
    assert json.loads(ended.stdout) == {"ok": True, "ended": True}
    with push.open_push(host, spec, on_request=True) as session:
        assert [r.id for r in session.listing.releases] == ["r-01"]


def test_a_push_over_an_older_base_diffs_against_that_base_not_the_tree_pushed_last(
    host: LocalHost, spec: HostSpec, build: Path, tmp_path: Path
) -> None:
    """The session diffs against the tree pushed last while the host starts (base_guess.py); a fleet host whose
    base is another release still gets exactly the files that differ from its own base."""
    push.push_release(host, spec, stage_build(build, [], tmp_path / "w1"), base=None, release_id="r-01")
    other = tmp_path / "other" / "python"
    shutil.copytree(build, other)
    edited = sorted(path for path in other.rglob("*.py") if path.stat().st_size)[:3]
    for path in edited:
        path.write_text(path.read_text() + "\n# edited\n")
    push.push_release(host, spec, stage_build(other, [], tmp_path / "w2"), base=None, release_id="r-02")
    patched = stage_build(build, [DDTREE_PATCH], tmp_path / "w3")
    with push.open_push(host, spec) as session:
        session.prepare(patched, release_id="r-03")  # guesses r-02's tree, pushed last
        base = next(release for release in session.listing.releases if release.id == "r-01")
        result = session.push(patched, base=base)
    assert (result.base_id, result.sent_files, result.linked_files) == ("r-01", 1, len(patched.files) - 1)


def test_a_small_push_written_by_python_has_the_size_the_progress_bar_expects(tmp_path: Path) -> None:
    """A patch's few files go through Python's tarfile (GNU tar costs more to start): same stream size."""
    tree = tmp_path / "python"
    deep = tree / "sglang" / ("folder_" * 12)
    deep.mkdir(parents=True)
    (deep / ("long_module_name_" * 7 + ".py")).write_text("x = 1\n" * 100)
    (tree / "sglang" / "__init__.py").write_text("")
    (tree / "sglang" / "link.py").symlink_to("__init__.py")
    staged = stage_build(tree, [], tmp_path / "work")
    names = sorted(staged.files)
    expected = expected_tar_bytes(staged.files, names)
    written: list[bytes] = []
    assert send_tar(staged.root, names, lambda chunk: written.append(chunk) or True, expected=expected) == expected
    assert len(b"".join(written)) == expected == len(build_tar(staged.root, names))  # build_tar: GNU tar

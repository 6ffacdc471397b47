"""Staging a build: folder or wheel, patches applied (or rejected with the hunk shown), tree hash, hash cache."""

from __future__ import annotations

import os
import time
import zipfile
from pathlib import Path

import pytest

from specops.build.hashes import HashCache
from specops.build.stage import stage_build
from specops.errors import BuildError, ExitCode
from tests.testbed.engine import DDTREE_PATCH, RENUMBER_PATCH

SPEC_INFO = "sglang/srt/speculative/spec_info.py"
FIXED_LINE = "return self in (SpeculativeAlgorithm.DFLASH, SpeculativeAlgorithm.DDTREE)"


def test_folder_is_staged_without_build_junk(build: Path, tmp_path: Path) -> None:
    (build / "sglang" / "__pycache__").mkdir()
    (build / "sglang" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"junk")
    (build / "sglang.egg-info").mkdir()
    (build / "sglang.egg-info" / "PKG-INFO").write_text("junk")
    staged = stage_build(build, [], tmp_path / "work")
    assert staged.root == tmp_path / "work" / "stage"
    assert SPEC_INFO in staged.files and "sglang/__init__.py" in staged.files
    assert not [name for name in staged.files if "__pycache__" in name or "egg-info" in name]
    assert staged.source == {"kind": "dir", "path": str(build)}
    entry = staged.files[SPEC_INFO]
    assert entry["size"] == (build / SPEC_INFO).stat().st_size and entry["mode"] == 0o644 and len(entry["sha256"]) == 64


def test_checkout_root_is_accepted_and_a_folder_without_sglang_is_not(build: Path, tmp_path: Path) -> None:
    from_root = stage_build(build.parent, [], tmp_path / "a")
    assert from_root.tree_hash == stage_build(build, [], tmp_path / "b").tree_hash
    with pytest.raises(BuildError) as caught:
        stage_build(tmp_path / "a", [], tmp_path / "c")  # exists (a workdir), holds no sglang package
    assert "no `sglang` package inside" in caught.value.message and "sglang/python" in caught.value.hint
    assert caught.value.exit_code == ExitCode.USAGE


def test_patch_applies_in_the_stage_and_never_touches_the_source(build: Path, tmp_path: Path) -> None:
    before = (build / SPEC_INFO).read_bytes()
    staged = stage_build(build, [DDTREE_PATCH, RENUMBER_PATCH], tmp_path / "work")
    assert FIXED_LINE in (staged.root / SPEC_INFO).read_text()
    assert "DSPARK = auto()" in (staged.root / SPEC_INFO).read_text()
    assert (build / SPEC_INFO).read_bytes() == before
    assert (staged.root / SPEC_INFO).stat().st_ino != (build / SPEC_INFO).stat().st_ino
    assert [p["name"] for p in staged.patches] == ["ddtree.patch", "renumber.patch"]
    assert not list(staged.root.rglob("*.orig")) and not list(staged.root.rglob("*.rej"))


def test_patch_made_at_the_checkout_root_is_applied_with_p2(build: Path, tmp_path: Path) -> None:
    text = DDTREE_PATCH.read_text().replace("a/sglang/", "a/python/sglang/").replace("b/sglang/", "b/python/sglang/")
    (tmp_path / "root.patch").write_text(text)
    staged = stage_build(build, [tmp_path / "root.patch"], tmp_path / "work")
    assert FIXED_LINE in (staged.root / SPEC_INFO).read_text()


def test_patch_that_does_not_apply_shows_the_rejected_hunk(build: Path, tmp_path: Path) -> None:
    source = (build / SPEC_INFO).read_text()
    (build / SPEC_INFO).write_text(source.replace("return self == SpeculativeAlgorithm.DFLASH", "return False"))
    with pytest.raises(BuildError) as caught:
        stage_build(build, [DDTREE_PATCH], tmp_path / "work")
    message = caught.value.message
    assert "ddtree.patch does not apply to the build (patch -p1" in message
    assert "Hunk #1 FAILED" in message
    assert f"rejected hunks for {SPEC_INFO}:" in message
    assert "  | -        return self == SpeculativeAlgorithm.DFLASH" in message
    assert "rebase the patch" in caught.value.hint


def test_already_applied_patch_is_an_error_not_a_reversal(build: Path, tmp_path: Path) -> None:
    patched = stage_build(build, [DDTREE_PATCH], tmp_path / "once")
    with pytest.raises(BuildError) as caught:
        stage_build(patched.root, [DDTREE_PATCH], tmp_path / "twice")
    assert "previously applied" in caught.value.message
    assert "already contains this change" in caught.value.hint


def test_tree_hash_is_stable_and_follows_content_and_executable_bit(build: Path, tmp_path: Path) -> None:
    first = stage_build(build, [], tmp_path / "w").tree_hash
    assert stage_build(build, [], tmp_path / "w").tree_hash == first
    os.utime(build / SPEC_INFO, (1, 1))  # mtime is not content
    assert stage_build(build, [], tmp_path / "w").tree_hash == first
    (build / SPEC_INFO).chmod(0o755)
    executable = stage_build(build, [], tmp_path / "w").tree_hash
    assert executable != first
    (build / SPEC_INFO).chmod(0o644)
    with open(build / SPEC_INFO, "a") as handle:
        handle.write("# one more line\n")
    assert stage_build(build, [], tmp_path / "w").tree_hash not in (first, executable)


def test_restaging_an_unchanged_tree_reads_nothing(build: Path, tmp_path: Path, private_cache: Path) -> None:
    for path in build.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000))  # older than the racy window: cacheable
    stage_build(build, [], tmp_path / "w")
    cache = HashCache(private_cache / "specops" / "hashes.json")
    files = [p for p in (tmp_path / "w" / "stage").rglob("*") if p.is_file() and p.name != "manifest.json"]
    for path in files:
        cache.sha256(str(path), path.stat())
    assert (cache.hits, cache.misses) == (len(files), 0)


@pytest.mark.parametrize("content", ["a = 22\n", "a = 2\n"])
def test_hash_cache_misses_a_rewrite_even_in_place_with_the_same_size_and_mtime(tmp_path: Path, content: str) -> None:
    """`cp -p` or `rsync --inplace -t` over a build file keeps its inode, size and mtime, only ctime moves: the
    cache must not hand back the old content's sha (the host would link the OLD file, and the tree hash verify)."""
    path = tmp_path / "f.py"
    path.write_text("a = 1\n")
    os.utime(path, (1_000_000, 1_000_000))
    cache = HashCache(tmp_path / "cache.json")
    first = cache.sha256(str(path), path.stat())
    cache.save()
    time.sleep(0.05)  # past the kernel's coarse timestamp tick, as any real later rewrite is
    path.write_text(content)  # the same inode
    os.utime(path, (1_000_000, 1_000_000))
    again = HashCache(tmp_path / "cache.json")
    assert again.sha256(str(path), path.stat()) != first and again.misses == 1


def test_wheel_is_unpacked_and_staged(build: Path, tmp_path: Path) -> None:
    wheel = tmp_path / "sglang-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(build.rglob("*")):
            if path.is_file():
                archive.write(path, str(path.relative_to(build)))
        archive.writestr("sglang-0.0.1.dist-info/METADATA", "Name: sglang\n")
    staged = stage_build(wheel, [DDTREE_PATCH], tmp_path / "work")
    assert staged.source["kind"] == "wheel" and "sglang-0.0.1.dist-info/METADATA" in staged.files
    assert FIXED_LINE in (staged.root / SPEC_INFO).read_text()
    dir_staged = stage_build(build, [DDTREE_PATCH], tmp_path / "dir")
    assert {k: v["sha256"] for k, v in dir_staged.files.items()}.items() <= {
        k: v.get("sha256") for k, v in staged.files.items()
    }.items()


def test_a_file_that_is_not_a_wheel_and_a_symlink_out_of_the_tree_are_refused(build: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(BuildError, match=r"must be a wheel \(\.whl\)"):
        stage_build(tmp_path / "notes.txt", [], tmp_path / "w")
    (build / "sglang" / "escape").symlink_to("/etc/passwd")
    with pytest.raises(BuildError, match="points outside the build"):
        stage_build(build, [], tmp_path / "w")


def test_release_id_and_manifest(build: Path, tmp_path: Path) -> None:
    from datetime import UTC, datetime

    staged = stage_build(build, [DDTREE_PATCH], tmp_path / "w")
    release_id = staged.release_id("ddtree", "[Unit]\n")
    build_part, config_part = release_id.split("-")
    assert len(build_part) == 12 and len(config_part) == 6
    assert staged.release_id("ddtree", "[Unit]\n") == release_id  # derived: the same on every host, every time
    assert staged.release_id("ddtree", "[Unit]\nX=1\n").startswith(build_part + "-")  # another unit: same build
    assert staged.release_id("eagle3", "[Unit]\n").split("-")[0] != build_part  # another profile: another build
    manifest = staged.manifest(release_id, datetime(2026, 1, 2, 3, 4, 5, 678900, tzinfo=UTC), profile="ddtree",
                               deployed_by="op@laptop")  # fmt: skip
    assert manifest["created_at"] == "2026-01-02T03:04:05.678Z" and manifest["verified"] is False
    assert manifest["profile"] == "ddtree" and manifest["files"] is staged.files
    assert manifest["patches"][0]["sha256"] == __import__("hashlib").sha256(DDTREE_PATCH.read_bytes()).hexdigest()


def test_a_patch_that_creates_a_symlink_out_of_the_tree_is_refused_before_any_host(build: Path, tmp_path: Path) -> None:
    """git writes a symlink as mode 120000 with the target as content; GNU patch creates it. The host would refuse
    it mid-push and leave an unfinished release behind, so staging refuses it with the host's own rule."""
    patch = tmp_path / "escape.patch"
    patch.write_text(
        "diff --git a/sglang/escape b/sglang/escape\n"
        "new file mode 120000\n"
        "--- /dev/null\n"
        "+++ b/sglang/escape\n"
        "@@ -0,0 +1 @@\n"
        "+../../../etc/passwd\n"
        "\\ No newline at end of file\n"
    )
    with pytest.raises(BuildError) as caught:
        stage_build(build, [patch], tmp_path / "work")
    assert caught.value.message == (
        "staged build: refusing symlink 'sglang/escape' -> '../../../etc/passwd': points outside "
        "(a --patch or the build created it)"
    )
    assert "self-contained" in caught.value.hint


def test_a_mode_only_patch_never_changes_the_operators_source(build: Path, tmp_path: Path) -> None:
    """A git mode change has no `---` line, yet patch chmods the file: the staged copy must be private first."""
    patch = tmp_path / "mode.patch"
    patch.write_text(f"diff --git a/{SPEC_INFO} b/{SPEC_INFO}\nold mode 100644\nnew mode 100755\n")
    before = (build / SPEC_INFO).stat().st_mode
    staged = stage_build(build, [patch], tmp_path / "work")
    assert staged.files[SPEC_INFO]["mode"] == 0o755
    assert (build / SPEC_INFO).stat().st_mode == before

"""Every file specops keeps on the operator's machine follows one XDG rule: an absolute $XDG_*_HOME, else the
home folder's default; a relative value is ignored as the spec says (it would scatter caches into whatever
folder a command runs in)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specops.build.hashes import default_cache_file
from specops.cli.early.plan import plan_dir
from specops.localdirs import read_private, write_private
from specops.ops.audit import local_audit_path
from specops.remote.bundle import bundle_cache_dir


def _cache_files() -> list[Path]:
    return [default_cache_file(), plan_dir(), bundle_cache_dir()]


@pytest.mark.parametrize("xdg", [None, "", "relative/cache"])
def test_without_an_absolute_xdg_cache_home_every_cache_is_under_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, xdg: str | None
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert [path.relative_to(tmp_path / ".cache" / "specops").parts for path in _cache_files()] == [
        ("hashes.json",),
        ("doctor-plans",),
        ("bundles",),
    ]


def test_an_absolute_xdg_cache_home_holds_every_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert {path.parent for path in _cache_files()} == {tmp_path / "xdg" / "specops"}


def test_state_follows_the_same_rule(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", "relative")
    assert local_audit_path() == tmp_path / ".local" / "state" / "specops" / "audit.jsonl"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert local_audit_path() == tmp_path / "state" / "specops" / "audit.jsonl"


# --- private files (the built host scripts, the remembered plans): trusted only when they are this user's alone


@pytest.fixture
def private(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "cache"


def test_a_private_file_reads_back_what_was_written(private: Path) -> None:
    write_private(private, "a.json", b"{}")
    assert read_private(private, "a.json") == b"{}"
    assert read_private(private, "missing.json") is None


def test_a_file_others_can_write_is_not_trusted(private: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_private(private, "a.json", b"{}")
    (private / "a.json").chmod(0o666)
    assert read_private(private, "a.json") is None
    assert capsys.readouterr().err == (
        f"warning: ignored cached file {private / 'a.json'} is writable by other users (mode 666); "
        f"run `chmod go-w {private / 'a.json'}`\n"
    )


def test_a_key_others_could_have_written_means_no_private_file_at_all(
    private: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tag key's folder is pre-created 0777 (a shared $XDG_STATE_HOME): no key is made or read there, so
    nothing is cached and nothing cached is used."""
    state = tmp_path / "state" / "specops"
    state.mkdir(parents=True)
    state.chmod(0o777)
    write_private(private, "a.json", b"{}")
    assert read_private(private, "a.json") is None
    assert not private.exists() and list(state.iterdir()) == []
    assert f"warning: ignored key folder {state} is writable by other users" in capsys.readouterr().err


def test_only_the_newest_siblings_are_kept_and_no_temporary_is_left(private: Path) -> None:
    for number in range(6):
        write_private(private, f"release-{number}.py", b"x", siblings="release-*.py", keep=4)
        os.utime(private / f"release-{number}.py", (number, number))  # one second apart, oldest first
    write_private(private, "probe-0.py", b"x", siblings="probe-*.py", keep=4)
    assert sorted(path.name for path in private.iterdir()) == [
        "probe-0.py", "release-2.py", "release-3.py", "release-4.py", "release-5.py",
    ]  # fmt: skip

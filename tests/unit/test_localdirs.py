"""Every file specops keeps on the operator's machine follows one XDG rule: an absolute $XDG_*_HOME, else the
home folder's default; a relative value is ignored as the spec says (it would scatter caches into whatever
folder a command runs in)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.build.hashes import default_cache_file
from specops.cli.early_plan import plan_dir
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

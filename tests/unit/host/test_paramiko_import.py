"""The stand-in's version lookup: the `Version:` line of the one dist-info beside an imported package, or
None (then the real importlib.metadata decides)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from specops.host.ssh.paramiko_import import _installed_version


def _package(monkeypatch: pytest.MonkeyPatch, site: Path, name: str) -> None:
    (site / name).mkdir(parents=True)
    (site / name / "__init__.py").write_text("")
    module = types.ModuleType(name)
    module.__file__ = str(site / name / "__init__.py")
    monkeypatch.setitem(sys.modules, name, module)


def _dist_info(site: Path, folder: str, metadata: str | None) -> None:
    (site / folder).mkdir()
    if metadata is not None:
        (site / folder / "METADATA").write_text(metadata)


def test_the_version_line_of_the_one_dist_info(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _package(monkeypatch, tmp_path, "fakepkg")
    _dist_info(tmp_path, "fakepkg-4.2.0.dist-info", "Metadata-Version: 2.1\nName: fakepkg\nVersion: 4.2.0\n\nbody\n")
    _dist_info(tmp_path, "fakepkg_extras-1.0.dist-info", "Version: 1.0\n")  # another project, not a second copy
    assert _installed_version("fakepkg") == "4.2.0"


@pytest.mark.parametrize(
    ("folders", "metadata"),
    [
        (["fakepkg-1.0.dist-info", "fakepkg-2.0.dist-info"], "Version: 1.0\n"),  # two installs' leftovers
        (["fakepkg-1.0.dist-info"], None),  # no METADATA file
        (["fakepkg-1.0.dist-info"], "Name: fakepkg\n\nVersion: 9\n"),  # a Version only in the body
        (["fakepkg-1.0.egg-info"], "Version: 1.0\n"),  # not a dist-info
    ],
)
def test_anything_unusual_is_left_to_importlib_metadata(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, folders: list[str], metadata: str | None
) -> None:
    _package(monkeypatch, tmp_path, "fakepkg")
    for folder in folders:
        _dist_info(tmp_path, folder, metadata)
    assert _installed_version("fakepkg") is None


def test_a_package_that_is_not_imported_is_left_to_importlib_metadata() -> None:
    assert _installed_version("surely-not-imported-package") is None

"""The host-side scripts are built once per specops version and Python, then read from the local cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specops.remote import bundle
from specops.remote.bundle import bundle_cache_dir, bundle_key


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bundle.probe_source.cache_clear()
    bundle.release_script.cache_clear()
    yield tmp_path / "cache" / "specops" / "bundles"
    bundle.probe_source.cache_clear()
    bundle.release_script.cache_clear()


def test_the_cached_scripts_are_exactly_what_a_fresh_build_gives(cache_home: Path) -> None:
    assert bundle.release_script() == bundle._build_release_script()
    assert bundle.probe_source() == bundle._build_probe_source()
    assert sorted(path.name.split("-")[0] for path in cache_home.iterdir()) == ["probe", "release"]
    assert oct(cache_home.stat().st_mode & 0o777) == "0o700"  # the text runs on hosts: only this user writes it


def test_the_next_command_reads_the_cache_instead_of_building(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = bundle.release_script()
    bundle.release_script.cache_clear()  # a new process
    monkeypatch.setattr(bundle, "_build_release_script", lambda: pytest.fail("built again"))
    assert bundle.release_script() == first


def test_a_changed_source_or_python_is_another_key() -> None:
    assert bundle_key("release", [b"a", b"b"]) == bundle_key("release", [b"a", b"b"])
    assert bundle_key("release", [b"a", b"b"]) != bundle_key("release", [b"a", b"c"])
    assert bundle_key("release", [b"ab"]) != bundle_key("release", [b"a", b"b"])  # each source hashed alone
    assert bundle_key("probe", [b"a"]) != bundle_key("release", [b"a"])


def test_an_unusable_cache_only_costs_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "specops").write_text("a file where the folder should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bundle.release_script.cache_clear()
    try:
        assert bundle.release_script() == bundle._build_release_script()
    finally:
        bundle.release_script.cache_clear()


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert bundle_cache_dir() == Path.home() / ".cache" / "specops" / "bundles"


def test_one_space_indents_leave_the_release_script_the_same_program() -> None:
    """Every line's leading spaces must be indentation: a string literal spanning lines would be changed, and
    the parsed trees would differ."""
    import ast

    full = ast.unparse(ast.Module(body=bundle._release_body(bundle.RELEASE_MODULES), type_ignores=[]))
    compact = bundle._build_release_script()
    assert ast.dump(ast.parse(compact)) == ast.dump(ast.parse(full))
    assert len(compact) < 0.95 * len(full)


@pytest.mark.parametrize("kind", ["probe", "release", "guard"])
def test_what_the_host_compiles_is_python_3_8_without_docstrings_or_typing(kind: str) -> None:
    """Hosts run Python 3.8+; the scripts carry no docstrings, annotations or typing imports (the host compiles
    the whole text on every command), and the probe's one-space indents are the same program."""
    import ast

    text = {"probe": bundle._build_probe_source, "release": bundle._build_release_script}.get(
        kind, bundle._build_guard_source
    )()
    tree = ast.parse(text, feature_version=(3, 8))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} | {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    assert {"typing", "collections.abc", "__future__"} & imported == set()
    assert [f.name for f in functions if f.returns is not None or ast.get_docstring(f) is not None] == []
    assert len(functions) > 40

"""The host-side scripts are built once per specops version and Python, then read from the local cache."""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from specops.commands.release import plain_session_argv
from specops.remote import bundle
from specops.remote.bundle import RELEASE_MODULES, RELEASE_PACKAGE, bundle_cache_dir, bundle_key
from tests.unit.needs import need_root


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the key that tags what specops built
    for cached in (bundle.probe_source, bundle.release_script, bundle.codecache_source, bundle.runner_script):
        cached.cache_clear()
    yield tmp_path / "cache" / "specops" / "bundles"
    for cached in (bundle.probe_source, bundle.release_script, bundle.codecache_source, bundle.runner_script):
        cached.cache_clear()


def test_the_cached_scripts_are_exactly_what_a_fresh_build_gives(cache_home: Path) -> None:
    assert bundle.release_script() == bundle._build_release_script()
    assert bundle.probe_source() == bundle._build_probe_source()
    assert bundle.runner_script() == bundle._build_runner_script()  # builds the code cache's text inside: no wait
    assert bundle.runner_script().startswith(bundle.codecache_source() + "\n")
    kinds = sorted(path.name.split("-")[0] for path in cache_home.iterdir())
    assert kinds == ["codecache", "probe", "release", "runner"]
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


# --- attacks on the cache: the release script runs as root on every host, so only a text this specops built
# for this user is ever sent

EVIL = "import os; os.system('id > /tmp/pwned')\n"


def sent_script() -> str:
    """The release script a deploy sends (`python -IS -c TEXT`, TEXT running it through the host's compiled-code
    cache), as a new process would build or read it."""
    bundle.release_script.cache_clear()
    sent = plain_session_argv("/opt/venv/bin/python", "/opt/specops/sglang")[3]
    head, _, literal = sent.partition("\nexec(load_code(")
    assert head == bundle.codecache_source() and literal.endswith("))\n")
    inner = ast.literal_eval(literal[: -len("))\n")])
    assert isinstance(inner, str)
    return inner


def release_file(folder: Path) -> Path:
    return folder / f"release-{bundle_key('release', bundle._sources(RELEASE_PACKAGE, RELEASE_MODULES))}.py"


def test_a_tampered_cached_release_script_is_never_sent(cache_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Someone rewrites the cached script in place (its owner and mode unchanged, as a restored CI cache or a
    synced home folder would be): the tag no longer matches, the script is built again, and that is sent."""
    fresh = sent_script()
    cached = release_file(cache_home)
    cached.write_text(EVIL)
    assert sent_script() == fresh == bundle._build_release_script()
    warning = capsys.readouterr().err
    assert (
        warning
        == f"warning: ignored cached file {cached} was not written by specops for you (its tag does not match)\n"
    )
    assert EVIL not in cached.read_text()  # replaced by the rebuilt text


def test_a_cache_folder_another_user_can_write_is_not_trusted(
    cache_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pre-created 0777 bundles folder holding a script under the very name specops would look for."""
    cache_home.mkdir(parents=True)
    cache_home.chmod(0o777)
    release_file(cache_home).write_text(EVIL)
    assert sent_script() == bundle._build_release_script()
    assert capsys.readouterr().err == (
        f"warning: ignored cache folder {cache_home} is writable by other users (mode 777); "
        f"run `chmod go-w {cache_home}`\n"
    )
    assert release_file(cache_home).read_text() == EVIL  # nothing written into a folder others can write


def test_a_cache_folder_owned_by_another_user_is_not_trusted(cache_home: Path) -> None:
    need_root("giving a folder to another user")
    fresh = sent_script()
    os.chown(cache_home, 65534, 65534)
    os.chown(release_file(cache_home), 65534, 65534)
    release_file(cache_home).write_text(EVIL)
    assert sent_script() == fresh


def test_a_symlink_in_the_cache_is_not_followed(cache_home: Path, tmp_path: Path) -> None:
    fresh = sent_script()
    elsewhere = tmp_path / "elsewhere.py"
    release_file(cache_home).rename(elsewhere)
    release_file(cache_home).symlink_to(elsewhere)
    elsewhere.write_text(EVIL)
    assert sent_script() == fresh
    assert elsewhere.read_text() == EVIL  # the rebuilt text replaced the link, not the file it pointed to


def test_the_cached_scripts_are_private_files(cache_home: Path) -> None:
    sent_script()
    assert stat.S_IMODE(cache_home.stat().st_mode) == 0o700
    assert [stat.S_IMODE(path.stat().st_mode) for path in cache_home.iterdir()] == [0o600, 0o600]  # and its loader

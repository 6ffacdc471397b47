"""`specops deploy HOST` with the build (and patches) named in specops.toml, as the README's first lines type it.

The hosts refuse the connection (tests/unit/cli/conftest.py): a deploy that got as far as connecting staged its
build; `--dry-run --json` shows which build and patches it staged and where they came from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specops.errors import ExitCode
from tests.unit.cli.conftest import Seen
from tests.unit.clirun import CliResult, run_cli
from tests.unit.conftest import VALID_HOST

PATCH = "--- a/sglang/__init__.py\n+++ b/sglang/__init__.py\n@@ -1 +1,2 @@\n __version__ = '0.0.1'\n+PATCHED = 1\n"
OTHER_HOST = VALID_HOST.replace("llm-two", "llm-three")


@pytest.fixture
def build(config_dir: Path) -> Path:
    """A build beside specops.toml, and a patch for it in the home folder."""
    root = config_dir / "build"
    (root / "sglang").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("__version__ = '0.0.1'\n")
    (config_dir / "home").mkdir(exist_ok=True)
    (config_dir / "home" / "fix.patch").write_text(PATCH)
    return root


def host_with(text: str, *lines: str) -> str:
    """A host table with extra lines (the table is the text's first; its keys follow its header)."""
    header, rest = text.split("\n", 1)
    return "\n".join([header, *lines, rest])


def dry_run(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    result = run_cli(capsys, "deploy", *args, "--dry-run", "--json")
    assert result.code == ExitCode.UNREACHABLE, result.err
    build: dict[str, Any] = json.loads(result.out)["build"]
    return build


def test_the_build_and_patches_named_for_the_host_are_staged(
    capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen, build: Path, config_dir: Path
) -> None:
    write_config(host_with(VALID_HOST, 'build = "build"', 'patches = ["~/fix.patch"]'))
    result = run_cli(capsys, "deploy", "llm-two", "--json")
    assert result.code == ExitCode.UNREACHABLE, result.err
    assert connects == [("HostSpec", "llm-two", "root@llm-two")]  # planned and staged: then it connected
    shown = dry_run(capsys, "llm-two")
    assert shown == {
        "build": str(config_dir / "build"), "build_from": "specops.toml: hosts.llm-two.build",
        "patches": [str(config_dir / "home" / "fix.patch")], "patches_from": "specops.toml: hosts.llm-two.patches",
        "note": None,
    }  # fmt: skip


def test_defaults_name_the_build_for_every_host_and_a_group_deploys_it(
    capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen, build: Path
) -> None:
    write_config(
        '[defaults]\nbuild = "./build"\n' + VALID_HOST + OTHER_HOST + '[groups]\ngpu = ["llm-two", "llm-three"]\n'
    )
    shown = dry_run(capsys, "gpu")
    assert (shown["build_from"], shown["patches"], shown["patches_from"]) == (
        "specops.toml: defaults.build",
        [],
        "none",
    )


def test_the_command_line_patch_replaces_the_configured_patches_and_says_so(
    capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen, build: Path, config_dir: Path
) -> None:
    write_config(host_with(VALID_HOST, 'build = "build"', 'patches = ["~/fix.patch"]'))
    (config_dir / "other.patch").write_text(PATCH.replace("PATCHED", "OTHER"))
    shown = dry_run(capsys, "llm-two", "--patch", "other.patch")
    assert (shown["patches"], shown["patches_from"]) == ([str(config_dir / "other.patch")], "--patch")
    assert shown["note"] == "--patch replaces the patches specops.toml names (~/fix.patch)"
    result = run_cli(capsys, "deploy", "llm-two", "--patch", "other.patch")
    assert "note: --patch replaces the patches specops.toml names (~/fix.patch)" in result.err


def test_the_command_line_build_replaces_the_configured_build_and_its_patches(
    capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen, build: Path, config_dir: Path
) -> None:
    write_config(host_with(VALID_HOST, 'build = "missing"', 'patches = ["~/fix.patch"]'))
    shown = dry_run(capsys, "llm-two", "--build", str(build))
    assert (shown["build"], shown["build_from"], shown["patches"]) == (str(build), "--build", [])
    assert shown["note"] == "--build without --patch leaves out the patches specops.toml names (~/fix.patch)"


def test_no_build_anywhere_is_a_usage_error_showing_both_ways(
    capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen
) -> None:
    write_config(VALID_HOST)
    result = run_cli(capsys, "deploy", "llm-two", "--profile", "ddtree")
    assert result.code == ExitCode.USAGE
    assert result.err.splitlines() == [
        "error: no build to deploy: no --build, and specops.toml names none for llm-two",
        'hint: pass --build PATH, or set build = "PATH" under [hosts.llm-two] (or [defaults]) in specops.toml',
    ]
    assert connects == []


def test_a_group_whose_hosts_name_different_builds_needs_a_build_option(
    capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen, build: Path, config_dir: Path
) -> None:
    hosts = host_with(VALID_HOST, 'build = "build"') + host_with(
        OTHER_HOST, 'build = "build"', 'patches = ["~/fix.patch"]'
    )
    write_config(hosts + '[groups]\ngpu = ["llm-two", "llm-three"]\n')
    result = run_cli(capsys, "deploy", "gpu")
    assert result.code == ExitCode.USAGE
    assert result.err.splitlines() == [
        f"error: the hosts of this deploy name different builds (llm-two: {config_dir / 'build'}; llm-three: "
        f"{config_dir / 'build'} + 1 patch(es)); a deploy stages one build",
        "hint: pass --build PATH (and --patch) for all of them, or deploy the hosts one by one",
    ]
    assert connects == []
    assert dry_run(capsys, "gpu", "--build", str(build))["build_from"] == "--build"


def test_a_configured_path_that_does_not_exist_is_named_by_its_key(
    capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen, build: Path, config_dir: Path
) -> None:
    write_config('[defaults]\npatches = ["nope.patch"]\n' + host_with(VALID_HOST, 'build = "~/sglang/python"'))
    result = run_cli(capsys, "deploy", "llm-two")
    assert result.code == ExitCode.CONFIG
    assert result.err.splitlines() == [
        f"error: specops.toml: hosts.llm-two.build: {config_dir / 'home' / 'sglang' / 'python'}: no such file or folder",
        f"error: specops.toml: defaults.patches.0: {config_dir / 'nope.patch'}: no such file",
        f"hint: paths in specops.toml are relative to its folder ({config_dir})",
    ]
    assert connects == []


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (['build = ""'], "specops.toml: hosts.llm-two.build: an empty path; name a file or folder"),
        (["build = 3"], "specops.toml: hosts.llm-two.build: Input should be a valid string (got 3)"),
        (['patches = "fix.patch"'], "specops.toml: hosts.llm-two.patches: Input should be a valid list"),
        (['patches = ["a\\nb"]'], "specops.toml: hosts.llm-two.patches.0: contains a control character"),
        (['bulid = "build"'], "specops.toml: hosts.llm-two.bulid: unknown key (specops rejects unknown keys to catch "
         "typos); did you mean 'build'?"),
    ],
)  # fmt: skip
def test_bad_build_settings_are_path_qualified_config_errors(
    capsys: pytest.CaptureFixture[str], write_config: Any, lines: list[str], expected: str
) -> None:
    write_config(host_with(VALID_HOST, *lines))
    result: CliResult = run_cli(capsys, "config", "check")
    assert result.code == ExitCode.CONFIG
    assert expected in result.err, result.err

"""An unreadable specops.toml is a config error (exit 3) whether it is named with --config or found by default.

The file is made unreadable for real: mode 000, and when the tests run as root the CLI runs without the
capabilities that let root read any file (setpriv), so the kernel refuses the read as it would for a user.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specops.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def _specops_without_read_override(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m specops ARGS` in cwd, unable to read files whose mode forbids it, even as root."""
    argv = [sys.executable, "-m", "specops", *args]
    if os.geteuid() == 0:
        argv = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *argv]
    env = {**os.environ, "HOME": str(cwd / "home"), "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    env.pop("SPECOPS_CONFIG", None)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def unreadable_config(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    path = tmp_path / "specops.toml"
    path.write_text('[hosts.llm-two]\nssh = "root@llm-two"\n', encoding="utf-8")
    path.chmod(0)
    return path


@pytest.mark.parametrize("named", [True, False], ids=["given_with_--config", "found_by_default"])
def test_an_unreadable_config_exits_3_naming_the_file(unreadable_config: Path, named: bool) -> None:
    args = ["--config", "specops.toml"] if named else []
    result = _specops_without_read_override(unreadable_config.parent, *args, "config", "check")
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines() == [
        "error: specops.toml: cannot read: Permission denied",
        f"hint: {ConfigError.default_hint}",
    ]


def test_a_folder_given_with_config_is_named_as_a_folder(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "cfg").mkdir()
    result = _specops_without_read_override(tmp_path, "--config", "cfg", "config", "check")
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines() == [
        "error: cfg: is a folder, not a TOML file (given with --config)",
        "hint: give --config the specops.toml file itself",
    ]

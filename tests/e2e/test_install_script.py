"""`install.sh` with the distribution's own Python (externally managed, PEP 668) on a clean copy of the
checkout: a private venv, `specops` on the PATH, `specops doctor --local` exits 0; re-running upgrades."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SYSTEM_PYTHON = Path("/usr/bin/python3")

pytestmark = pytest.mark.e2e


def _clean_copy(destination: Path) -> Path:
    """The checkout as a fresh clone would have it: no venv, no caches, no build output."""
    junk = shutil.ignore_patterns(".venv", ".git", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache",
                                  "*.egg-info", "build", "dist")  # fmt: skip
    shutil.copytree(ROOT, destination, ignore=junk)
    return destination


def _run_install(source: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key.startswith("PIP_") or key in ("LANG", "TERM")}
    env.update(HOME=str(home), PATH="/usr/bin:/bin", PYTHON=str(SYSTEM_PYTHON),
               SPECOPS_BIN_DIR=str(home / ".local" / "bin"))  # fmt: skip
    return subprocess.run(["bash", str(source / "install.sh")], env=env, cwd=home, capture_output=True, text=True,
                          timeout=900, check=False)  # fmt: skip


def test_install_sh_with_the_distribution_python_then_upgrade(tmp_path: Path) -> None:
    assert SYSTEM_PYTHON.exists(), "this test needs the distribution's /usr/bin/python3"
    version = subprocess.run([str(SYSTEM_PYTHON), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert Path(f"/usr/lib/python{version}/EXTERNALLY-MANAGED").exists(), "expected an externally managed Python"
    source, home = _clean_copy(tmp_path / "specops"), tmp_path / "home"
    home.mkdir()

    first = _run_install(source, home)
    assert first.returncode == 0, first.stdout + first.stderr
    link = home / ".local" / "bin" / "specops"
    assert link.resolve() == (home / ".local" / "share" / "specops" / "venv" / "bin" / "specops").resolve()
    assert "specops doctor --local" in first.stderr
    assert first.stdout.rstrip().splitlines()[-1].endswith("checks passed on 1 host")
    untouched = subprocess.run([str(SYSTEM_PYTHON), "-c", "import specops"], capture_output=True, cwd=home)
    assert untouched.returncode != 0, "specops must not be installed into the system Python"

    init = source / "specops" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "', '__version__ = "9.9.9+', 1))
    again = _run_install(source, home)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "upgrading specops in" in again.stderr
    shown = subprocess.run([str(link), "--version"], capture_output=True, text=True, check=True).stdout
    assert shown.startswith("specops 9.9.9+"), shown

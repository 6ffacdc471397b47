"""The import rules of ARCHITECTURE.md, enforced: transport and presentation stay in their modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specops"

# module prefix -> the only places allowed to import it
ALLOWED = {
    "typer": ("specops/cli/",),
    "rich": ("specops/cli/",),
    "paramiko": ("specops/host/ssh.py",),
    "httpx": ("specops/engine/client.py",),
    "click": (),
    "torch": (),
    "torchcodec": (),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _source_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_module_is_imported_only_where_allowed(module: str) -> None:
    offenders = []
    for path in _source_files():
        relative = path.relative_to(PACKAGE.parent).as_posix()
        if module in _imports(path) and not relative.startswith(ALLOWED[module]):
            offenders.append(relative)
    assert offenders == [], f"{module} may only be imported in {ALLOWED[module] or 'no module'}"


def test_core_never_imports_the_cli() -> None:
    offenders = [
        path.relative_to(PACKAGE.parent).as_posix()
        for path in _source_files()
        if "cli" not in path.relative_to(PACKAGE).parts
        and path.name != "__main__.py"
        and any(name.startswith("specops.cli") for name in _full_imports(path))
    ]
    assert offenders == []


def _full_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_help_imports_nothing_heavy() -> None:
    """`specops --help` must start fast: pydantic, jinja2, paramiko, httpx and rich load only when used."""
    code = (
        "import sys\n"
        "from specops.cli.main import main\n"
        "main(['--help'])\n"
        "heavy = sorted(m for m in ('pydantic', 'jinja2', 'paramiko', 'httpx', 'rich', 'torch') if m in sys.modules)\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "HEAVY="

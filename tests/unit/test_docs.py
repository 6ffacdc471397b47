"""The documentation stays true: generated reference tables match the models, the README's commands exist,
links resolve, every page is reachable from the README, and every failing exit code has its troubleshooting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specops.config.docs_reference import refresh
from specops.errors import ExitCode

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize("name", ["configuration.md", "profiles.md", "exit-codes.md", "kubernetes.md"])
def test_generated_tables_are_current(name: str) -> None:
    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    assert "BEGIN GENERATED" in text
    assert refresh(text) == text, "run `python -m specops.config.docs_reference` and commit docs/"


def test_readme_gives_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "python3 -m pip install . && specops doctor --local" in readme
    assert "bash .ci/run" in readme
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    assert "operators" in setup and "contributors only" in setup  # who runs which line
    assert setup.index("operators") < setup.index("contributors only")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def test_every_relative_link_and_anchor_resolves() -> None:
    broken = []
    for page in _pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+://", target):
                continue
            path_part, _, anchor = target.partition("#")
            linked = (page.parent / path_part).resolve() if path_part else page
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_every_docs_page_is_listed_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [page.name for page in sorted((ROOT / "docs").glob("*.md")) if f"(docs/{page.name})" not in readme] == []


def test_docs_speak_to_the_operator_not_about_project_history() -> None:
    history = re.compile(r"issue \d|the seed|reference/|§|first session|second session", re.I)
    found = [f"{page.name}: {match.group(0)!r}" for page in _pages() for match in history.finditer(page.read_text())]
    assert found == []


def test_troubleshooting_covers_every_failing_exit_code() -> None:
    text = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    assert [int(code) for code in ExitCode if code and f"\n### {int(code)}: " not in text] == []

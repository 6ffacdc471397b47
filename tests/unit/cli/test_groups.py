"""Groups of groups: naming a group reaches every host through the groups it lists; a group's name where one
host is expected is explained as a group, not reported as an unknown host."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST

FLEET = (
    VALID_HOST.replace("llm-two", "llm-one")
    + VALID_HOST
    + VALID_HOST.replace("llm-two", "llm-three")
    + '[groups]\neast = ["llm-one", "llm-two"]\nfleet = ["east", "llm-three"]\n'
)


@pytest.fixture
def fleet(write_config: Callable[[str], Path]) -> None:
    write_config(FLEET)


@pytest.mark.usefixtures("fleet")
def test_a_group_of_groups_names_every_host_it_reaches(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--json", "hosts", "fleet")
    assert result.code == 0, result.err
    rows = {row["name"]: row["groups"] for row in json.loads(result.out)["hosts"]}
    assert rows == {"llm-one": ["east", "fleet"], "llm-two": ["east", "fleet"], "llm-three": ["fleet"]}


@pytest.mark.usefixtures("fleet")
def test_a_group_where_one_host_is_expected_is_explained_as_a_group(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "render", "fleet")
    assert result.code == 2
    assert result.err.splitlines() == [
        "error: 'fleet' is a group in specops.toml (llm-one, llm-two, llm-three); this takes one host",
        "hint: name one of its hosts, e.g. llm-one",
    ]


def test_a_group_that_contains_itself_is_a_config_error(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config(FLEET.replace('east = ["llm-one", "llm-two"]', 'east = ["llm-one", "fleet"]'))
    result = run_cli(capsys, "status", "llm-one")
    assert result.code == 3
    assert result.err.splitlines()[0] == "error: specops.toml: groups.east: contains itself: east -> fleet -> east"

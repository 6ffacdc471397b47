"""`specops doctor` and `specops rollback` without a host name: the inventory's only host, else a usage error
that lists the choices. The hosts refuse the connection (tests/unit/cli/conftest.py): what is asserted is which
host was connected to, and what the operator sees."""

from __future__ import annotations

from typing import Any

import pytest

from specops.errors import ExitCode
from tests.unit.cli.conftest import Seen
from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST

TWO_HOSTS = VALID_HOST + VALID_HOST.replace("llm-two", "llm-three") + '[groups]\ngpu = ["llm-two", "llm-three"]\n'


@pytest.mark.parametrize("command", [["doctor"], ["doctor", "--strict"], ["rollback"], ["rollback", "--json"]])
def test_the_only_host_is_the_default(
    capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen, command: list[str]
) -> None:
    write_config(VALID_HOST)
    result = run_cli(capsys, *command)
    assert result.code == ExitCode.UNREACHABLE, result.err
    assert connects == [("HostSpec", "llm-two", "root@llm-two")]
    assert "llm-two" in result.out + result.err


@pytest.mark.parametrize(
    ("command", "hint"),
    [
        ("doctor", "name hosts or groups, or pass --all for every host (hosts: llm-two, llm-three; groups: gpu)"),
        ("rollback", "name the host: specops rollback HOST (hosts: llm-two, llm-three)"),  # one host at a time
    ],
)
def test_without_a_name_on_several_hosts_the_choices_are_named(
    capsys: pytest.CaptureFixture[str], write_config: Any, connects: Seen, command: str, hint: str
) -> None:
    write_config(TWO_HOSTS)
    result = run_cli(capsys, command)
    assert (result.code, result.out) == (ExitCode.USAGE, "")
    assert result.err.splitlines() == ["error: no host named, and specops.toml has 2 hosts", f"hint: {hint}"]
    assert connects == []


def test_an_inventory_without_hosts_says_so(capsys: pytest.CaptureFixture[str], write_config: Any) -> None:
    write_config("[defaults]\nport = 30001\n")
    result = run_cli(capsys, "doctor")
    assert result.code == ExitCode.USAGE
    assert result.err.splitlines() == [
        "error: no hosts in specops.toml",
        "hint: add a [hosts.NAME] table (`specops init` writes one)",
    ]

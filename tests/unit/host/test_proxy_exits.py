"""A ProxyCommand that exits at once (a wrong bastion, a refused hop, a typo) is what failed: the error names it,
its exit status and what it said, never "the server did not answer"."""

from __future__ import annotations

import time

import pytest

from specops.errors import ConnectError, ExitCode
from specops.host.ssh.connection import open_ssh
from specops.host.ssh.target import SshTarget


def _behind(proxy_command: str) -> SshTarget:
    return SshTarget(
        alias="gpu", hostname="10.0.0.9", user="deploy", port=22, identity_files=(), proxy_command=proxy_command
    )


def test_a_proxy_command_that_exits_with_an_error_is_named_with_its_status_and_stderr() -> None:
    command = "sh -c 'echo \"channel 0: open failed: administratively prohibited\" >&2; exit 255'"
    with pytest.raises(ConnectError) as caught:
        open_ssh(_behind(command), known_hosts=[], connect_timeout=5)
    assert caught.value.message == (
        f"deploy@10.0.0.9:22: ProxyCommand `{command}` exited with status 255: "
        "channel 0: open failed: administratively prohibited"
    )
    assert caught.value.exit_code == ExitCode.UNREACHABLE
    assert "by hand" in caught.value.hint


def test_a_silent_proxy_command_that_exits_is_still_the_proxy_not_the_server() -> None:
    began = time.monotonic()
    with pytest.raises(ConnectError) as caught:
        open_ssh(_behind("false %h %p"), known_hosts=[], connect_timeout=5)
    assert caught.value.message == (
        "deploy@10.0.0.9:22: ProxyCommand `false %h %p` exited with status 1 (it wrote nothing to stderr)"
    )
    assert time.monotonic() - began < 4

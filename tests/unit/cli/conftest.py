"""Fixtures of the command-line tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specops.errors import ConnectError

Seen = list[tuple[str, str, str]]


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch, config_dir: Path) -> Seen:
    """Each connection attempt: (how it was described: HostSpec or PlainReach, host name, ssh value)."""
    seen: Seen = []

    def refuse(reach: Any, **_: Any) -> Any:
        seen.append((type(reach).__name__, reach.name, reach.ssh))
        raise ConnectError(f"{reach.name}: connection refused to {reach.ssh} (by the test)")

    monkeypatch.setattr("specops.host.ssh.connection.connect", refuse)
    monkeypatch.setenv("XDG_CACHE_HOME", str(config_dir / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(config_dir / "state"))  # a deploy's local audit log
    return seen

"""Shared pieces for the engine/readiness/smoke unit tests: a host spec, profiles, a canned engine."""

from __future__ import annotations

import pytest

from specops.config.inventory import HostSpec
from specops.config.profile import Profile, Readiness, Smoke
from specops.host.recording import RecordingHost
from tests.unit.engine.fakes import CannedServer


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "testbed_venv: runs the test engine with the hosts' venv python (torch + torchcodec); "
        "built/cached by tests.testbed.pyenv, or SPECOPS_TESTBED_PYTHON naming a venv python",
    )


@pytest.fixture
def spec() -> HostSpec:
    return HostSpec(
        name="llm-one", ssh="llm-one", python="/opt/venv/bin/python", model_path="/srv/models/target",
        served_model_name="qwen-test", port=30000,
    )  # fmt: skip


@pytest.fixture
def ddtree() -> Profile:
    return Profile(
        name="ddtree",
        algorithm="DDTREE",
        readiness=Readiness(timeout_s=60),
        smoke=Smoke(prompt="Explain.", max_new_tokens=8, min_tokens_per_s=20.0, min_accept_length=2.0),
    )


@pytest.fixture
def server() -> CannedServer:
    return CannedServer()


@pytest.fixture
def host(server: CannedServer) -> RecordingHost:
    return RecordingHost("llm-one", tunnel_factory=server.tunnel)

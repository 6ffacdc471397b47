"""Shared fixtures for the end-to-end tests.

host_venv: the hosts' venv (real torch CPU + torchcodec, cached in /var/cache/specops-testbed);
real_sglang: real upstream SGLang (newest release, same cache); testhost, testhost_factory, testhost_session:
test hosts (root/CI skip rules, stale cleanup); scene: a test host dressed as a GPU host (below).
"""

from pathlib import Path

import pytest

from tests.e2e.deployscene import Scene, make_scene
from tests.testbed.pyenv_fixtures import host_venv  # noqa: F401
from tests.testbed.realsglang_fixtures import real_sglang  # noqa: F401
from tests.testbed.testhost import TestHost
from tests.testbed.testhost.fixtures import *  # noqa: F403


@pytest.fixture
def scene(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> Scene:  # fmt: skip
    """A test host dressed as a GPU host, with the operator's files that reach it (tests/e2e/deployscene.py);
    a module that needs another dressing defines its own `scene`."""
    return make_scene(testhost, host_venv, tmp_path, capsys, monkeypatch)

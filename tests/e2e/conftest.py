"""Shared fixtures for the end-to-end tests (each engineer adds their own lines)."""

# host venv (real torch CPU + torchcodec, cached in /var/cache/specops-testbed): host_venv
from tests.testbed.pyenv_fixtures import host_venv  # noqa: F401

# real upstream SGLang (newest release, cached in /var/cache/specops-testbed): real_sglang
from tests.testbed.realsglang_fixtures import real_sglang  # noqa: F401

# test hosts: testhost, testhost_factory, testhost_session (root/CI skip rules, stale cleanup)
from tests.testbed.testhost.fixtures import *  # noqa: F403

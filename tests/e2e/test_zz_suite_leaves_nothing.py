"""Runs last among the e2e tests: after every test host is gone, nothing is left running or mounted."""

from __future__ import annotations

import pytest

from tests.testbed.testhost import assert_no_leftovers
from tests.testbed.testhost.fixtures import in_ci, require_testhost_environment

pytestmark = pytest.mark.e2e


def test_no_host_process_mount_link_or_cgroup_is_left() -> None:
    require_testhost_environment()
    # Outside CI other sessions may run their own hosts on this machine: check only ours there.
    assert_no_leftovers(everything=in_ci())

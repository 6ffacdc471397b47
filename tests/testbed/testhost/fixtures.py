"""pytest fixtures for test hosts; wire them in with one line in a conftest.py:

    from tests.testbed.testhost.fixtures import *  # noqa: F403

* `testhost`          (function): one fresh host, stopped after the test, pass or fail.
* `testhost_factory`  (function): `factory(n)` starts n hosts in parallel, returns them as a list;
                      all are stopped after the test.
* `testhost_session`  (session): checks root/Linux/tools, removes leftovers of crashed earlier runs
                      once, turns SIGTERM into KeyboardInterrupt so teardown runs, and at the end
                      stops whatever this process still owns. The two fixtures above request it.

Without root (or the tools), e2e tests are skipped with the reason, except in CI (env CI=true),
where they FAIL: a skipped e2e test must never count as a pass there.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from types import FrameType

import pytest

from tests.testbed.testhost.cleanup import cleanup_stale
from tests.testbed.testhost.host import TestHost
from tests.testbed.testhost.lifecycle import start_host, stop_host, stop_owned_hosts

__all__ = ["module_testhost", "testhost", "testhost_factory", "testhost_session"]

REQUIRED_TOOLS = ("unshare", "nsenter", "setpriv", "mount", "ip", "ssh", "/usr/sbin/sshd", "/lib/systemd/systemd")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def missing_requirements() -> str | None:
    """Why this machine cannot run test hosts, or None when it can."""
    if not sys.platform.startswith("linux"):
        return "e2e test hosts need Linux"
    if os.geteuid() != 0:
        return "e2e test hosts need root (namespaces, mounts, veth, cgroups); run pytest as root"
    missing = [tool for tool in REQUIRED_TOOLS if not (shutil.which(tool) or os.access(tool, os.X_OK))]
    if missing:
        return f"e2e test hosts need {', '.join(missing)} (apt-get install openssh-server iproute2 util-linux)"
    return None


def require_testhost_environment() -> None:
    """Skip (locally) or fail (CI) when test hosts cannot run here."""
    reason = missing_requirements()
    if reason is None:
        return
    if in_ci():
        pytest.fail(f"{reason} [CI=true: e2e tests must run, not skip]", pytrace=False)
    pytest.skip(reason)


def _interrupt_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def testhost_session() -> Iterator[None]:
    require_testhost_environment()
    removed = cleanup_stale()
    if removed:
        print(f"\n[testhost] removed leftovers of earlier runs: {', '.join(removed)}")
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    try:
        yield
    finally:
        stop_owned_hosts()
        if previous is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, previous)


@pytest.fixture
def testhost(testhost_session: None) -> Iterator[TestHost]:
    host = start_host()
    try:
        yield host
    finally:
        stop_host(host)


@pytest.fixture(scope="module")
def module_testhost(testhost_session: None) -> Iterator[TestHost]:
    """One host shared by a test module whose tests do not change it in ways that matter to the next test."""
    host = start_host()
    try:
        yield host
    finally:
        stop_host(host)


def _start_many(count: int) -> list[TestHost]:
    """Start `count` hosts in parallel; if one fails, stop the others and raise its error."""
    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(start_host) for _ in range(count)]
    hosts, errors = [], []
    for future in futures:
        try:
            hosts.append(future.result())
        except Exception as exc:
            errors.append(exc)
    if errors:
        for host in hosts:
            stop_host(host)
        raise errors[0]
    return hosts


@pytest.fixture
def testhost_factory(testhost_session: None) -> Iterator[Callable[[int], list[TestHost]]]:
    started: list[TestHost] = []

    def factory(count: int) -> list[TestHost]:
        began = time.monotonic()
        hosts = _start_many(count)
        started.extend(hosts)
        print(f"[testhost] started {count} hosts in parallel in {time.monotonic() - began:.2f}s")
        return hosts

    try:
        yield factory
    finally:
        with ThreadPoolExecutor(max_workers=max(1, len(started))) as pool:
            results = [pool.submit(stop_host, host) for host in started]
        for result in results:
            result.result()

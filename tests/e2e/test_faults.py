"""Fault injection on real test hosts: `kill -9` of the CLI and a dropped SSH connection at every phase
boundary of a deploy and of its rollback, a full disk mid-push, and ten deploys in a row.

After each fault the host must serve a verified release (the previous one, or the new one if it was verified
before the fault), `specops status HOST --json` must say which, and the next deploy must succeed. The dead
deploy's lock is released with `specops lock release HOST` (allowed without --force: the holder is a process
of this machine that is gone) and the next deploy waits with --lock-wait as an operator would.

Every scenario gets its own fresh host and all run at once in worker threads (SPECOPS_FAULTS_PARALLEL, default
12): sequentially they would take ~20 minutes. One host serves both faults of an injection point, from one
verified base deploy (the next deploy after the first fault is the second fault's verified base). The tests
below assert on the scenarios' findings, one per injection point. SPECOPS_FAULTS_DOCS=1 writes the figures
into docs/reliability.md. A deploy would also take over a provably dead holder's lock by itself; the explicit
`lock release` step (faultkit.release_dead_lock) is kept because it lets the rollback guard act at its next
tick instead of after the stale-heartbeat window (90 s), which keeps the suite inside its time budget.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.e2e.faultdocs import render_block, write_block
from tests.e2e.faultruns import (
    DISK_FULL,
    FAULTS,
    IN_A_ROW,
    POINTS,
    SMALL_BASE_DIR,
    Body,
    Finding,
    deploys_in_a_row,
    disk_full,
    faults_at,
    injection_name,
    mount_small_base_dir,
    on_a_fresh_host,
)
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e

INJECTIONS = [injection_name(fault, point) for fault in FAULTS for point in POINTS]


@pytest.fixture(scope="module")
def findings(testhost_session: None, host_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Finding]:
    """Run every scenario once, in parallel, each on its own host; name -> finding."""
    root = tmp_path_factory.mktemp("faults")
    jobs: list[tuple[list[str], Body, str, Callable[[TestHost], None] | None]] = [
        ([injection_name(fault, point) for fault in FAULTS], faults_at(point), "/opt/specops", None) for point in POINTS
    ]
    jobs += [([IN_A_ROW], deploys_in_a_row, "/opt/specops", None),
             ([DISK_FULL], disk_full, SMALL_BASE_DIR, mount_small_base_dir)]  # fmt: skip
    began = time.monotonic()
    with ThreadPoolExecutor(max_workers=int(os.environ.get("SPECOPS_FAULTS_PARALLEL", "12"))) as pool:
        futures = [pool.submit(on_a_fresh_host, names, host_venv, root / f"s{number}", body, base, before)
                   for number, (names, body, base, before) in enumerate(jobs)]  # fmt: skip
    results = {name: finding for future in futures for name, finding in future.result().items()}
    wall = time.monotonic() - began
    points = {name: results[name] for name in INJECTIONS}
    block = render_block(points, {DISK_FULL: results[DISK_FULL], IN_A_ROW: results[IN_A_ROW]}, wall)
    print(f"\n{block}")
    if os.environ.get("SPECOPS_FAULTS_DOCS") == "1":
        write_block(block)
    return results


@pytest.mark.parametrize("injection", INJECTIONS)
def test_after_the_fault_a_verified_release_serves_and_the_next_deploy_succeeds(
    findings: dict[str, Finding], injection: str
) -> None:
    finding = findings[injection]
    assert finding.ok, f"{injection}: {finding.problems} ({finding.facts})"
    assert finding.facts.get("serving") in {"previous release", "new release"}


def test_a_full_disk_mid_push_is_a_clean_error_and_leaves_nothing_behind(findings: dict[str, Finding]) -> None:
    finding = findings[DISK_FULL]
    assert finding.ok, f"{finding.problems} ({finding.facts})"


def test_ten_deploys_in_a_row_to_one_host_all_succeed(findings: dict[str, Finding]) -> None:
    finding = findings[IN_A_ROW]
    assert finding.ok, f"{finding.problems} ({finding.facts})"
    assert finding.facts.get("exits") == [0] * 10

"""Readiness and the smoke gate end to end: a real test host, the test engine under a specops-rendered unit,
listening on 127.0.0.1 ONLY - so every HTTP request rides the SSH connection (open_tunnel), real journald,
real systemd state.

What an operator would see: the patched DDTREE build becomes ready and `specops smoke HOST` passes; the
unpatched build comes up "healthy" but the smoke gate fails on `!!!!` and accept length 1.0 and names the
feature-dim mismatch; without FFmpeg the wait fails within seconds (not the profile's 20 minutes), naming
torchcodec and the FFmpeg majors it needs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from specops.config.loader import Target
from specops.engine.readiness import Readiness, journal_position, wait_ready
from specops.host.base import Host
from specops.host.ssh.connection import connect
from tests.testbed.drift import remove_ffmpeg_libs
from tests.testbed.engine import BUILD_PYTHON, DDTREE_PATCH, copy_build
from tests.testbed.engine.local import http_get
from tests.testbed.staging import install_build, install_models, install_unit, inventory_toml, resolve_target
from tests.testbed.testhost import TestHost
from tests.unit.clirun import run_cli

pytestmark = pytest.mark.e2e

Started = tuple[Target, Host, Readiness, float]
SMOKE_TOKENS = 64


@pytest.fixture
def start_engine(
    testhost: TestHost, host_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[Path], Started]]:
    """Stage models + build + unit (engine on 127.0.0.1 only), connect over SSH, start it, wait_ready."""
    hosts: list[Host] = []

    def start(build: Path) -> Started:
        home = tmp_path / "home"
        (home / ".ssh").mkdir(parents=True, exist_ok=True)
        (home / ".ssh" / "config").write_text(testhost.ssh_config_block(testhost.name))
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.chdir(tmp_path)
        install_models(testhost, tmp_path)
        install_build(testhost, build, "r1")
        toml = inventory_toml(testhost, host_venv / "bin" / "python").replace(
            'listen = "0.0.0.0"', 'listen = "127.0.0.1"'
        )
        # 64 tokens keep the unpatched build's crawl (8 tok/s in the test engine) to seconds per smoke run
        toml += f"\n[hosts.{testhost.name}.overrides.ddtree.smoke]\nmax_new_tokens = {SMOKE_TOKENS}\n"
        target = resolve_target(tmp_path, toml, testhost.name)
        unit = install_unit(testhost, target)
        host = connect(target.host)
        hosts.append(host)
        since = journal_position(host)
        started = time.monotonic()
        host.run(["systemctl", "start", unit], check=True)
        readiness = wait_ready(host, target.host, target.profile, since_cursor_or_time=since)
        return target, host, readiness, time.monotonic() - started

    yield start
    for host in hosts:
        host.close()


def test_patched_build_is_ready_through_the_tunnel_and_smoke_passes(
    start_engine: Callable[[Path], Started], testhost: TestHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, readiness, _ = start_engine(copy_build(tmp_path / "patched", [DDTREE_PATCH]))
    assert readiness.ok, readiness.to_json()
    assert readiness.phase == "ready" and readiness.cause is None and readiness.restarts == 0
    assert http_get(f"http://{testhost.ip}:30000/health")[0] == 0  # not reachable from outside: tunnel only
    result = run_cli(capsys, "smoke", testhost.name, "--json")
    assert result.code == 0, result.out + result.err
    document = json.loads(result.out)
    assert document["passed"] is True
    assert document["figures"]["speculative_algorithm"] == "DDTREE"
    assert document["figures"]["accept_length"] > 2 and document["figures"]["completion_tokens"] == SMOKE_TOKENS
    table = run_cli(capsys, "smoke", testhost.name)
    assert table.code == 0 and "smoke passed" in table.out and "tokens-per-s" in table.out


def test_unpatched_build_passes_readiness_but_fails_smoke_naming_the_mismatch(
    start_engine: Callable[[Path], Started], testhost: TestHost, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, readiness, _ = start_engine(BUILD_PYTHON)
    assert readiness.ok, readiness.to_json()
    assert [problem.signature.id for problem in readiness.problems] == ["dflash-feature-mismatch"], readiness.to_json()
    result = run_cli(capsys, "smoke", testhost.name, "--json")
    assert result.code == 1, result.out + result.err
    document = json.loads(result.out)
    failed = {gate["id"] for gate in document["gates"] if not gate["ok"]}
    assert {"output", "accept-length"} <= failed, document
    assert document["figures"]["text_head"].startswith("!!!!!!!!"), document
    assert document["cause"]["id"] == "dflash-feature-mismatch", document
    table = run_cli(capsys, "smoke", testhost.name)
    assert table.code == 1, table.out + table.err
    assert "smoke FAILED" in table.out and "cause: the draft gets the wrong hidden-state width" in table.out


def test_without_ffmpeg_readiness_fails_fast_naming_torchcodec_and_the_ffmpeg_major(
    start_engine: Callable[[Path], Started], testhost: TestHost, tmp_path: Path
) -> None:
    assert remove_ffmpeg_libs(testhost)
    target, _, readiness, seconds = start_engine(copy_build(tmp_path / "patched", [DDTREE_PATCH]))
    assert not readiness.ok
    assert seconds < 60 < target.profile.readiness.timeout_s  # fails on the traceback, not at the deadline
    assert readiness.cause is not None and readiness.cause.signature.id == "torchcodec-ffmpeg"
    assert "it needs FFmpeg 4, 5, 6, 7 or 8 libraries" in readiness.reason
    assert "libavutil.so.57" in readiness.cause.details["missing"]


def test_smoke_on_an_unreachable_host_exits_4(testhost: TestHost, host_venv: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    block = testhost.ssh_config_block(testhost.name).replace(f"HostName {testhost.ip}", "HostName 127.0.0.1")
    (home / ".ssh" / "config").write_text(block + "    Port 9\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specops.toml").write_text(inventory_toml(testhost, host_venv / "bin" / "python"))
    result = run_cli(capsys, "smoke", testhost.name)
    assert result.code == 4, result.out + result.err
    assert "connection refused" in result.err

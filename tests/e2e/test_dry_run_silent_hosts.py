"""`deploy --dry-run` on a real test host beside a silent and a refusing loopback host, through the real CLI and
real SSH: the real host's plan is printed, each other host gets its line, the run exits 4 after ONE connect
timeout (ConnectTimeout of ~/.ssh/config). Only loopback and the test host's own address are contacted."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.e2e.deployscene import UNPATCHED, make_scene
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e
CONNECT_TIMEOUT_S = 3


def test_a_silent_host_does_not_stop_the_dry_run_of_the_others(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    scene = make_scene(testhost, host_venv, tmp_path, capsys, monkeypatch)
    with socket.create_server(("127.0.0.1", 0)) as silent, socket.create_server(("127.0.0.1", 0)) as closed:
        silent_port, refused_port = silent.getsockname()[1], closed.getsockname()[1]
        closed.close()  # nothing listens there any more: connection refused
        config = tmp_path / "specops.toml"
        real = config.read_text()
        copies = [real.replace(f"[hosts.{testhost.name}]", f"[hosts.{name}]", 1)
                  .replace(f'ssh = "{testhost.name}"', f'ssh = "root@127.0.0.1:{port}"', 1)
                  for name, port in (("silent", silent_port), ("refused", refused_port))]  # fmt: skip
        config.write_text("\n".join([real, *copies]))
        ssh_config = tmp_path / "home" / ".ssh" / "config"
        ssh_config.write_text(f"Host *\n    ConnectTimeout {CONNECT_TIMEOUT_S}\n" + ssh_config.read_text())
        began = time.monotonic()
        result = scene.cli("deploy", "silent", testhost.name, "refused", "--build", str(UNPATCHED), "--dry-run")
        elapsed = time.monotonic() - began
    assert result.code == 4, result.out + result.err
    assert f"{testhost.name}: would deploy " in result.out
    assert (f"silent: unreachable (exit 4): root@127.0.0.1:{silent_port}: SSH handshake failed: no SSH handshake "
            f"within {CONNECT_TIMEOUT_S}s") in result.out  # fmt: skip
    assert f"refused: unreachable (exit 4): root@127.0.0.1:{refused_port}: connection refused" in result.out
    assert result.out.rstrip().endswith("dry run: nothing was changed (2 of 3 hosts could not be read)")
    assert testhost.exec(["test", "-e", "/run/specops/lock"], check=False).returncode != 0
    print(f"\n[dry run] 3 hosts, one silent: {elapsed:.1f}s (ConnectTimeout {CONNECT_TIMEOUT_S}s)")
    assert elapsed < 4 * CONNECT_TIMEOUT_S  # staging included; never a timeout per host plus the plan

"""`--reap` cannot be steered into stopping a process that is not the old engine's: the host's inspect script
runs here for real (the nvidia-smi double on PATH, a `systemctl` double that knows the unit's invocation), and
real processes try to pass for, or to frame another process as, an orphan of the engine."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specops.commands.engine_stop import inspect_argv, reap_argv
from specops.host.local import LocalHost
from specops.probe.gpu_holders import GpuVerdict, judge, parse_inspect
from tests.testbed.gpu import NVIDIA_SMI

UNIT = "sglang.service"
INVOCATION = "5e1f0c0ffee0000000000000000000aa"  # the unit's run, as the systemctl double shows it
SYSTEMCTL = f"""#!/bin/sh
[ "$*" = "show -p InvocationID --value {UNIT}" ] && echo {INVOCATION}
"""


class Host:
    """This machine as the host: GPU memory held through the double's holders folder, a service dir in tmp."""

    def __init__(self, root: Path) -> None:
        self.holders, self.service_dir = root / "holders", root / "srv" / "sglang"
        self.release = self.service_dir / "releases" / "20261130T120000Z-abc"
        self.release.mkdir(parents=True)
        self.holders.mkdir()
        self.pids: list[int] = []

    def hold(self, pid: int, gpu: int) -> None:
        start = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        record = {"pid": pid, "start": start, "gpus": [gpu], "used_memory": 30000, "name": "python"}
        (self.holders / f"{pid}.json").write_text(json.dumps(record))
        self.pids.append(pid)

    def verdict(self) -> GpuVerdict:
        """The engine's user is whoever runs the tests: root in CI, any user on a developer's machine."""
        text = LocalHost().run(inspect_argv(UNIT, pwd.getpwuid(os.getuid()).pw_name), timeout=30).text
        return judge(parse_inspect(text), UNIT, str(self.service_dir), {0})

    def daemon(self, cwd: Path, env: dict[str, str]) -> int:
        """A `sleep` reparented to PID 1 (its starting shell exits), as a daemonised job or a leaked child is."""
        pidfile = cwd.parent / f"pid-{len(self.pids)}"
        script = 'cd "$1" && sleep 60 >/dev/null 2>&1 & echo $! > "$2"'
        subprocess.run(["sh", "-c", script, "sh", str(cwd), str(pidfile)], env=env, check=True)
        pid = int(pidfile.read_text())
        self.pids.append(pid)
        return pid


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Host]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").symlink_to(NVIDIA_SMI)
    (bin_dir / "systemctl").write_text(SYSTEMCTL)
    (bin_dir / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("SPECOPS_NVIDIA_SMI_SCENARIO", "h200x2-580")
    monkeypatch.setenv("SPECOPS_NVIDIA_SMI_HOLDERS", str(tmp_path / "holders"))
    monkeypatch.delenv("INVOCATION_ID", raising=False)
    scene = Host(tmp_path)
    yield scene
    for pid in scene.pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _reparented(pid: int) -> None:
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1] != "1":
        if time.monotonic() > deadline:
            pytest.skip("a subreaper adopts orphans on this machine: no process here reaches PID 1")
        time.sleep(0.02)


def test_an_argv_spelling_another_processs_record_never_frames_it_as_an_orphan(host: Host) -> None:
    team_b = host.release.parents[3] / "team-b"
    team_b.mkdir()
    victim = subprocess.Popen(["sleep", "60"], cwd=team_b)  # another team's GPU job: not ours, never reaped
    host.pids.append(victim.pid)
    host.hold(victim.pid, gpu=0)
    start = Path(f"/proc/{victim.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    stat = f"{victim.pid} (sleep) S 1 " + " ".join(["0"] * 17) + f" {start} 0"
    forged = (f"x\n@proc {victim.pid}\nstat {stat}\nexe /usr/bin/sleep\ncwd {host.release}\ncgroup 0::/user.slice;\n"
              f"cmdline sleep\n@proc\0{victim.pid}\0stat\0{stat}\0")  # fmt: skip
    attacker = subprocess.Popen(["sh", "-c", "sleep 60", forged.replace("\0", "\n")], cwd=host.release)
    host.pids.append(attacker.pid)
    host.hold(attacker.pid, gpu=1)  # listed too (its record comes after the victim's), not on the unit's GPU
    (holder,) = host.verdict().holders
    assert holder.pid == victim.pid
    assert holder.orphan is False, holder.why
    assert f"parent pid {os.getpid()}" in holder.why and f"cwd {team_b}" in holder.why


def test_a_process_merely_started_in_a_release_is_not_reapable(host: Host) -> None:
    """A user's own `nohup python -m sglang.launch_server` from a release: reparented, cwd in the release,
    not another service's cgroup, even root's; without the unit's invocation it is not the engine's."""
    stray = host.daemon(host.release, {**os.environ, "INVOCATION_ID": "0" * 32})  # some other run of something
    _reparented(stray)
    host.hold(stray, gpu=0)
    (holder,) = host.verdict().holders
    assert holder.pid == stray and holder.orphan is False, holder.why
    assert f"cwd {host.release} (a release of {UNIT})" in holder.why
    assert f"no invocation of {UNIT} in its environment" in holder.why


def test_the_engines_own_orphan_is_proven_by_its_invocation_and_reaped(host: Host) -> None:
    orphan = host.daemon(host.release, {**os.environ, "INVOCATION_ID": INVOCATION})  # as systemd started it
    _reparented(orphan)
    host.hold(orphan, gpu=0)
    (holder,) = host.verdict().holders
    assert (holder.pid, holder.orphan, holder.invocation) == (orphan, True, INVOCATION), holder.why
    local = LocalHost()
    local.run(reap_argv([(orphan, holder.start, "f" * 32)]), timeout=30)  # no longer that run's: left alone
    assert Path(f"/proc/{orphan}").exists()
    out = local.run(reap_argv([(orphan, holder.start, holder.invocation)]), timeout=30).text
    assert out == f"stopped {orphan}\n" and host.verdict().holders == []

"""The stop before a restart: the drain watched through /metrics, the SIGKILL when the budget runs out, and
the GPUs proven free (orphans reaped only with --reap; anyone else's process never)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from specops.commands.engine_stop import inspect_argv, kill_argv, reap_argv, state_argv, stop_argv, stop_wait_argv
from specops.config.inventory import HostSpec
from specops.config.profile import Drain, Profile
from specops.events import Recorder
from specops.host.local import LocalHost
from specops.host.recording import RecordingHost, reply
from specops.ops.engine_stop import GpusBusy, _Clock, drain_and_stop, free_gpus, stop_engine
from specops.probe.gpu_holders import parse_inspect
from tests.testbed.gpu import NVIDIA_SMI
from tests.unit.engine.fakes import CannedServer
from tests.unit.probe.inspectfake import INVOCATION, inspect_text, record

SPEC = HostSpec(name="gpu1", ssh="gpu1", python="/opt/venv/bin/python", model_path="/srv/m", gpus="0")
UNIT = SPEC.unit_name
RELEASE = "/opt/specops/sglang/releases/20261130T120000Z-abc"
ACTIVE = reply("ActiveState=deactivating\nSubState=stop-sigterm\nMainPID=42\n")
INACTIVE = reply("ActiveState=inactive\nSubState=dead\nMainPID=0\n")
FREE = reply("@gpus\n0, GPU-aaa, 0\n1, GPU-bbb, 0\n@apps\n@unit\n@end\n")


class FakeClock(_Clock):
    def __init__(self) -> None:
        self.t = 0.0
        super().__init__(now=lambda: self.t, sleep=self.advance)

    def advance(self, seconds: float) -> None:
        self.t += seconds


def profile(budget: int) -> Profile:
    return Profile(name="p", algorithm="NEXTN", drain=Drain(timeout_s=budget))


def metrics(running: int, queued: int = 0) -> tuple[int, bytes]:
    text = (
        f'sglang:num_running_reqs{{model_name="q"}} {running}.0\nsglang:num_queue_reqs{{model_name="q"}} {queued}.0\n'
    )
    return 200, text.encode()


def holder_block(pid: int, ppid: int, cwd: str, cgroup: str) -> str:
    return record(pid, ppid, cwd, cgroup)


def busy(*blocks: tuple[int, int, str, str]) -> bytes:
    apps = [f"{pid}, 60000, GPU-aaa" for pid, *_ in blocks]
    procs = [holder_block(*block) for block in blocks]
    return inspect_text([f"0, GPU-aaa, {60000 * len(blocks)}"], apps, [], procs).encode()


def host(server: CannedServer, *states: object) -> RecordingHost:
    recorded = RecordingHost("gpu1", tunnel_factory=server.tunnel)
    recorded.script(stop_argv(UNIT), reply())
    recorded.script(stop_wait_argv(UNIT), reply())
    recorded.script(kill_argv(UNIT), reply())
    recorded.script(state_argv(UNIT), *states)  # type: ignore[arg-type]
    return recorded


def test_the_drain_waits_for_the_running_request_and_shows_the_count() -> None:
    server = CannedServer().add("GET", "/metrics", metrics(1), metrics(1), metrics(0))
    recorded, events = host(server, ACTIVE, ACTIVE, INACTIVE), Recorder()
    result = drain_and_stop(recorded, SPEC, profile(60), events, FakeClock())
    assert (result.was_running, result.killed, result.cut) == (True, False, 0)
    assert result.seconds == pytest.approx(0.2)  # checked every 0.1 s at first
    assert result.at_start is not None and result.at_start.running == 1
    assert recorded.commands[0] == tuple(stop_argv(UNIT))  # metrics first (a tunnel), then SIGTERM
    assert kill_argv(UNIT) not in [list(argv) for argv in recorded.commands]
    assert (
        "stopping sglang.service: 1 running, 0 queued; up to 60 s for running requests to finish" in events.messages()
    )
    assert "draining: 1 running, 0 queued (0 of 60 s)" in events.messages()
    assert events.messages()[-1] == "drained in 0.2 s (1 running, 0 queued at the stop)"
    assert result.to_json()["at_start"] == {"running": 1, "queued": 0}


def test_a_budget_shorter_than_the_request_kills_and_says_how_many_were_cut() -> None:
    server = CannedServer().add("GET", "/metrics", metrics(1, 2))
    recorded, events = host(server, ACTIVE), Recorder()
    result = drain_and_stop(recorded, SPEC, profile(3), events, FakeClock())
    assert (result.killed, result.cut) == (True, 3)
    assert [list(argv) for argv in recorded.commands[-2:]] == [kill_argv(UNIT), stop_wait_argv(UNIT)]
    assert events.messages()[-1] == "drain budget of 3 s ran out: 3 requests cut (SIGKILL)"
    assert events.events[-1].level == "warn"


def test_a_stopped_engine_has_nothing_to_drain() -> None:
    server = CannedServer(refuse=True)
    recorded, events = host(server, INACTIVE), Recorder()
    result = drain_and_stop(recorded, SPEC, profile(60), events, FakeClock())
    assert (result.was_running, result.at_start, result.killed) == (False, None, False)
    assert events.messages() == []


def test_an_orphan_stops_the_start_naming_its_pid_and_the_fix() -> None:
    recorded = RecordingHost("gpu1").script(inspect_argv(UNIT), reply(busy((4242, 1, RELEASE, "/escaped"))))
    with pytest.raises(GpusBusy) as stopped:
        free_gpus(recorded, SPEC, Recorder(), reap=False, clock=FakeClock())
    assert "pid 4242 (python -m x) holds 60000 MiB on GPU 0: orphan of the old engine" in stopped.value.message
    assert "--reap" in stopped.value.hint and "kill 4242" in stopped.value.hint
    assert len(recorded.commands) == 1  # not in the unit's cgroup: waiting would not make it go


def test_reap_stops_the_orphan_by_pid_and_start_time_then_finds_the_gpus_free() -> None:
    recorded = RecordingHost("gpu1").script(inspect_argv(UNIT), reply(busy((4242, 1, RELEASE, "/escaped"))), FREE)
    recorded.script(["sh", "-c"], reply("killed 4242\n"))
    events = Recorder()
    result = free_gpus(recorded, SPEC, events, reap=True, clock=FakeClock())
    assert [holder.pid for holder in result.reaped] == [4242]
    assert tuple(reap_argv([(4242, "4711", INVOCATION)])) in recorded.commands
    assert any(message.startswith("reaping pid 4242") for message in events.messages())


def test_reap_never_touches_a_process_that_is_not_the_units() -> None:
    foreign = (5151, 1, "/home/alice", "/user.slice/session-2.scope")
    recorded = RecordingHost("gpu1").script(inspect_argv(UNIT), reply(busy((4242, 1, RELEASE, "/escaped"), foreign)))
    with pytest.raises(GpusBusy) as stopped:
        free_gpus(recorded, SPEC, Recorder(), reap=True, clock=FakeClock())
    assert [argv for argv in recorded.commands if argv[3:4] == ("specops-reap",)] == []
    assert "pid 5151" in stopped.value.message and "not the unit's" in stopped.value.message
    assert "specops never stops it" in stopped.value.hint


def test_leftovers_in_the_units_cgroup_are_waited_for() -> None:
    left = inspect_text(["0, GPU-aaa, 0"], [], [77], [holder_block(77, 1, RELEASE, f"/system.slice/{UNIT}")])
    recorded = RecordingHost("gpu1").script(inspect_argv(UNIT), reply(left), reply(left), FREE)
    clock = FakeClock()
    result = free_gpus(recorded, SPEC, Recorder(), reap=False, clock=clock)
    assert (len(recorded.commands), clock.t) == (3, pytest.approx(0.2))
    assert result.reaped == []


def test_stop_engine_records_both_halves() -> None:
    server = CannedServer(refuse=True)
    recorded = host(server, INACTIVE).script(inspect_argv(UNIT), FREE)
    result = stop_engine(recorded, SPEC, profile(60), Recorder(), clock=FakeClock())
    assert result.to_json()["drain"]["was_running"] is False
    assert result.to_json()["gpus"] == {"checked": True, "seconds": 0.0, "reaped": []}


def _start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def test_the_host_scripts_really_inspect_and_reap_on_this_machine(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The shell scripts as the host runs them: the nvidia-smi double on PATH, a process holding GPU 0."""
    bin_dir, holders = tmp_path / "bin", tmp_path / "holders"
    bin_dir.mkdir()
    holders.mkdir()
    (bin_dir / "nvidia-smi").symlink_to(NVIDIA_SMI)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("SPECOPS_NVIDIA_SMI_SCENARIO", "h200x2-580")
    monkeypatch.setenv("SPECOPS_NVIDIA_SMI_HOLDERS", str(holders))
    holder = subprocess.Popen(["sleep", "60"], cwd=tmp_path, env={**os.environ, "INVOCATION_ID": INVOCATION})
    try:
        start = _start_time(holder.pid)
        record = {"pid": holder.pid, "start": start, "gpus": [0], "used_memory": 1234, "name": "sleep"}
        (holders / f"{holder.pid}.json").write_text(json.dumps(record))
        local = LocalHost()
        snapshot = parse_inspect(local.run(inspect_argv(UNIT), timeout=30).text)
        assert snapshot.apps == [(holder.pid, 1234, next(u for u, i in snapshot.uuids.items() if i == 0))]
        proc = snapshot.procs[holder.pid]
        assert (proc.ppid, proc.start, proc.cwd, proc.cmdline) == (os.getpid(), start, str(tmp_path), "sleep 60")
        assert (proc.invocation, proc.uids) == (INVOCATION, f"{os.getuid()} " * 3 + str(os.getuid()))
        local.run(
            reap_argv([(holder.pid, "1", INVOCATION)]), timeout=30
        )  # another start time: a reused pid, left alone
        assert holder.poll() is None
        out = local.run(reap_argv([(holder.pid, start, INVOCATION)]), timeout=30).text
        assert holder.wait(timeout=10) == -15 and out == f"stopped {holder.pid}\n"
        assert parse_inspect(local.run(inspect_argv(UNIT), timeout=30).text).apps == []
    finally:
        holder.kill()
        holder.wait()


RENDEZVOUS_SMI = r"""#!/bin/sh
# Each query marks that it started, then waits (up to 20 s: a busy machine may start the second one late) for the
# other one's mark: run one after the other, the first never sees the second and says so.
query=${1%%=*}; marks=$(dirname "$0")/marks
touch "$marks/${query#--}"
other=query-compute-apps; [ "$query" = --query-compute-apps ] && other=query-gpu
i=0; while [ ! -e "$marks/$other" ] && [ "$i" -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$marks/$other" ] || { echo "$query ran alone"; exit 0; }
case $query in
  --query-gpu) echo "0, GPU-aaaa, 100" ;;
  *) echo "4242, 100, GPU-aaaa" ;;
esac
"""


def test_the_inspection_asks_nvidia_smi_its_two_questions_side_by_side(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Each nvidia-smi call can take a second on a driver without persistence mode: the GPUs and the compute apps
    are asked for at once, and each answer still lands in its own section."""
    (tmp_path / "marks").mkdir()
    fake = tmp_path / "nvidia-smi"
    fake.write_text(RENDEZVOUS_SMI)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    text = LocalHost().run(inspect_argv(UNIT), timeout=30).text
    assert text.split("@unit")[0] == "@gpus\n0, GPU-aaaa, 100\n@apps\n4242, 100, GPU-aaaa\n", text
    snapshot = parse_inspect(text)
    assert snapshot.apps == [(4242, 100, "GPU-aaaa")] and snapshot.uuids == {"GPU-aaaa": 0}

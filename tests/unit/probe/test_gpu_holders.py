"""Which processes still hold the unit's GPUs, and which of them are proven orphans of the old engine."""

from __future__ import annotations

from specops.probe.gpu_holders import gpu_indexes, is_orphan, judge, parse_inspect

UNIT, SERVICE_DIR = "sglang.service", "/opt/specops/sglang"
RELEASE = f"{SERVICE_DIR}/releases/20261130T120000Z-abc"


def stat(pid: int, ppid: int, start: int = 777, comm: str = "python3") -> str:
    """A /proc/PID/stat line (the command name may hold spaces and parentheses)."""
    after = ["S", str(ppid), *["0"] * 17, str(start), "0"]
    return f"stat {pid} ({comm}) {' '.join(after)}"


def block(pid: int, ppid: int, cwd: str, cgroup: str, cmdline: str = "python -m sglang.srt.scheduler") -> str:
    return "\n".join([f"@proc {pid}", stat(pid, ppid, comm="sglang::sched ) x"), "exe /venv/bin/python3.11",
                      f"cwd {cwd}", f"cgroup 0::{cgroup};", f"cmdline {cmdline} "])  # fmt: skip


def inspect(apps: list[str], unit: list[int], blocks: list[str], used: tuple[int, int] = (60000, 0)) -> str:
    gpus = [f"0, GPU-aaa, {used[0]}", f"1, GPU-bbb, {used[1]}"]
    return "\n".join(["@gpus", *gpus, "@apps", *apps, "@unit", *map(str, unit), *blocks, "@end"]) + "\n"


def test_an_escaped_scheduler_of_the_release_is_an_orphan_with_its_evidence() -> None:
    text = inspect(["4242, 60000, GPU-aaa"], [], [block(4242, 1, RELEASE, "/specops-testbed-escaped")])
    verdict = judge(parse_inspect(text), UNIT, SERVICE_DIR, {0})
    assert not verdict.free and verdict.unit_left == [] and verdict.unexplained == []
    (holder,) = verdict.holders
    assert (holder.pid, holder.mib, holder.gpus, holder.orphan, holder.start) == (4242, 60000, (0,), True, "777")
    assert holder.command == "python -m sglang.srt.scheduler"
    assert "reparented to PID 1" in holder.why and f"cwd {RELEASE} (a release of sglang.service)" in holder.why
    assert holder.describe().startswith("pid 4242 (python -m sglang.srt.scheduler) holds 60000 MiB on GPU 0: "
                                        "orphan of the old engine")  # fmt: skip


def test_someone_elses_processes_are_never_orphans() -> None:
    cases = {
        "another team's reparented python": (1, "/home/alice/job", "/user.slice/user-1000.slice/session-3.scope"),
        "a child of a live parent in our release": (900, RELEASE, "/specops-testbed-escaped"),
        "another service started in our release dir": (1, RELEASE, "/system.slice/other-llm.service"),
        "a release of another service": (1, "/opt/specops/sglang-b/releases/x", "/x"),
    }
    for case, (ppid, cwd, cgroup) in cases.items():
        text = inspect(["5000, 30000, GPU-aaa"], [], [block(5000, ppid, cwd, cgroup)])
        (holder,) = judge(parse_inspect(text), UNIT, SERVICE_DIR, None).holders
        assert holder.orphan is False, case
        assert "not the unit's" in holder.describe(), case


def test_a_process_invisible_on_the_host_is_named_but_not_judged_an_orphan() -> None:
    verdict = judge(parse_inspect(inspect(["48213, 61442, GPU-aaa"], [], [], used=(61442, 0))), UNIT, SERVICE_DIR, None)
    (holder,) = verdict.holders
    assert (holder.pid, holder.orphan, holder.command) == (48213, False, "")
    assert "another PID namespace" in holder.why


def test_only_the_units_gpus_count() -> None:
    text = inspect(["5000, 30000, GPU-bbb"], [], [block(5000, 1, "/home/bob", "/x")], used=(0, 30000))
    assert judge(parse_inspect(text), UNIT, SERVICE_DIR, {0}).free
    assert not judge(parse_inspect(text), UNIT, SERVICE_DIR, {1}).free
    assert not judge(parse_inspect(text), UNIT, SERVICE_DIR, None).free  # no gpus set: every GPU is the unit's


def test_processes_left_in_the_units_cgroup_and_memory_no_process_explains() -> None:
    text = inspect([], [31, 32], [block(31, 1, RELEASE, f"/system.slice/{UNIT}")], used=(20000, 0))
    verdict = judge(parse_inspect(text), UNIT, SERVICE_DIR, {0})
    assert [proc.pid for proc in verdict.unit_left] == [31]  # 32 exited between the two reads
    assert verdict.unexplained == ["GPU 0: 20000 MiB used by no listed process"]
    small = inspect([], [], [], used=(900, 0))  # driver overhead below the slack: baseline
    assert judge(parse_inspect(small), UNIT, SERVICE_DIR, {0}).free


def test_still_in_the_units_cgroup_counts_as_the_units_own() -> None:
    proc = parse_inspect(inspect([], [7], [block(7, 1, "/", f"/system.slice/{UNIT}")])).procs[7]
    assert is_orphan(proc, UNIT, SERVICE_DIR)[0] is False  # cwd is not a release: no proof
    proc = parse_inspect(inspect([], [7], [block(7, 1, RELEASE, f"/system.slice/{UNIT}/scheduler")])).procs[7]
    assert is_orphan(proc, UNIT, SERVICE_DIR)[0] is True


def test_a_host_without_nvidia_smi_has_nothing_to_judge_but_its_cgroup() -> None:
    snapshot = parse_inspect("@nogpu\n@unit\n@end\n")
    assert snapshot.has_gpus is False
    assert judge(snapshot, UNIT, SERVICE_DIR, None).free


def test_gpu_indexes_from_the_hosts_gpus_setting() -> None:
    assert gpu_indexes("0,1") == {0, 1}
    assert gpu_indexes(" 3 ") == {3}
    assert gpu_indexes(None) is None
    assert gpu_indexes("GPU-5f1c0000-8e2b") is None  # uuids: judge every GPU rather than guess

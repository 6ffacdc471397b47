"""Which processes still hold the unit's GPUs, and which of them are proven orphans of the old engine."""

from __future__ import annotations

import pytest

from specops.probe.gpu_holders import InspectError, gpu_indexes, is_orphan, judge, parse_inspect
from tests.unit.probe.inspectfake import INVOCATION, inspect_text, record

UNIT, SERVICE_DIR = "sglang.service", "/opt/specops/sglang"
RELEASE = f"{SERVICE_DIR}/releases/20261130T120000Z-abc"


def block(pid: int, ppid: int, cwd: str, cgroup: str, cmdline: str = "python -m sglang.srt.scheduler",
          **facts: object) -> str:  # fmt: skip
    return record(pid, ppid, cwd, cgroup, cmdline, start=777, comm="sglang::sched ) x", **facts)  # type: ignore[arg-type]


def inspect(apps: list[str], unit: list[int], blocks: list[str], used: tuple[int, int] = (60000, 0),
            **engine: object) -> str:  # fmt: skip
    return inspect_text([f"0, GPU-aaa, {used[0]}", f"1, GPU-bbb, {used[1]}"], apps, unit, blocks, **engine)  # type: ignore[arg-type]


def test_an_escaped_scheduler_of_the_release_is_an_orphan_with_its_evidence() -> None:
    text = inspect(["4242, 60000, GPU-aaa"], [], [block(4242, 1, RELEASE, "/specops-testbed-escaped")])
    verdict = judge(parse_inspect(text), UNIT, SERVICE_DIR, {0})
    assert not verdict.free and verdict.unit_left == [] and verdict.unexplained == []
    (holder,) = verdict.holders
    assert (holder.pid, holder.mib, holder.gpus, holder.orphan, holder.start) == (4242, 60000, (0,), True, "777")
    assert holder.command == "python -m sglang.srt.scheduler"
    assert "reparented to PID 1" in holder.why and f"cwd {RELEASE} (a release of sglang.service)" in holder.why
    assert f"invocation {INVOCATION} of sglang.service (its last run)" in holder.why and holder.invocation == INVOCATION
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
    assert is_orphan(proc, UNIT, SERVICE_DIR, "0")[0] is False  # cwd is not a release: no proof
    proc = parse_inspect(inspect([], [7], [block(7, 1, RELEASE, f"/system.slice/{UNIT}/scheduler")])).procs[7]
    assert is_orphan(proc, UNIT, SERVICE_DIR, "0")[0] is True


def test_a_process_merely_started_in_a_release_is_never_the_engines_orphan() -> None:
    """Any local user may run a process in a release (`nohup python -m sglang.launch_server` from `current`),
    or set INVOCATION_ID in its own environment: only the unit's invocation as the host knows it, carried by
    a process of the engine's user, ties it to the engine."""
    cases = {
        "no INVOCATION_ID at all": ({"invocation": "", "run": ""}, 0),
        "an invocation the host never gave this unit": ({"invocation": "f" * 32, "run": ""}, 0),
        "another user's process with the unit's invocation": ({"uid": 1000}, 0),
        "the engine runs as a user, the process is root's": ({}, 998),
    }
    for case, (facts, engine_uid) in cases.items():
        text = inspect(["5000, 30000, GPU-aaa"], [], [block(5000, 1, RELEASE, "/user.slice/session-3.scope", **facts)],
                       engine_uid=engine_uid)  # fmt: skip
        (holder,) = judge(parse_inspect(text), UNIT, SERVICE_DIR, None).holders
        assert holder.orphan is False and holder.invocation == "", case
        assert "not the unit's" in holder.describe(), case


def test_an_orphan_of_an_earlier_run_is_proven_by_the_journal() -> None:
    text = inspect(["4242, 60000, GPU-aaa"], [], [block(4242, 1, RELEASE, "/escaped", invocation="a" * 32,
                                                        run="journal")])  # fmt: skip
    (holder,) = judge(parse_inspect(text), UNIT, SERVICE_DIR, None).holders
    assert holder.orphan is True and holder.invocation == "a" * 32
    assert f"invocation {'a' * 32} of sglang.service (a run in the journal)" in holder.why


def test_an_argv_that_spells_another_processs_record_stays_in_its_own_command_line() -> None:
    forged = "x\n@proc 5000\nstat 5000 (python3) S 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 777 0\ncwd " + RELEASE
    text = inspect(["5000, 30000, GPU-aaa", "6000, 10, GPU-bbb"], [],
                   [block(5000, 4000, "/srv/team-b", "/system.slice/team-b.service", invocation="", run=""),
                    block(6000, 1, RELEASE, "/user.slice/x.scope", cmdline=forged)])  # fmt: skip
    snapshot = parse_inspect(text)
    assert (snapshot.procs[5000].ppid, snapshot.procs[5000].cwd) == (4000, "/srv/team-b")
    assert snapshot.procs[6000].cmdline.startswith("x\n@proc 5000")
    assert [holder.orphan for holder in judge(snapshot, UNIT, SERVICE_DIR, {0}).holders] == [False]


def test_a_pid_listed_twice_is_an_error_never_a_replacement() -> None:
    twice = inspect(
        ["5000, 30000, GPU-aaa"], [], [block(5000, 4000, "/srv/b", "/b.service"), block(5000, 1, RELEASE, "/x")]
    )
    with pytest.raises(InspectError, match="pid 5000 is listed twice"):
        parse_inspect(twice)
    for broken in (twice.replace("@end\0", ""), twice.replace("\0cwd\0", "\0where\0", 1)):
        with pytest.raises(InspectError):
            parse_inspect(broken)


def test_a_host_without_nvidia_smi_has_nothing_to_judge_but_its_cgroup() -> None:
    snapshot = parse_inspect("@nogpu\n@unit\n@engine\nuid 0\ninvocation\n@procs\n@end\0")
    assert snapshot.has_gpus is False
    assert judge(snapshot, UNIT, SERVICE_DIR, None).free


def test_gpu_indexes_from_the_hosts_gpus_setting() -> None:
    assert gpu_indexes("0,1") == {0, 1}
    assert gpu_indexes(" 3 ") == {3}
    assert gpu_indexes(None) is None
    assert gpu_indexes("GPU-5f1c0000-8e2b") is None  # uuids: judge every GPU rather than guess

"""gpu.xid on the kernel journal's Xid lines: FAIL on a reboot/reset-class Xid for a served GPU, WARN on repeating
application-class ones, SKIP (naming the group) when the login user cannot read the journal."""

from __future__ import annotations

from specops.doctor.model import Status
from specops.probe.facts_kernel import KernelLogFacts, parse_kernel_log_facts
from tests.unit.doctor.factory import HOST, context, healthy_facts, run

SMI = "0, 00000000:18:00.0, No\n1, 00000000:2A:00.0, No\n2, 00000000:3B:00.0, No\n"
T = "2026-12-03T13:52:46.118000+0000 gpu-one kernel: "
FELL_OFF_GPU2 = f"{T}NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
MMU_GPU1 = f"{T}NVRM: Xid (PCI:0000:2a:00): 31, pid=4242, name=python3, MMU Fault: ENGINE GRAPHICS\n"


def _log(journal: str, *, err: str = "", rc: int = 0) -> KernelLogFacts:
    raw = {"journal": {"found": True, "rc": rc, "out": journal, "err": err, "timed_out": False}, "method": "grep",
           "euid": 1001, "user": "deployer"}  # fmt: skip
    facts = parse_kernel_log_facts(raw, {"query_health": {"rc": 0, "out": SMI}})
    assert facts is not None
    return facts


def _check(journal: str, gpus: str | None = None, **log: object):
    host = HOST.model_copy(update={"gpus": gpus})
    return run("gpu.xid", context(healthy_facts(kernel_log=_log(journal, **log)), host=host))  # type: ignore[arg-type]


def test_a_gpu_that_fell_off_the_bus_this_boot_fails_naming_gpu_time_code_and_action() -> None:
    result = _check(FELL_OFF_GPU2, gpus="2")
    assert result.status is Status.FAIL
    assert result.summary == ("GPU 2 (0000:3b:00.0): Xid 79 (GPU has fallen off the bus) at "
                              "2026-12-03T13:52:46.118000+0000: reboot before deploying")  # fmt: skip
    assert "cold power cycle" in result.hint and "a GPU reset since then also clears it" in result.hint
    assert result.evidence[0].endswith("NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has "
                                       "fallen off the bus.")  # fmt: skip


def test_without_gpus_configured_every_gpu_is_served() -> None:
    assert _check(FELL_OFF_GPU2, gpus=None).status is Status.FAIL


def test_a_fault_on_a_gpu_the_host_does_not_serve_with_only_warns() -> None:
    result = _check(FELL_OFF_GPU2, gpus="0,1")
    assert result.status is Status.WARN and "a GPU this host does not serve with" in result.summary


def test_repeating_application_xids_on_one_gpu_warn_and_a_single_one_passes() -> None:
    once = _check(MMU_GPU1, gpus="0,1")
    assert once.status is Status.PASS and "no reboot- or reset-class Xid" in once.summary
    twice = _check(MMU_GPU1 * 2, gpus="0,1")
    assert twice.status is Status.WARN
    assert twice.summary == "application-class Xids repeat on GPU 1 (0000:2a:00.0) since boot (2 lines)"
    assert "restart it" in twice.hint


def test_a_flood_of_xid_45_is_one_evidence_line_with_its_count() -> None:
    flood = "".join(f"{T}NVRM: Xid (PCI:0000:3b:00): 45, pid=7, name=python3, Ch 00000001\n" for _ in range(300))
    result = _check(FELL_OFF_GPU2 + flood, gpus="2")
    assert result.status is Status.FAIL and len(result.evidence) == 2
    assert "Xid 45 (Preemptive cleanup, due to previous errors)" in result.evidence[1]
    assert "(300 times, last at 2026-12-03T13:52:46.118000+0000)" in result.evidence[1]


def test_no_xid_since_boot_passes() -> None:
    result = _check("", rc=1)
    assert (result.status, result.summary) == (Status.PASS, "no Xid since boot")


def test_a_login_user_who_cannot_read_the_journal_is_skipped_with_the_group_to_join() -> None:
    denied = "No journal files were opened due to insufficient permissions.\n"
    result = _check("", err=denied, rc=1)
    assert result.status is Status.SKIP
    assert "deployer may not read the kernel journal" in result.summary
    assert "`usermod -aG systemd-journal deployer`" in result.summary


def test_an_older_probe_and_a_cpu_machine_are_skipped() -> None:
    assert run("gpu.xid", context(healthy_facts(kernel_log=None))).status is Status.SKIP
    assert run("gpu.xid", context(gpu_host=False)).status is Status.SKIP

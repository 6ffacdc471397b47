"""The whole check set: output order, a healthy host is all green, a crashing check becomes ERROR."""

from __future__ import annotations

from specops.doctor.model import CheckContext, CheckResult, CheckSpec, Status
from specops.doctor.registry import all_checks, run_checks
from specops.probe.facts import PythonFacts
from tests.unit.doctor.factory import context, healthy_facts, replace

EXPECTED_ORDER = [
    "ssh.reachable",
    "ssh.privilege",
    "python.interpreter",
    "systemd.present",
    "gpu.nvml",
    "gpu.driver",
    "torch.variant",
    "gpu.count",
    "gpu.fabric",
    "gpu.ecc",
    "gpu.recovery_action",
    "gpu.mig",
    "gpu.compute_mode",
    "gpu.persistence",
    "gpu.clocks",
    "gpu.pcie",
    "cuda.driver_vs_torch",
    "gpu.arch_vs_cuda",
    "cuda.userspace_mix",
    "torchcodec.variant",
    "torchcodec.abi",
    "torchcodec.ffmpeg",
    "ffmpeg.consistency",
    "native_ext.abi",
    "sglang.version",
    "sglang.algorithm",
    "sglang.enum_stability",
    "sglang.server_args",
    "model.paths",
    "model.draft_target_dims",
    "gpu.memory_free",
    "disk.free",
    "port.free",
    "unit.managed",
    "unit.environment",
    "limits",
    "service.user",
    "root.owned",
    "gpu.xid",
]


GPU_HEALTH = EXPECTED_ORDER[EXPECTED_ORDER.index("gpu.count") : EXPECTED_ORDER.index("gpu.pcie") + 1]


def test_checks_run_in_the_documented_order() -> None:
    assert [spec.id for spec in all_checks()] == EXPECTED_ORDER


def test_every_check_is_documented_in_docs_checks_md() -> None:
    from tests.unit.doctor.factory import ROOT

    text = (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")
    missing = [check_id for check_id in EXPECTED_ORDER if f"`{check_id}`" not in text]
    assert missing == []


def test_a_healthy_ddtree_host_passes_every_check() -> None:
    results = run_checks(context(), all_checks())
    assert {r.id: r.status for r in results if r.status is not Status.PASS} == {"service.user": Status.SKIP}  # root
    assert all(r.summary and "\n" not in r.summary for r in results)


def test_a_crashing_check_becomes_error_and_the_others_still_run() -> None:
    broken = healthy_facts(python=PythonFacts(executable="/opt/venv/bin/python", version="3", prefix="/opt/venv"))
    results = {r.id: r for r in run_checks(context(broken), all_checks())}
    crashed = results["python.interpreter"]
    assert crashed.status is Status.ERROR
    assert crashed.summary.startswith("the check itself crashed: ValueError")
    assert "bug in specops" in crashed.hint
    assert results["torchcodec.ffmpeg"].status is Status.PASS


def test_a_check_raising_anything_is_contained() -> None:
    def explode(ctx: CheckContext) -> CheckResult:
        raise KeyError("nvidia")

    result = run_checks(context(), [CheckSpec("test.explode", "raises", explode)])[0]
    assert (result.status, result.summary) == (Status.ERROR, "the check itself crashed: KeyError: 'nvidia'")


def test_local_doctor_on_a_cpu_machine_skips_what_needs_host_config_or_gpus() -> None:
    facts = healthy_facts(
        torch=replace(healthy_facts().torch, version="2.13.0+cpu", cuda=None, has_libc10_cuda=False),
        nvidia=replace(healthy_facts().nvidia, smi_found=False, gpus=[], driver_version=None, cuda_version=None),
        unit=None,
    )
    results = {r.id: r for r in run_checks(context(facts, host=None, profile=None, gpu_host=False), all_checks())}
    assert {i for i, r in results.items() if r.status is Status.SKIP} == {
        "ssh.privilege",
        "gpu.nvml",
        "gpu.driver",
        *GPU_HEALTH,
        "cuda.driver_vs_torch",
        "gpu.arch_vs_cuda",
        "cuda.userspace_mix",
        "sglang.algorithm",
        "sglang.server_args",
        "model.paths",
        "model.draft_target_dims",
        "gpu.memory_free",
        "port.free",
        "unit.managed",
        "unit.environment",
        "service.user",
        "root.owned",
        "gpu.xid",
    }
    assert results["ssh.reachable"].summary == "probed this machine (--local): gpu-one in 0.4 s"
    assert results["torch.variant"].summary == "torch 2.13.0+cpu (CPU build; fine without GPUs)"
    assert {r.status for r in results.values()} <= {Status.PASS, Status.SKIP}


def test_every_problem_comes_with_a_hint() -> None:
    from tests.unit.doctor import scenarios

    for ctx in scenarios.broken_contexts():
        problems = [r for r in run_checks(ctx, all_checks()) if r.status in (Status.WARN, Status.FAIL, Status.ERROR)]
        assert problems, "each scenario breaks something"
        for result in problems:
            assert result.status is not Status.ERROR, result.summary
            assert result.hint, f"{result.id} {result.status}: {result.summary}"
            assert result.evidence or result.id == "model.paths", f"{result.id} shows what it read"


def test_a_unit_specops_did_not_write_fails_the_preflight() -> None:
    from specops.doctor.checks.host_resources import unit_managed
    from specops.probe.facts import UnitFacts

    base = healthy_facts()
    vendor = UnitFacts(name="sglang.service", exists=True, fragment_path="/lib/systemd/system/sglang.service",
                       fragment_head="[Unit]")  # fmt: skip
    result = unit_managed(context(base.model_copy(update={"unit": vendor})))
    assert result.status is Status.FAIL
    assert result.summary == (
        "sglang.service is a unit specops does not manage (systemd loads it from /lib/systemd/system/sglang.service)"
    )
    foreign = vendor.model_copy(update={"fragment_path": "/etc/systemd/system/sglang.service"})
    result = unit_managed(context(base.model_copy(update={"unit": foreign})))
    assert result.status is Status.FAIL and "was not written by specops" in result.summary
    ours = foreign.model_copy(update={"fragment_head": "# Managed by specops. Do not edit."})
    assert unit_managed(context(base.model_copy(update={"unit": ours}))).status is Status.PASS

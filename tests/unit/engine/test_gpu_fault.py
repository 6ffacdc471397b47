"""A failed start whose kernel journal holds a reboot/reset-class Xid for the engine's GPU: the cause names the GPU,
the deploy blames the host (no release marked bad), and `diagnose` says the host with the GPU evidence."""

from __future__ import annotations

from specops.commands.config_change import ConfigChange
from specops.commands.kernel_log import MARKER
from specops.config.inventory import HostSpec
from specops.deploy.blame import HOST_NOT_RELEASE, blame_for_failed_gates
from specops.diagnose.failure import from_gates
from specops.engine.gates import GateResult
from specops.engine.gpu_fault import with_gpu_fault
from specops.engine.readiness import Readiness
from specops.engine.readiness_commands import ReadinessCommands
from specops.engine.signatures import match, primary_cause
from specops.host.recording import RecordingHost, reply
from tests.unit.diagnose.test_verdict import BAD, GOOD, files, manifest, verdict

SPEC = HostSpec.model_validate({"name": "llm-one", "ssh": "root@10.0.0.2", "python": "/usr/bin/python3",
                                "model_path": "/models/m", "gpus": "2,3"})  # fmt: skip
KERNEL = (
    "2026-12-03T13:52:46.118000+0000 llm-one kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus.\n"
)
SMI = "0, 00000000:18:00.0\n1, 00000000:2A:00.0\n3, 00000000:5D:00.0\n"  # GPU 2 is gone from nvidia-smi's table
MAPPED = "0, 00000000:18:00.0\n1, 00000000:2A:00.0\n2, 00000000:3B:00.0\n3, 00000000:5D:00.0\n"
CURSOR = "s=abc;i=7;b=1;m=1;t=661bb2fb3fd01;x=1"  # journald's cursors carry their entry's time (t=, µs in hex)
PLANNED = ReadinessCommands.built(SPEC).gpu_fault  # what a plan holds (a deploy's gates step)
ENGINE_SAID = [
    "Traceback (most recent call last):",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
]


def _failed() -> Readiness:
    found = match(ENGINE_SAID)
    return Readiness(False, primary_cause(found), "loading weights", 9.0, ENGINE_SAID[-1], 0,
                     "the engine process exited with status 1 (unit failed/failed)", found, ENGINE_SAID)  # fmt: skip


def _host(kernel: str, smi: str) -> RecordingHost:
    host = RecordingHost("llm-one")
    host.script(lambda argv: argv[:2] == ("sh", "-c") and "journalctl" in argv, reply(f"{kernel}{MARKER}\n{smi}"))
    return host


def test_a_gpu_that_fell_off_the_bus_during_the_start_is_the_cause_not_the_engines_cuda_error() -> None:
    host = _host(KERNEL, MAPPED)
    readiness = with_gpu_fault(host, SPEC, CURSOR, _failed(), PLANNED)
    assert readiness.cause is not None and readiness.cause.signature.family == "gpu-host"
    assert readiness.cause.summary == (f"GPU 2 (0000:3b:00.0) fell off the bus (Xid 79) at "
                                       f"2026-12-03T13:52:46.118000+0000: {HOST_NOT_RELEASE}")  # fmt: skip
    assert "reboot" in readiness.cause.signature.hint
    argv = host.commands[0]
    assert argv[argv.index("--since") + 1] == "@1796306447.367425" and "-b" not in argv  # t= as a time
    gates = GateResult(readiness, None)
    assert "GPU 2 (0000:3b:00.0) fell off the bus (Xid 79)" in gates.cause


def test_the_deploy_marks_no_release_bad_for_it() -> None:
    gates = GateResult(with_gpu_fault(_host(KERNEL, SMI), SPEC, CURSOR, _failed(), PLANNED), None)
    blame = blame_for_failed_gates(ConfigChange(), gates, None)
    assert (blame.culprit, blame.marks_bad) == ("host", False)
    assert blame.reason.startswith(f"{HOST_NOT_RELEASE}: the GPU at 0000:3b:00.0 fell off the bus (Xid 79)")
    assert "journal: NVRM: Xid (PCI:0000:3b:00): 79" in blame.reason


def test_without_the_gpu_fault_the_engines_own_error_stays_the_cause_and_blames_the_build() -> None:
    quiet = with_gpu_fault(_host("", MAPPED), SPEC, CURSOR, _failed(), PLANNED)
    assert quiet.cause is not None and quiet.cause.signature.id == "illegal-memory-access"
    assert blame_for_failed_gates(ConfigChange(), GateResult(quiet, None), None).marks_bad


def test_a_fault_on_a_gpu_the_engine_does_not_use_is_not_its_cause() -> None:
    other = KERNEL.replace("0000:3b:00", "0000:18:00")  # GPU 0; the engine runs on 2,3
    kept = with_gpu_fault(_host(other, MAPPED), SPEC, CURSOR, _failed(), PLANNED)
    assert kept.cause is not None and kept.cause.signature.id == "illegal-memory-access"
    application = KERNEL.replace("): 79, pid='<unknown>'", "): 31, pid=7")
    assert with_gpu_fault(_host(application, MAPPED), SPEC, CURSOR, _failed(), PLANNED).cause.signature.family == (
        "engine-bug")  # fmt: skip


def test_diagnose_names_the_host_with_the_gpu_evidence() -> None:
    readiness = with_gpu_fault(_host(KERNEL, MAPPED), SPEC, CURSOR, _failed(), PLANNED)
    gates = GateResult(readiness, None).to_json()
    failure = from_gates(manifest("b", files(), gates=gates).gates)
    assert failure.area == "a GPU"
    found = verdict(current=GOOD, subject=BAD, subject_verified=False,
                    manifests={GOOD: manifest("a", files(), verified=True), BAD: manifest("b", files(spec_info="2"),
                                                                                          gates=gates)})  # fmt: skip
    assert found.headline.startswith("environment: the host's GPU failed: GPU 2 (0000:3b:00.0) fell off the bus")
    assert HOST_NOT_RELEASE in found.headline
    assert found.cleared[0].startswith(f"the release is cleared: {BAD}")
    assert any("reboot" in step for step in found.next_steps)

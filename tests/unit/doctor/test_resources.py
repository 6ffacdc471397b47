"""gpu.memory_free, disk.free, port.free, unit.environment, limits, ssh.reachable, python.interpreter."""

from __future__ import annotations

from specops.doctor.model import Status
from specops.probe.facts import DiskFacts, LimitsFacts, PortFacts, PythonFacts, UnitFacts
from tests.unit.doctor.factory import GIB, HOST, context, healthy_facts, nvidia_from_scenario, replace, run

ACTIVE_UNIT = UnitFacts(
    name="sglang.service",
    exists=True,
    active_state="active",
    environment={"CUDA_HOME": "/usr/local/cuda", "PATH": "/usr/local/cuda/bin:/usr/bin"},
)


def test_ssh_reachable_summarises_the_probe() -> None:
    facts = healthy_facts(errors={"ports": "permission denied reading /proc/net/tcp"})
    result = run("ssh.reachable", context(facts))
    assert (result.status, result.summary) == (Status.PASS, "probed gpu-one (root@gpu-one): gpu-one in 0.4 s")
    assert "could not observe ports: permission denied reading /proc/net/tcp" in result.evidence


def test_python_older_than_3_10_fails() -> None:
    facts = healthy_facts(python=PythonFacts(executable="/usr/bin/python3", version="3.8.10", prefix="/usr"))
    result = run("python.interpreter", context(facts))
    assert (result.status, result.summary) == (Status.FAIL, "Python 3.8.10 at /usr/bin/python3 is too old for SGLang")


def test_another_process_on_the_services_gpu_warns_naming_pid_name_and_mib() -> None:
    result = run("gpu.memory_free", context(healthy_facts(nvidia=nvidia_from_scenario("h100x2-570-busy"))))
    assert result.status is Status.WARN
    assert result.summary == "GPU memory is in use: pid 48213 /opt/other-team/venv/bin/python3 holds 61442 MiB on GPU 0"
    assert "SGLang sizes its KV cache from free memory" in result.hint


def test_a_busy_gpu_outside_hosts_gpus_is_not_our_concern() -> None:
    host = replace(HOST, gpus="1")
    result = run("gpu.memory_free", context(healthy_facts(nvidia=nvidia_from_scenario("h100x2-570-busy")), host=host))
    assert (result.status, result.summary) == (Status.PASS, "GPU 1: no other process holds memory")


def test_memory_held_while_our_service_runs_is_expected() -> None:
    facts = healthy_facts(nvidia=nvidia_from_scenario("h100x2-570-busy"), unit=ACTIVE_UNIT)
    result = run("gpu.memory_free", context(facts))
    assert result.status is Status.PASS
    assert result.summary == "memory is held while sglang.service runs (expected: it is the server)"


def test_memory_used_by_invisible_processes_warns() -> None:
    nvidia = nvidia_from_scenario("h200x2-580")
    busy = replace(nvidia, gpus=[replace(nvidia.gpus[0], memory_used_mib=40000), nvidia.gpus[1]])
    result = run("gpu.memory_free", context(healthy_facts(nvidia=busy)))
    assert result.status is Status.WARN
    assert "GPU 0: 40000 MiB used by processes nvidia-smi cannot see (another container?)" in result.summary


def test_gpus_naming_an_index_nvidia_smi_does_not_list_fails_once_in_gpu_count() -> None:
    ctx = context(host=replace(HOST, gpus="0,3"))
    result = run("gpu.memory_free", ctx)
    assert result.status is Status.SKIP
    assert result.summary == "hosts.gpu-one.gpus names GPU 3, which nvidia-smi does not list: see gpu.count"
    count = run("gpu.count", ctx)
    assert (count.status, count.summary) == (Status.FAIL, "hosts.gpu-one.gpus names GPU 3 but nvidia-smi lists only 2")
    assert "set hosts.gpu-one.gpus to indices nvidia-smi lists" in count.hint


def test_disk_below_10_gib_warns_and_below_1_gib_fails() -> None:
    low = DiskFacts(path="/opt/specops", checked="/opt", free_bytes=5 * GIB, total_bytes=100 * GIB)
    result = run("disk.free", context(healthy_facts(disks=[low])))
    assert (result.status, result.summary) == (Status.WARN, "/opt/specops: only 5.0 GiB free (below 10.0 GiB)")
    full = replace(low, free_bytes=GIB // 2)
    result = run("disk.free", context(healthy_facts(disks=[full])))
    assert (result.status, result.summary) == (Status.FAIL, "/opt/specops: only 0.5 GiB free (below 1.0 GiB)")
    assert "du -xsh /opt/*" in result.hint


def test_port_held_by_something_else_fails_naming_the_holder() -> None:
    facts = healthy_facts(ports=[PortFacts(port=30000, in_use=True, holder="pid 4242 nginx")])
    result = run("port.free", context(facts))
    assert result.status is Status.FAIL
    assert result.summary == "port 30000 is in use by pid 4242 nginx, not by sglang.service"
    assert result.hint == "stop it (`ss -ltnp 'sport = :30000'` shows it) or set hosts.gpu-one.port to a free port"


def test_port_held_by_our_running_service_passes() -> None:
    facts = healthy_facts(ports=[PortFacts(port=30000, in_use=True, holder="pid 99 python3")], unit=ACTIVE_UNIT)
    result = run("port.free", context(facts))
    assert (result.status, result.summary) == (Status.PASS, "port 30000 is served by sglang.service itself (running)")


def test_unit_without_cuda_home_on_path_warns_for_flashinfer_jit() -> None:
    unit = replace(ACTIVE_UNIT, environment={"CUDA_HOME": "/usr/local/cuda", "PATH": "/usr/bin:/bin"})
    result = run("unit.environment", context(healthy_facts(unit=unit)))
    assert result.status is Status.WARN
    assert result.summary == "PATH in sglang.service lacks $CUDA_HOME/bin (/usr/local/cuda/bin)"
    assert result.hint.startswith("FlashInfer JIT-compiles kernels at start and needs nvcc")
    result = run("unit.environment", context(healthy_facts(unit=replace(unit, environment={}))))
    assert result.summary == "CUDA_HOME is not set in sglang.service's environment"


def test_unit_environment_skips_when_the_unit_is_not_installed() -> None:
    result = run("unit.environment", context(healthy_facts(unit=None)))
    assert (result.status, result.summary) == (
        Status.SKIP,
        "sglang.service is not installed yet (a deploy installs it)",
    )


def test_low_limits_warn_and_say_the_unit_sets_its_own() -> None:
    facts = healthy_facts(limits=LimitsFacts(nofile_soft=1024, nofile_hard=524288, memlock_soft=8388608))
    result = run("limits", context(facts))
    assert result.status is Status.WARN
    assert result.summary == "open files soft limit 1024 < 65536; locked memory is limited to 8388608 bytes"
    assert "the unit sets LimitNOFILE=65536 and LimitMEMLOCK=infinity itself" in result.hint

"""gpu.driver, torch.variant, cuda.driver_vs_torch, gpu.arch_vs_cuda, cuda.userspace_mix."""

from __future__ import annotations

from specops.doctor.model import Status
from specops.probe.facts import CudaUserspaceFacts, NvidiaFacts, TorchFacts
from tests.unit.doctor.factory import SITE, context, healthy_facts, nvidia_from_scenario, replace, run

CPU_TORCH = TorchFacts(found=True, path=f"{SITE}/torch", version="2.13.0+cpu", cuda=None)


def torch(version: str, cuda: str | None) -> TorchFacts:
    return TorchFacts(found=True, path=f"{SITE}/torch", version=version, cuda=cuda, has_libc10_cuda=cuda is not None)


def test_gpu_driver_passes_naming_driver_cuda_and_gpus() -> None:
    result = run("gpu.driver", context(healthy_facts(nvidia=nvidia_from_scenario("h100x8-570"))))
    assert result.status is Status.PASS
    assert result.summary == "driver 570.124.06 (CUDA 12.8), 8 × NVIDIA H100 80GB HBM3"
    assert result.evidence[0] == "GPU 0: NVIDIA H100 80GB HBM3, cc 9.0, 81559 MiB, driver 570.124.06"


def test_gpu_driver_fails_without_nvidia_smi_on_a_gpu_host() -> None:
    result = run("gpu.driver", context(healthy_facts(nvidia=NvidiaFacts(smi_found=False))))
    assert result.status is Status.FAIL
    assert result.summary == "nvidia-smi not found on a GPU host: no NVIDIA driver installed"
    assert "`nvidia-smi` must list every GPU" in result.hint


def test_gpu_driver_fails_when_nvidia_smi_cannot_talk_to_the_driver() -> None:
    text = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure ..."
    result = run("gpu.driver", context(healthy_facts(nvidia=NvidiaFacts(smi_found=True, smi_error=text))))
    assert result.status is Status.FAIL
    assert result.summary.startswith("nvidia-smi failed: NVIDIA-SMI has failed because it couldn't communicate")


def test_gpu_driver_warns_on_mixed_driver_versions() -> None:
    nvidia = nvidia_from_scenario("h200x2-580")
    mixed = replace(nvidia, gpus=[nvidia.gpus[0], replace(nvidia.gpus[1], driver_version="570.124.06")])
    result = run("gpu.driver", context(healthy_facts(nvidia=mixed)))
    assert result.status is Status.WARN
    assert result.summary == "the GPUs report different driver versions: 570.124.06, 580.82.07"


def test_gpu_driver_skips_on_a_machine_without_gpus() -> None:
    result = run("gpu.driver", context(healthy_facts(nvidia=NvidiaFacts()), gpu_host=False))
    assert (result.status, result.summary) == (Status.SKIP, "not a GPU host (--local on a machine without GPUs)")


def test_cpu_torch_on_a_gpu_host_fails_with_the_matching_index() -> None:
    result = run("torch.variant", context(healthy_facts(torch=CPU_TORCH)))
    assert result.status is Status.FAIL
    assert result.summary == "torch 2.13.0+cpu is a CPU build on a GPU host"
    assert result.hint == (
        "reinstall torch from the CUDA index matching the driver: "
        "pip install --force-reinstall torch==2.13.0 --index-url https://download.pytorch.org/whl/cu130"
    )


def test_cpu_torch_is_fine_for_local_on_a_cpu_machine() -> None:
    result = run("torch.variant", context(healthy_facts(torch=CPU_TORCH), gpu_host=False))
    assert (result.status, result.summary) == (Status.PASS, "torch 2.13.0+cpu (CPU build; fine without GPUs)")


def test_missing_torch_fails_naming_the_interpreter() -> None:
    result = run("torch.variant", context(healthy_facts(torch=TorchFacts(found=False))))
    assert result.status is Status.FAIL
    assert result.summary == "torch is not installed for /opt/venv/bin/python"
    assert "hosts.gpu-one.python" in result.hint


def test_driver_570_with_cu130_torch_fails_with_the_upgrade_hint() -> None:
    facts = healthy_facts(nvidia=nvidia_from_scenario("h100x8-570"))
    result = run("cuda.driver_vs_torch", context(facts))
    assert result.status is Status.FAIL
    assert result.summary == "driver 570.124.06 supports CUDA 12.8 but torch is cu130"
    assert result.hint == (
        "Driver supports CUDA 12.8 but torch is cu130: upgrade the driver to ≥580.65.06, "
        "or install torch from https://download.pytorch.org/whl/cu128"
    )
    assert "The NVIDIA driver on your system is too old (found version 12080)" in result.evidence[-1]


def test_driver_580_runs_cu130_and_cu128() -> None:
    for version, cuda in (("2.13.0+cu130", "13.0"), ("2.13.0+cu128", "12.8")):
        result = run("cuda.driver_vs_torch", context(healthy_facts(torch=torch(version, cuda))))
        assert result.status is Status.PASS, result.summary


def test_newer_minor_than_the_driver_warns_about_minor_version_compatibility() -> None:
    facts = healthy_facts(nvidia=nvidia_from_scenario("h100x8-570"), torch=torch("2.13.0+cu129", "12.9"))
    result = run("cuda.driver_vs_torch", context(facts))
    assert result.status is Status.WARN
    assert result.summary == "driver 570.124.06 supports CUDA 12.8; torch cu129 runs under minor-version compatibility"
    assert "upgrade the driver to ≥575.51.03" in result.hint


def test_forward_compat_libcuda_makes_cu130_run_on_a_data_center_gpu() -> None:
    compat = CudaUserspaceFacts(compat_libcuda=["/usr/local/cuda-13.0/compat/libcuda.so.580.65.06"])
    facts = healthy_facts(nvidia=nvidia_from_scenario("h100x8-570"), cuda_userspace=compat)
    result = run("cuda.driver_vs_torch", context(facts))
    assert result.status is Status.PASS
    assert (
        result.summary
        == "torch cu130 runs through forward compatibility (/usr/local/cuda-13.0/compat/libcuda.so.580.65.06)"
    )


def test_forward_compat_on_a_geforce_fails_with_error_804() -> None:
    nvidia = nvidia_from_scenario("h100x8-570")
    geforce = replace(nvidia, gpus=[replace(gpu, name="NVIDIA GeForce RTX 4090") for gpu in nvidia.gpus])
    compat = CudaUserspaceFacts(compat_libcuda=["/usr/local/cuda-13.0/compat/libcuda.so.580.65.06"])
    result = run("cuda.driver_vs_torch", context(healthy_facts(nvidia=geforce, cuda_userspace=compat)))
    assert result.status is Status.FAIL
    assert "does not support (CUDA error 804)" in result.summary
    assert result.hint.startswith("cuda-compat only works on data-center GPUs")


def test_cu130_torch_on_a_v100_fails() -> None:
    result = run("gpu.arch_vs_cuda", context(healthy_facts(nvidia=nvidia_from_scenario("v100x1-580"))))
    assert result.status is Status.FAIL
    assert result.summary == (
        "torch cu130 cannot run on GPU 0 Tesla V100-SXM2-32GB (compute capability 7.0): "
        "CUDA 13 dropped Maxwell, Pascal and Volta (< 7.5)"
    )
    assert "cu128" in result.hint


def test_cu128_torch_on_a_v100_passes() -> None:
    facts = healthy_facts(nvidia=nvidia_from_scenario("v100x1-580"), torch=torch("2.13.0+cu128", "12.8"))
    assert run("gpu.arch_vs_cuda", context(facts)).status is Status.PASS


def test_cuda_12_libraries_next_to_cu130_torch_warn() -> None:
    userspace = CudaUserspaceFacts(
        libs={
            "libcudart": ["/usr/local/cuda-12.4/lib64/libcudart.so.12", f"{SITE}/nvidia/cu13/lib/libcudart.so.13"],
            "libcuda": ["/usr/lib/x86_64-linux-gnu/libcuda.so.1"],
        },
        nvcc_version="12.4",
    )
    result = run("cuda.userspace_mix", context(healthy_facts(cuda_userspace=userspace)))
    assert result.status is Status.WARN
    assert result.summary == (
        "CUDA libraries of another major are reachable next to torch cu130: libcudart.so.12 (/usr/local/cuda-12.4/lib64)"
    )
    assert "LD_LIBRARY_PATH" in result.hint
    assert any(line.startswith("info: nvcc 12.4") and "JIT" in line for line in result.evidence)


def test_nvcc_of_another_major_alone_is_only_information() -> None:
    userspace = replace(healthy_facts().cuda_userspace, nvcc_version="12.8")
    result = run("cuda.userspace_mix", context(healthy_facts(cuda_userspace=userspace)))
    assert result.status is Status.PASS
    assert (
        "info: nvcc 12.8 (the toolkit, not the runtime torch uses) ≠ torch's CUDA 13: matters only for JIT builds"
        in result.evidence
    )

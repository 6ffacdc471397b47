"""Broken hosts, one problem each, for tests that sweep every check (e.g. every problem has a hint)."""

from __future__ import annotations

from specops.doctor.model import CheckContext
from specops.probe.facts import (
    CudaUserspaceFacts,
    DiskFacts,
    FfmpegFacts,
    LimitsFacts,
    NativeExtFacts,
    NativeLib,
    NvidiaFacts,
    PortFacts,
    TorchFacts,
    UnitFacts,
)
from tests.unit.doctor.factory import (
    DRAFT,
    TARGET,
    context,
    healthy_facts,
    nvidia_from_scenario,
    replace,
    spec_info,
    torchcodec_facts,
)


def broken_contexts() -> list[CheckContext]:
    cpu_torch = TorchFacts(found=True, version="2.13.0+cpu", cuda=None)
    bad_lib = NativeLib(path="/x.so", missing_libs=["libcudart.so.12"], missing_torch_symbols=["_ZN3c10x"])
    facts = [
        healthy_facts(nvidia=NvidiaFacts()),
        healthy_facts(nvidia=nvidia_from_scenario("h100x8-570")),
        healthy_facts(nvidia=nvidia_from_scenario("v100x1-580")),
        healthy_facts(nvidia=nvidia_from_scenario("h100x2-570-busy")),
        healthy_facts(torch=cpu_torch, torchcodec=torchcodec_facts("0.17.0+cu130", extra_needed=("libnvrtc.so.13",))),
        healthy_facts(torch=TorchFacts(found=False)),
        healthy_facts(torchcodec=torchcodec_facts("0.10.0", missing_symbols=("_ZN3c1013MessageLoggerC1EPKciib",))),
        healthy_facts(ffmpeg=FfmpegFacts(), torchcodec=torchcodec_facts(host_libs={})),
        healthy_facts(ffmpeg=FfmpegFacts(cli_version="7.1", conda_prefix="/opt/conda")),
        healthy_facts(
            cuda_userspace=CudaUserspaceFacts(libs={"libnvrtc": ["/usr/local/cuda-12.4/lib64/libnvrtc.so.12"]})
        ),
        healthy_facts(native_ext={"flashinfer": NativeExtFacts(found=True, libs={"x.so": bad_lib})}),
        healthy_facts(sglang=[spec_info("current", patched=False), spec_info("previous", members={"DFLASH": 2})]),
        healthy_facts(models=[replace(TARGET, exists=False), replace(DRAFT, tensors={"fc.weight": [5120, 5120]})]),
        healthy_facts(models=[TARGET, replace(DRAFT, config={**DRAFT.config, "block_size": 4})]),
        healthy_facts(disks=[DiskFacts(path="/opt", checked="/opt", free_bytes=10, total_bytes=100)]),
        healthy_facts(ports=[PortFacts(port=30000, in_use=True)]),
        healthy_facts(unit=UnitFacts(name="sglang.service", exists=True, need_daemon_reload=True)),
        healthy_facts(limits=LimitsFacts(nofile_soft=1024, memlock_soft=0)),
    ]
    return [context(one) for one in facts]

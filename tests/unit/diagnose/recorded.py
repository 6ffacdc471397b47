"""Recorded material for the diagnose tests: a probe document of a healthy host, and ways to age it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from specops.diagnose.fingerprint import Fingerprint, fingerprint_from_facts
from specops.probe.parse import parse_host_facts

DATA = Path(__file__).resolve().parent.parent / "engine" / "data"
SITE = "/opt/venv/lib/python3.11/site-packages"
CORE5 = ["libavutil.so.57", "libavcodec.so.59", "libavformat.so.59", "libavdevice.so.59", "libavfilter.so.8",
         "libswscale.so.6", "libswresample.so.4"]  # fmt: skip
UNIT = """[Service]
Environment=CUDA_HOME=/usr/local/cuda "SGLANG_X=a b"
Environment=HF_TOKEN=hf_secret_value
EnvironmentFile=/etc/specops/sglang.env
ExecStart=/opt/venv/bin/python -m sglang.launch_server --speculative-algorithm DDTREE
"""
UNIT_SHOW = "LoadState=loaded\nActiveState=active\nEnvironment=CUDA_HOME=/usr/local/cuda\nNRestarts=0\n"
SMI_HEADER = "| NVIDIA-SMI 580.65.06              Driver Version: 580.65.06      CUDA Version: 13.0     |\n"


def probe_document() -> dict[str, Any]:
    """What the probe printed on a healthy cu130 host with FFmpeg 5 (trimmed to the sections fingerprints read)."""
    core = {"path": f"{SITE}/torchcodec/libtorchcodec_core5.so", "needed": CORE5, "missing_libs": []}
    core6 = {"path": f"{SITE}/torchcodec/libtorchcodec_core6.so", "needed": ["libavutil.so.58"],
             "missing_libs": ["libavutil.so.58"]}  # fmt: skip
    return {
        "probe_version": 1,
        "python": {"executable": "/opt/venv/bin/python", "version": "3.11.7", "prefix": "/opt/venv"},
        "system": {
            "hostname": "llm-one",
            "kernel": "6.1.0-28-amd64",
            "glibc": "glibc 2.36",
            "os_release_text": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n',
        },
        "torch": {
            "found": True,
            "path": f"{SITE}/torch",
            "version_text": "__version__ = '2.13.0+cu130'\ncuda: Optional[str] = '13.0'\n",
        },
        "torchcodec": {
            "found": True,
            "path": f"{SITE}/torchcodec",
            "version_text": "__version__ = '0.13.0'\n",
            "libs": {"libtorchcodec_core5.so": core, "libtorchcodec_core6.so": core6},
        },
        "dists": {
            "count": 5,
            "sha256": "a" * 64,
            "versions": {
                "torch": "2.13.0+cu130",
                "torchcodec": "0.13.0",
                "numpy": "2.3.1",
                "transformers": "4.57.1",
                "accelerate": "1.10.0",
            },
        },
        "native_ext": {"sgl_kernel": {"found": True, "version": "0.3.21", "libs": {}}},
        "nvidia": {
            "header": {"found": True, "rc": 0, "out": SMI_HEADER},
            "query_gpu": {
                "rc": 0,
                "out": "0, NVIDIA H100 80GB HBM3, 580.65.06, 9.0, 81559, 0, GPU-1\n"
                "1, NVIDIA H100 80GB HBM3, 580.65.06, 9.0, 81559, 0, GPU-2\n",
            },
        },
        "ffmpeg": {"libs": {name: f"/usr/lib/x86_64-linux-gnu/{name}" for name in CORE5}},
        "cuda_userspace": {"libs": {"libcudart": [f"{SITE}/nvidia/cuda_runtime/lib/libcudart.so.13"]}},
        "unit": {
            "name": "sglang.service",
            "fragment_sha256": "b" * 64,
            "show": {"found": True, "rc": 0, "out": UNIT_SHOW},
        },
        "errors": {},
    }


def fingerprint(document: dict[str, Any] | None = None, **kwargs: Any) -> Fingerprint:
    return fingerprint_from_facts(parse_host_facts(document or probe_document()), **kwargs)


def without_ffmpeg() -> dict[str, Any]:
    """The same host after the FFmpeg libraries were removed: the probe sees core5's needs unmet."""
    document = copy.deepcopy(probe_document())
    document["ffmpeg"]["libs"] = {}
    document["torchcodec"]["libs"]["libtorchcodec_core5.so"]["missing_libs"] = list(CORE5)
    return document


def cu128_with_torchcodec_010() -> dict[str, Any]:
    """A second host: torch built for CUDA 12.8, torchcodec 0.10.0 (its core misses a torch 2.13 symbol)."""
    document = copy.deepcopy(probe_document())
    document["torch"]["version_text"] = "__version__ = '2.13.0+cu128'\ncuda: Optional[str] = '12.8'\n"
    document["torchcodec"]["version_text"] = "__version__ = '0.10.0'\n"
    document["torchcodec"]["libs"]["libtorchcodec_core5.so"]["missing_torch_symbols"] = [
        "_ZN3c1013MessageLoggerC1EPKciib"
    ]
    document["dists"]["versions"].update({"torch": "2.13.0+cu128", "torchcodec": "0.10.0"})
    document["dists"]["sha256"] = "c" * 64
    return document


def journal(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()

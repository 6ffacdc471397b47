"""The probe over real SSH on real test hosts (systemd PID 1 + OpenSSH), healthy and after each drift.

Each test breaks ONE host the way SGLang hosts break in the field (drift helpers) and asserts what the
static probe reports, then that `--deep` (a real torch/torchcodec import on the host) agrees with it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specops.config.inventory import HostSpec
from specops.host.ssh.channels import SshHost
from specops.host.ssh.connection import connect
from specops.probe.facts import DeepFacts, HostFacts
from specops.probe.run import probe, probe_deep
from tests.testbed import drift, gpu
from tests.testbed.engine import BUILD_PYTHON, DDTREE_PATCH, copy_build
from tests.testbed.models import write_model_fixtures
from tests.testbed.pyenv import venv_python
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e

ALIAS = "probe-host"
PROC_VERSION_FILE = "/etc/specops-testbed/proc-driver-nvidia-version"
ABI_SYMBOL = "_ZN3c1013MessageLoggerC1EPKciib"


def _spec(venv: Path, **fields: object) -> HostSpec:
    values: dict[str, object] = {"name": ALIAS, "ssh": ALIAS, "python": str(venv_python(venv))}
    values.update({"model_path": "/models/target", "draft_model_path": "/models/draft", "base_dir": "/opt/specops"})
    values.update(fields)
    return HostSpec.model_validate(values)


@pytest.fixture
def ssh(testhost: TestHost, tmp_path: Path) -> Iterator[SshHost]:
    config = tmp_path / "ssh_config"
    config.write_text(testhost.ssh_config_block(ALIAS))
    with connect(HostSpec(name=ALIAS, ssh=ALIAS, python="/usr/bin/python3", model_path="/m"), ssh_config=config,
                 known_hosts=[]) as host:  # fmt: skip
        yield host


def _copy_tree_into(host: TestHost, local: Path, remote: str) -> None:
    for path in sorted(p for p in local.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        host.write_file(f"{remote}/{path.relative_to(local)}", path.read_bytes())


def _set_scene(host: TestHost, tmp_path: Path, scenario: str) -> None:
    """Models, two releases (current patched, previous verified), the nvidia-smi double and its /proc text."""
    models = write_model_fixtures(tmp_path / "models")
    _copy_tree_into(host, models["target"], "/models/target")
    _copy_tree_into(host, models["draft"], "/models/draft")
    releases = "/opt/specops/sglang/releases"
    _copy_tree_into(host, copy_build(tmp_path / "patched", [DDTREE_PATCH]), f"{releases}/r2/python")
    _copy_tree_into(host, BUILD_PYTHON, f"{releases}/r1/python")
    manifest = {"verified": True, "created_at": "2025-01-01T00:00:00Z"}
    host.write_file(f"{releases}/r1/manifest.json", json.dumps(manifest).encode())
    host.write_file(
        f"{releases}/r2/manifest.json", json.dumps({**manifest, "created_at": "2025-02-01T00:00:00Z"}).encode()
    )
    host.exec(["ln", "-sfn", f"{releases}/r2", "/opt/specops/sglang/current"])
    drift.install_nvidia_smi(host, scenario)
    host.write_file(PROC_VERSION_FILE, (gpu.proc_version_text(scenario) or "").encode())


def _probe(ssh: SshHost, spec: HostSpec) -> HostFacts:
    started = time.monotonic()
    facts = probe(ssh, spec, overrides={"proc_driver_version_path": PROC_VERSION_FILE})
    print(f"[probe] over ssh: {time.monotonic() - started:.2f}s wall, {facts.probe_seconds:.2f}s on the host")
    return facts


def _deep(ssh: SshHost, spec: HostSpec) -> DeepFacts:
    started = time.monotonic()
    deep = probe_deep(ssh, spec)
    print(f"[probe --deep] over ssh: {time.monotonic() - started:.2f}s wall")
    return deep


def test_healthy_host(testhost: TestHost, ssh: SshHost, host_venv: Path, tmp_path: Path) -> None:
    _set_scene(testhost, tmp_path, "h100x8-580")
    spec = _spec(host_venv)
    facts = _probe(ssh, spec)
    assert facts.errors == {}
    assert facts.system.systemd_version is not None and facts.system.systemd_version >= 250
    assert facts.torch.version == "2.13.0+cpu" and facts.torch.cuda is None
    core5 = facts.torchcodec.libs["libtorchcodec_core5.so"]
    assert core5.missing_libs == [] and core5.missing_torch_symbols == []
    assert facts.ffmpeg.libs.keys() >= set(drift.CORE5_SONAMES)
    assert (facts.nvidia.driver_version, facts.nvidia.cuda_version, len(facts.nvidia.gpus)) == ("580.65.06", "13.0", 8)
    assert facts.nvidia.proc_driver_version and "580.65.06" in facts.nvidia.proc_driver_version
    assert facts.releases.current_id == "r2" and facts.releases.previous_id == "r1"
    dflash = {info.label: info.is_dflash["DDTREE"] for info in facts.sglang}
    assert dflash == {"current": True, "previous": False}
    assert {m.role: m.exists for m in facts.models} == {"target": True, "draft": True}
    assert facts.ports[0].in_use is False
    assert facts.unit is not None and facts.unit.exists is False  # nothing installed yet
    assert facts.probe_seconds < 2.0
    deep = _deep(ssh, spec)
    assert deep.torch_ok and deep.torchcodec_ok and deep.torchcodec_ffmpeg_major == 5


def test_ffmpeg_libs_removed(testhost: TestHost, ssh: SshHost, host_venv: Path) -> None:
    assert drift.remove_ffmpeg_libs(testhost)
    spec = _spec(host_venv)
    facts = _probe(ssh, spec)
    assert "libavutil.so.57" in facts.torchcodec.libs["libtorchcodec_core5.so"].missing_libs
    assert not any(lib.missing_libs == [] for name, lib in facts.torchcodec.libs.items() if "_core" in name)
    assert facts.ffmpeg.libs == {}
    assert facts.nvidia.smi_found is False
    deep = _deep(ssh, spec)
    assert deep.torch_ok and deep.torchcodec_ok is False
    assert "libavutil.so." in (deep.torchcodec_error or "") and "cannot open shared object file" in (
        deep.torchcodec_error or ""
    )


def test_torchcodec_built_for_another_torch(testhost: TestHost, ssh: SshHost, host_venv: Path) -> None:
    assert drift.install_torchcodec_010(testhost, host_venv).startswith("0.10.0")
    spec = _spec(host_venv)
    facts = _probe(ssh, spec)
    core5 = facts.torchcodec.libs["libtorchcodec_core5.so"]
    assert facts.torchcodec.version is not None and facts.torchcodec.version.startswith("0.10.0")
    assert core5.missing_libs == [] and ABI_SYMBOL in core5.missing_torch_symbols
    deep = _deep(ssh, spec)
    assert deep.torchcodec_ok is False and (deep.torchcodec_error or "").endswith(f"undefined symbol: {ABI_SYMBOL}")


def test_cuda_tagged_torch_on_a_570_driver(testhost: TestHost, ssh: SshHost, host_venv: Path, tmp_path: Path) -> None:
    _set_scene(testhost, tmp_path, "h100x2-570-busy")
    drift.set_torch_cuda_tag(testhost, host_venv)
    spec = _spec(host_venv)
    facts = _probe(ssh, spec)
    assert (facts.torch.version, facts.torch.cuda, facts.torch.has_libc10_cuda) == ("2.13.0+cu130", "13.0", False)
    assert (facts.nvidia.driver_version, facts.nvidia.cuda_version) == ("570.124.06", "12.8")
    assert [g.memory_used_mib for g in facts.nvidia.gpus] == [61442, 0]
    assert facts.nvidia.processes[0].process_name == "/opt/other-team/venv/bin/python3"
    deep = _deep(ssh, spec)
    assert deep.torch_ok and deep.torch_cuda == "13.0" and deep.torch_cuda_available is False
    assert deep.torch_error == "AssertionError: Torch not compiled with CUDA enabled"

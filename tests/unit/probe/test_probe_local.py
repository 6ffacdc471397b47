"""The bundled probe run for real on this machine (`python -I -S -` via LocalHost), parsed into HostFacts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from specops.host.base import Result
from specops.host.local import LocalHost
from specops.probe.run import ProbeError, build_request, probe, probe_deep
from specops.remote.bundle import BundleError, _strip_internal_imports, build_script, probe_source
from tests.testbed import gpu
from tests.testbed.engine import DDTREE_PATCH, copy_build
from tests.testbed.models import write_model_fixtures
from tests.unit.probe.conftest import host_spec

PY38 = "/root/.pyenv/versions/3.8.18/bin/python3.8"


def _release(service_dir: Path, release_id: str, verified: bool, created_at: str, patched: bool = False) -> Path:
    folder = service_dir / "releases" / release_id
    copy_build(folder / "python", [DDTREE_PATCH] if patched else [])
    (folder / "manifest.json").write_text(json.dumps({"verified": verified, "created_at": created_at}))
    return folder


def test_bundle_has_no_internal_imports_and_no_future_import() -> None:
    """Annotations are stripped, so the host needs no `from __future__ import annotations` either."""
    source = probe_source()
    assert "specops.remote.probe" not in source
    assert "__future__" not in source
    compile(source, "<probe>", "exec")


def test_bundler_refuses_a_name_defined_twice() -> None:
    _text, names = _strip_internal_imports("from specops.remote.probe.common import x\ndef run_command(): pass\n")
    assert names == {"run_command"}
    with pytest.raises(BundleError):  # guard: if MODULE_ORDER listed a module twice, names would clash
        from specops.remote import bundle

        original = bundle.MODULE_ORDER
        bundle.probe_source.cache_clear()
        try:
            bundle.MODULE_ORDER = ("common", "common")  # type: ignore[assignment]
            bundle.probe_source()
        finally:
            bundle.MODULE_ORDER = original
            bundle.probe_source.cache_clear()


def test_full_probe_on_this_machine(tmp_path: Path, smi_on_path: Callable[[str], None]) -> None:
    smi_on_path("h100x2-570-busy")
    models = write_model_fixtures(tmp_path / "models")
    service_dir = tmp_path / "opt" / "sglang"
    _release(service_dir, "20250101-000000-aaaa", verified=True, created_at="2025-01-01T00:00:00Z")
    previous = _release(service_dir, "20250201-000000-bbbb", verified=True, created_at="2025-02-01T00:00:00Z")
    _release(service_dir, "20250301-000000-cccc", verified=False, created_at="2025-03-01T00:00:00Z")
    current = _release(
        service_dir, "20250401-000000-dddd", verified=True, created_at="2025-04-01T00:00:00Z", patched=True
    )
    (service_dir / "current").symlink_to(current)
    candidate = copy_build(tmp_path / "candidate")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        spec = host_spec(
            sys.executable, base_dir=str(tmp_path / "opt"), port=port,
            model_path=str(models["target"]), draft_model_path=str(models["draft"]),
        )  # fmt: skip
        overrides = {"proc_driver_version_path": str(gpu.PROC_VERSION_DIR / "h100x2-570-busy")}
        started = time.monotonic()
        facts = probe(LocalHost("gpu-a"), spec, None, extra_roots={"candidate": str(candidate)}, overrides=overrides)
        elapsed = time.monotonic() - started
    print(f"local probe wall time {elapsed:.2f}s (probe itself {facts.probe_seconds:.2f}s)")
    assert facts.errors == {"systemd": "not booted with systemd (/run/systemd/system is missing)"} or not facts.errors
    assert facts.python.executable == sys.executable and facts.python.version.startswith("3.")
    assert facts.ports[0].in_use and facts.ports[0].holder == f"pid {os.getpid()} {_comm()}"
    assert facts.nvidia.driver_version == "570.124.06" and facts.nvidia.cuda_version == "12.8"
    assert len(facts.nvidia.gpus) == 2 and facts.nvidia.processes[0].pid == 48213
    assert facts.nvidia.proc_driver_version and "570.124.06" in facts.nvidia.proc_driver_version
    assert facts.releases.current_id == "20250401-000000-dddd"
    assert facts.releases.previous_id == "20250201-000000-bbbb" and facts.releases.previous_path == str(previous)
    by_label = {info.label: info for info in facts.sglang}
    assert set(by_label) == {"current", "previous", "candidate"}
    assert by_label["current"].is_dflash["DDTREE"] is True and by_label["previous"].is_dflash["DDTREE"] is False
    assert by_label["candidate"].root == str(candidate) and by_label["candidate"].method == "import"
    assert {m.role: m.tensors.get("fc.weight") for m in facts.models} == {"target": None, "draft": [5120, 25600]}
    assert [d.path for d in facts.disks] == [str(tmp_path / "opt"), str(models["target"]), str(models["draft"])]
    assert facts.limits.nofile_soft and facts.limits.nofile_soft > 0
    assert elapsed < 5


def _comm() -> str:
    return Path(f"/proc/{os.getpid()}/comm").read_text().strip()


def test_free_port_and_missing_model_and_nothing_installed(tmp_path: Path) -> None:
    spec = host_spec(sys.executable, base_dir=str(tmp_path / "nothing"), model_path=str(tmp_path / "no-model"))
    facts = probe(LocalHost(), spec, overrides={"ports": [1]})
    assert facts.ports[0].in_use is False and facts.ports[0].holder is None
    assert facts.models[0].exists is False
    assert facts.releases.current_id is None and facts.releases.previous_id is None
    assert facts.disks[0].checked == str(tmp_path)  # the nearest existing ancestor


@pytest.mark.skipif(not os.access(PY38, os.X_OK), reason=f"{PY38} not installed")
def test_bundle_runs_on_python_38(tmp_path: Path) -> None:
    models = write_model_fixtures(tmp_path / "models")
    spec = host_spec(PY38, model_path=str(models["target"]), draft_model_path=str(models["draft"]))
    request = build_request(spec, None, extra_roots={"candidate": str(copy_build(tmp_path / "candidate"))})
    done = subprocess.run(
        [PY38, "-I", "-S", "-"], input=build_script(request), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["errors"] == {} and document["python"]["version"].startswith("3.8.")
    assert document["sglang"][0]["label"] == "candidate" and document["sglang"][0]["members"]["DDTREE"] == 2
    assert {m["role"]: m["tensors"].get("fc.weight") for m in document["models"]} == {
        "target": None,
        "draft": [5120, 25600],
    }


def test_hugging_face_ids_are_not_probed_as_folders() -> None:
    spec = host_spec(sys.executable, model_path="Qwen/Qwen3.5-27B", draft_model_path="/models/draft")
    request = build_request(spec, None)
    assert request["models"] == {"draft": "/models/draft"}
    assert request["disk_paths"] == ["/opt/specops", "/models/draft"]


def test_missing_interpreter_names_the_setting() -> None:
    spec = host_spec("/opt/nowhere/bin/python")
    with pytest.raises(ProbeError) as caught:
        probe(LocalHost(), spec)
    assert "/opt/nowhere/bin/python" in caught.value.message
    assert "hosts.gpu-a.python" in caught.value.hint


def test_interpreter_that_is_not_python_is_a_clear_error(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'Welcome to the bastion'\nexit 0\n")
    fake.chmod(0o755)
    with pytest.raises(ProbeError, match="did not print its JSON document"):
        probe(LocalHost(), host_spec(str(fake)))
    fake.write_text("#!/bin/sh\necho 'SyntaxError: invalid syntax' >&2\nexit 1\n")
    with pytest.raises(ProbeError, match="exit 1") as caught:
        probe(LocalHost(), host_spec(str(fake)))
    assert "SyntaxError: invalid syntax" in caught.value.message


def test_stray_prints_do_not_corrupt_the_document() -> None:
    script = build_script({"deep": False}).replace("def gather_env()", "def gather_env_unused()", 1)
    script = script.replace("\nmain(", "\ndef gather_env():\n    print('noise')\n    return {}\n\nmain(", 1)
    done = subprocess.run([sys.executable, "-I", "-S", "-"], input=script, capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout)["env"] == {} and "noise" in done.stderr


class _OneAnswer:
    """A host that answers every command with the same stdout, and counts round trips."""

    name = "gpu-a"

    def __init__(self, stdout: str) -> None:
        self.stdout = stdout
        self.calls: list[tuple[list[str], bytes | None]] = []

    def run(self, argv: object, *, input: bytes | None = None, timeout: float = 60, **_: object) -> Result:
        words = list(argv)  # type: ignore[call-overload]
        self.calls.append((words, input))
        return Result(tuple(words), 0, self.stdout.encode(), b"", 0.01)


def test_one_round_trip_each_for_facts_and_deep() -> None:
    host = _OneAnswer(json.dumps({"probe_version": 1, "python": {"executable": "/v/bin/python", "version": "3.11.7",
                                                                 "prefix": "/v", "site_packages": []}}))  # fmt: skip
    facts = probe(host, host_spec("/v/bin/python"))
    assert facts.python.executable == "/v/bin/python"
    deep = probe_deep(_OneAnswer('{"probe_version": 1, "errors": {}}'), host_spec("/v/bin/python"))
    assert deep.torch_ok is None and deep.torchcodec_ok is None
    [(argv, script)] = host.calls
    assert argv == ["/v/bin/python", "-I", "-S", "-"] and script is not None and b"\nmain(json.loads(" in script


def test_an_answer_of_the_wrong_shape_is_a_probe_error() -> None:
    with pytest.raises(ProbeError, match="does not match this specops version"):
        probe(_OneAnswer('{"probe_version": 1, "python": {"executable": 5}}'), host_spec("/v/bin/python"))

"""The fingerprint built from recorded probe output: what it keeps, what it redacts, how it reads back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.diagnose.fingerprint import FINGERPRINT_SCHEMA, read_fingerprint
from specops.diagnose.store import recall, remember
from specops.remote.probe.dists import gather_dists, parse_dist_folder
from tests.unit.diagnose.recorded import UNIT, cu128_with_torchcodec_010, fingerprint, without_ffmpeg


def test_fingerprint_names_interpreter_packages_driver_gpus_libraries_and_system() -> None:
    found = fingerprint(tree_hash="f" * 64, release="20261130T010203Z-ffffffffffff")
    assert found.python_executable == "/opt/venv/bin/python" and found.python_version == "3.11.7"
    assert found.packages["torch"] == "2.13.0+cu130" and found.torch_cuda == "13.0"
    assert found.packages["torchcodec"] == "0.13.0" and found.torchcodec_core == "core5"
    assert found.torchcodec_core_problems == {"core6": "missing libavutil.so.58"}
    assert found.packages["sgl_kernel"] == "0.3.21" and found.packages["numpy"] == "2.3.1"
    assert found.packages["flashinfer"] is None  # not installed: absent, not guessed
    assert found.driver == "580.65.06" and found.driver_cuda == "13.0"
    assert found.gpus == ["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"]
    assert "libavutil.so.57" in found.ffmpeg_libs and found.cuda_libs == ["libcudart.so.13"]
    assert (found.kernel, found.glibc) == ("6.1.0-28-amd64", "glibc 2.36")
    assert found.installed_sha256 == "a" * 64 and found.installed["accelerate"] == "1.10.0"
    assert found.unit_sha256 == "b" * 64 and found.unit_env == {"CUDA_HOME": "/usr/local/cuda"}
    assert found.tree_hash == "f" * 64


def test_a_deploy_fingerprint_takes_the_new_units_hash_and_environment_with_secrets_redacted() -> None:
    found = fingerprint(unit_text=UNIT)
    assert found.unit_env == {"CUDA_HOME": "/usr/local/cuda", "HF_TOKEN": "***", "SGLANG_X": "a b"}
    assert "hf_secret_value" not in json.dumps(found.to_json())
    assert found.unit_sha256 is not None and found.unit_sha256 != "b" * 64


def test_no_core_loads_without_ffmpeg_or_with_an_abi_mismatch() -> None:
    assert fingerprint(without_ffmpeg()).torchcodec_core is None
    assert fingerprint(without_ffmpeg()).ffmpeg_libs == []
    mismatched = fingerprint(cu128_with_torchcodec_010())
    assert mismatched.torchcodec_core is None
    assert "ABI" in mismatched.torchcodec_core_problems["core5"]


def test_the_fingerprint_is_small_versioned_and_reads_back() -> None:
    document = fingerprint().to_json()
    assert document["schema"] == FINGERPRINT_SCHEMA
    assert len(json.dumps(document)) < 4096
    assert read_fingerprint(json.loads(json.dumps(document))) == fingerprint().model_copy(
        update={"taken_at": document["taken_at"]}
    )
    assert read_fingerprint({}) is None  # a release deployed before fingerprints
    assert read_fingerprint({**document, "schema": FINGERPRINT_SCHEMA + 1}) is None  # written by a newer specops


def test_local_state_keeps_the_newest_fingerprints_per_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert recall("llm-one") == []
    for kernel in ("6.1.0-27", "6.1.0-28"):
        remember("llm-one", fingerprint().model_copy(update={"kernel": kernel}))
    assert [item.kernel for item in recall("llm-one")] == ["6.1.0-27", "6.1.0-28"]
    stored = tmp_path / "specops" / "fingerprints" / "llm-one.json"
    assert stored.stat().st_mode & 0o077 == 0


def test_installed_set_is_read_from_dist_info_names(tmp_path: Path) -> None:
    assert parse_dist_folder("torch-2.13.0+cu130.dist-info") == ("torch", "2.13.0+cu130")
    assert parse_dist_folder("Flash_Infer.Python-0.5.3.dist-info") == ("flash-infer-python", "0.5.3")
    assert parse_dist_folder("six-1.16.0-py3.11.egg-info") == ("six", "1.16.0")
    assert parse_dist_folder("torch") is None
    found = gather_dists()  # this interpreter's own venv: real folders
    assert found["count"] == len(found["versions"]) > 5
    assert found["versions"]["pydantic"]
    assert len(found["sha256"]) == 64

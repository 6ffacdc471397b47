"""The compile cache: its key from the probe's facts (a safe path word), the host commands, the downtime line,
and `status`'s size, against a RecordingHost."""

from __future__ import annotations

import getpass
import os
import stat
import subprocess
from pathlib import Path

import pytest

from specops.commands.cache import cache_environment, cache_key, prepare_argvs
from specops.commands.manifest import parse_gates
from specops.commands.release import ReleaseInfo
from specops.host.base import Result
from specops.host.recording import RecordingHost
from specops.ops import cache
from tests.unit.doctor.factory import HOST, healthy_facts, replace


@pytest.mark.parametrize(
    ("torch", "cuda", "archs", "key"),
    [
        ("2.13.0+cu130", "13.0", ["9.0", "9.0"], "torch2.13.0_cu130-cuda13.0-sm90"),
        ("2.9.1", "12.8", ["8.0", "9.0"], "torch2.9.1-cuda12.8-sm80_sm90"),
        (None, None, [], "torchunknown-cudanone-nogpu"),
        ("../../etc", "$(id)", ["9.0; rm -rf /"], "torchetc-cudaid-sm90_rm_rf"),
        ("..", "/", [], "torchunknown-cudanone-nogpu"),
    ],
)
def test_the_key_is_one_safe_path_word(torch: str | None, cuda: str | None, archs: list[str], key: str) -> None:
    assert cache_key(torch, cuda, archs) == key
    assert "/" not in key and not key.startswith(".")


def test_the_key_reads_torch_cuda_and_the_arch_of_the_units_gpus() -> None:
    assert cache.key_from_facts(HOST, healthy_facts()) == "torch2.13.0_cu130-cuda13.0-sm90"


def test_the_unit_names_the_stable_link_and_the_deploy_points_it_at_the_keyed_folder() -> None:
    env = cache_environment(HOST)
    assert env["TRITON_CACHE_DIR"] == "/opt/specops/sglang/cache/triton"
    assert env["FLASHINFER_WORKSPACE_BASE"] == "/opt/specops/sglang/cache"
    assert env["SGLANG_DG_CACHE_DIR"] == env["DG_JIT_CACHE_DIR"] == "/opt/specops/sglang/cache/deep_gemm"


def _prepare(base: Path, key: str, run_as: str | None = None) -> subprocess.CompletedProcess[str]:
    """The deploy's cache command, run as the host runs it: one request (a plain sh, no login shell)."""
    (argv,) = prepare_argvs(replace(HOST, base_dir=str(base), run_as=run_as), key)
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_one_command_makes_the_keyed_folder_0700_and_points_the_stable_link_at_it(tmp_path: Path) -> None:
    for key in ("k1", "k2", "k1"):  # a host whose torch or GPUs change gets another folder; the link follows
        assert _prepare(tmp_path, key, getpass.getuser()).returncode == 0
        folder = tmp_path / "shared" / "cache" / key
        assert os.readlink(tmp_path / "sglang" / "cache") == str(folder)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert stat.S_IMODE((tmp_path / "shared" / "cache").stat().st_mode) == 0o755
    assert not (tmp_path / "sglang" / "cache.new").exists()


def test_a_step_that_fails_stops_the_command_with_its_error_and_moves_no_link(tmp_path: Path) -> None:
    (tmp_path / "sglang").write_text("not a folder")
    done = _prepare(tmp_path, "k1")
    assert done.returncode != 0 and "sglang" in done.stderr
    assert not (tmp_path / "shared" / "cache" / "k1").exists()


def _release(release_id: str, seconds: float | None, current: bool = False, ok: bool = True) -> ReleaseInfo:
    gates = parse_gates({"readiness": {"ok": ok, "seconds": seconds}} if seconds is not None else {})
    return ReleaseInfo(
        id=release_id, complete=True, verified=ok, gates=gates, is_current=current, created_at=release_id
    )


def test_the_expected_downtime_is_the_last_start_of_the_serving_release() -> None:
    releases = [_release("r1", 300.0), _release("r2", 41.6, current=True), _release("r3", None)]
    assert cache.expected_downtime(releases, "r2") == "expected downtime ~42 s (the last start, of r2, took 41.6 s)"
    assert cache.expected_downtime([_release("r1", 12.0), _release("r3", 5.0, ok=False)], "r3") == (
        "expected downtime ~12 s (the last start, of r1, took 12.0 s)"
    )
    assert cache.expected_downtime([], None) is None


def test_status_measures_the_folder_the_link_names() -> None:
    host = RecordingHost("gpu-one")
    host.script(["readlink", "/opt/specops/sglang/cache"], Result((), 0, b"/opt/specops/shared/cache/k1\n", b"", 0.0))
    host.script(
        ["du", "-sbD", "/opt/specops/sglang/cache"], Result((), 0, b"73728\t/opt/specops/sglang/cache\n", b"", 0.0)
    )
    assert cache.measure(host, HOST) == {"path": "/opt/specops/shared/cache/k1", "bytes": 73728}
    never = RecordingHost("gpu-one")
    never.script(["readlink"], Result((), 1, b"", b"", 0.0))
    assert cache.measure(never, HOST) is None

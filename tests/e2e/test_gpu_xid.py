"""GPU faults in the kernel journal, end to end: real CLI, SSH, systemd-journald and journalctl on test hosts.

The Xid lines are put into the TEST HOST's own journal as kernel entries of its current boot
(tests/testbed/kernel_journal.py: systemd-journal-remote, never the machine's /dev/kmsg), so the probe's real
`journalctl -k -b` and a failed start's `journalctl -k --since` read them as they read a real driver's.
The nvidia-smi double plays 8 x H100 (GPU 2 at bus 00000000:3A:00.0).
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.e2e.deployscene import PATCH, Scene, watch_for, watch_until
from tests.testbed.engine import copy_build
from tests.testbed.kernel_journal import JOURNAL_REMOTE, PACKAGE, inject_kernel_lines
from tests.testbed.testhost.sudo import add_sudo_user

pytestmark = pytest.mark.e2e

# the current driver's format (leptonai/gpud, NVIDIA/NVSentinel#155), for the GPU at bus 3A: the double's GPU 2
FELL_OFF = "NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
CLEANUP = "NVRM: Xid (PCI:0000:3a:00): 45, pid=4242, name=python3, Ch 00000008"


@pytest.fixture(autouse=True)
def _journal_remote(scene: Scene) -> None:
    if scene.host.exec(["test", "-x", JOURNAL_REMOTE], check=False).returncode != 0:
        pytest.fail(f"{JOURNAL_REMOTE} is missing: apt-get install {PACKAGE} (.ci/run installs it)")


def _xid_check(scene: Scene) -> dict[str, object]:
    result = scene.cli("doctor", scene.host.name, "--json")
    checks = {check["id"]: check for check in json.loads(result.out)["hosts"][scene.host.name]["checks"]}
    found = checks.get("gpu.xid")
    assert found is not None, result.out + result.err
    assert isinstance(found, dict)
    return found


def test_the_doctor_fails_on_xid_79_of_this_boot_and_skips_for_a_user_who_cannot_read_the_journal(
    scene: Scene,
) -> None:
    assert _xid_check(scene)["summary"] == "no Xid since boot"
    inject_kernel_lines(scene.host, [FELL_OFF, *[CLEANUP] * 40])
    found = _xid_check(scene)
    assert found["status"] == "fail"
    summary = str(found["summary"])
    assert summary.startswith("GPU 2 (0000:3a:00.0): Xid 79 (GPU has fallen off the bus) at ")
    assert summary.endswith(": reboot before deploying")
    assert "a GPU reset since then also clears it" in str(found["hint"])
    evidence = [str(line) for line in found["evidence"]]  # type: ignore[attr-defined]
    assert evidence[0].endswith(FELL_OFF) and len(evidence) == 2 and "(40 times, last at " in evidence[1]

    user = add_sudo_user(scene.host, "deploy")  # a login user, and no `become`: the probe runs as `deploy`
    (scene.folder / "home" / ".ssh" / "config").write_text(user.ssh_config_block(scene.host.name))
    inventory = scene.folder / "specops.toml"  # the testbed's venv is root's: this user probes with the system python
    inventory.write_text(
        inventory.read_text().replace(f'python = "{scene.venv}/bin/python"', 'python = "/usr/bin/python3"')
    )
    skipped = _xid_check(scene)
    assert skipped["status"] == "skip"
    assert "deploy may not read the kernel journal" in str(skipped["summary"])
    assert "`usermod -aG systemd-journal deploy`" in str(skipped["summary"])


def _inject_when_loading(scene: Scene, messages: list[str], done: list[str]) -> threading.Thread:
    """Inject the lines once the engine logs that it loads its weights (again): the GPU fails under the starting
    engine, after the deploy took its journal position."""
    loads = scene.journal().count("Load weight begin")

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if scene.journal().count("Load weight begin") > loads:
                inject_kernel_lines(scene.host, messages)
                done.append("injected")
                return
            time.sleep(0.1)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_start_that_fails_because_the_gpu_fell_off_the_bus_blames_the_host_not_the_release(scene: Scene) -> None:
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    build = copy_build(scene.folder / "build" / "python", [PATCH])
    (build / "sglang" / "testengine_env.json").write_text(json.dumps({
        "SGLANG_TESTENGINE_LOAD_SECONDS": "2",
        "SGLANG_TESTENGINE_CRASH_AFTER_LOAD": "CUDA error: unspecified launch failure",
    }))  # fmt: skip
    done: list[str] = []
    watcher = _inject_when_loading(scene, [FELL_OFF], done)
    result = scene.cli("deploy", scene.host.name, "--build", str(build), "--json")
    watcher.join(timeout=5)
    assert done == ["injected"] and result.code == 1, result.out + result.err
    failed = json.loads(result.out)["hosts"][scene.host.name]
    cause = str(failed["cause"])
    assert "GPU 2 (0000:3a:00.0) fell off the bus (Xid 79) at " in cause and ": the host, not the release" in cause
    rollback = failed["rollback"]
    assert (failed["outcome"], rollback["to"], rollback["marked_bad"]) == ("rolled-back", good["release"], None)
    assert failed["culprit"] == "host"
    assert str(rollback["not_marked"]).startswith("the host, not the release: GPU 2 (0000:3a:00.0) fell off the bus")
    releases = json.loads(scene.cli("releases", scene.host.name, "--json").out)["releases"]
    assert [release["bad"] for release in releases] == [None] * len(releases) and len(releases) == 2

    diagnosis = json.loads(scene.cli("diagnose", scene.host.name, "--release", failed["attempted"], "--json").out)
    assert diagnosis["verdict"] == "environment", diagnosis
    assert diagnosis["headline"].startswith("environment: the host's GPU failed: GPU 2 (0000:3a:00.0) fell off ")
    assert any("reboot" in step for step in diagnosis["next_steps"])


def test_diagnose_of_a_crash_loop_names_the_gpu_that_fell_off_the_bus_not_the_release(scene: Scene) -> None:
    """The verified release starts crash-looping with a CUDA error after GPU 2 fell off the bus this boot: the
    unit's own journal never names the GPU; `diagnose` reads the kernel journal and clears the release."""
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    knobs = {"SGLANG_TESTENGINE_CRASH_AFTER_LOAD": "CUDA error: unspecified launch failure"}
    scene.host.write_file(f"/opt/specops/sglang/releases/{good['release']}/sglang/testengine_env.json",
                          json.dumps(knobs).encode())  # fmt: skip
    inject_kernel_lines(scene.host, [FELL_OFF])
    scene.host.exec(["systemctl", "restart", "sglang"])
    deadline = time.monotonic() + 60
    while "CUDA error: unspecified launch failure" not in scene.journal():
        assert time.monotonic() < deadline, scene.journal()[-3000:]
        time.sleep(0.5)

    result = scene.cli("diagnose", scene.host.name, "--json")
    assert result.code == 1, result.out + result.err
    diagnosis = json.loads(result.out)
    assert diagnosis["verdict"] == "environment", diagnosis
    assert diagnosis["headline"].startswith("environment: the host's GPU failed: GPU 2 (0000:3a:00.0) fell off ")
    assert diagnosis["failure"]["source"] == "kernel"
    assert diagnosis["cleared"] == [f"the release is cleared: {good['release']} did not cause a GPU fault of the host"]


def test_the_guards_watch_does_not_blame_the_host_for_a_fault_on_a_gpu_its_engine_does_not_use(scene: Scene) -> None:
    """The engine runs on GPU 0 (`gpus = "0"`) and hangs after "verified"; meanwhile GPU 2 falls off the bus. That
    GPU is another engine's: the watch rolls the hung release back and marks it bad, as for any hang. (With any GPU
    counting, it would have left the hung release serving, blaming the host.)"""
    toml = scene.folder / "specops.toml"
    toml.write_text(toml.read_text().replace("limit_nofile = 20000\n", 'limit_nofile = 20000\ngpus = "0"\n', 1))
    watch_for(scene, 60)
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    build = copy_build(scene.folder / "hangs" / "python", [PATCH])
    (build / "sglang" / "testengine_env.json").write_text(json.dumps({"SGLANG_TESTENGINE_HANG_AFTER_SECONDS": "30"}))
    result = scene.cli("deploy", scene.host.name, "--build", str(build), "--json")
    assert result.code == 0, result.out + result.err
    hung = json.loads(result.out)["hosts"][scene.host.name]
    assert (hung["outcome"], hung["watch_s"]) == ("deployed", 60)
    inject_kernel_lines(scene.host, [FELL_OFF])  # GPU 2, during the watch
    found = watch_until(scene, "rolled-back", timeout=90)
    watch = found["watch"]
    assert isinstance(watch, dict) and found["current"] == good["release"], found
    assert "/health_generate did not answer" in str(watch["reason"]) and "the host" not in str(watch["reason"])
    listed = {r["id"]: r["bad"] for r in json.loads(scene.cli("releases", scene.host.name, "--json").out)["releases"]}
    assert listed[hung["release"]] is not None and listed[good["release"]] is None

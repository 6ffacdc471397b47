"""The test engine's stand-in for `sglang::scheduler`: a child process that "holds" GPU memory.

Real SGLang runs its scheduler (the process that owns the GPU memory) as a child of the HTTP server. When
the main process is killed without its children being cleaned up, the scheduler lives on, reparented to
PID 1, still holding its memory (sglang #23627; PR #16484: the SIGTERM path exits 137 and skips child
cleanup). Under systemd the unit's cgroup catches such a child, unless it left the cgroup.

The child registers its "memory" in a holders folder that the nvidia-smi test double reads
(tests/testbed/gpu/nvidia-smi): `<pid>.json` = {pid, start, gpus, used_memory, name}. A holder counts only
while that pid is alive with that start time, so a killed scheduler frees its memory, as on a real GPU.

Env knobs:
  SPECOPS_NVIDIA_SMI_HOLDERS          the holders folder (default /run/specops-testbed/gpu-holders)
  SGLANG_TESTENGINE_GPU_MIB           MiB held on each visible GPU (default 60000)
  SGLANG_TESTENGINE_LEAK_SCHEDULER    1: the scheduler moves itself out of the unit's cgroup and the main
                                      process never stops it (what a leaked `sglang::scheduler` does)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

HOLDERS_DIR = "/run/specops-testbed/gpu-holders"
ESCAPE_CGROUP = "specops-testbed-escaped"


def holders_dir() -> str:
    return os.environ.get("SPECOPS_NVIDIA_SMI_HOLDERS") or HOLDERS_DIR


def leaks() -> bool:
    return os.environ.get("SGLANG_TESTENGINE_LEAK_SCHEDULER", "") == "1"


def visible_gpus() -> list[int]:
    """CUDA_VISIBLE_DEVICES as physical indexes (what nvidia-smi reports); GPU 0 when unset."""
    words = [word.strip() for word in os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")]
    return [int(word) for word in words if word.isdigit()] or [0]


def start_time(pid: int) -> str:
    """Field 22 of /proc/PID/stat (clock ticks since boot): tells a pid from a later reuse of it."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
        return handle.read().rsplit(")", 1)[1].split()[19]


def _escape_cgroup() -> None:
    """Leave the unit's cgroup for a sibling one, as a scheduler started outside systemd's reach would."""
    root = "/sys/fs/cgroup"
    target = os.path.join(root, ESCAPE_CGROUP)
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, "cgroup.procs"), "w", encoding="utf-8") as handle:
        handle.write(str(os.getpid()))


def register() -> str:
    os.makedirs(holders_dir(), exist_ok=True)
    pid = os.getpid()
    record = {
        "pid": pid,
        "start": start_time(pid),
        "gpus": visible_gpus(),
        "used_memory": int(os.environ.get("SGLANG_TESTENGINE_GPU_MIB") or 60000),
        "name": sys.executable,
    }
    path = os.path.join(holders_dir(), f"{pid}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    os.replace(path + ".tmp", path)
    return path


def spawn() -> subprocess.Popen[bytes]:
    """Started by launch_server before the weights load (SGLang starts its schedulers first)."""
    return subprocess.Popen([sys.executable, "-m", "sglang.srt.testengine_scheduler"])


def stop(child: subprocess.Popen[bytes]) -> None:
    """The main process's clean-up on a graceful exit (kill_process_tree); a leaking engine skips it."""
    if leaks() or child.poll() is not None:
        return
    child.send_signal(signal.SIGKILL)
    child.wait()


def main() -> None:
    if leaks():
        _escape_cgroup()
    register()  # the file outlives the process: the double counts it only while the pid is alive
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()

"""A deploy restarts a serving engine without cutting its users, and never starts on GPUs still held.

Real test hosts: systemd stops the test engine with KillMode=mixed (SIGTERM to its main process only), the
engine drains like SGLang, and specops watches /metrics through the SSH channel. The engine's scheduler child
"holds" GPU memory in the nvidia-smi double; one that leaked out of the unit's cgroup outlives its engine.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene, make_scene
from tests.testbed.engine import RENUMBER_PATCH
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e
PROFILES = Path(__file__).resolve().parents[2] / "profiles"
HOLDERS = "/run/specops-testbed/gpu-holders"
STREAM_TOKENS = 1500  # 15 s at 100 tokens/s: still running when the deploy reaches its drain

# runs inside the host: one streaming /generate, then a JSON line saying what arrived
STREAM_CLIENT = """
import json, sys, time, urllib.request
body = {"text": "keep streaming", "sampling_params": {"max_new_tokens": int(sys.argv[1])}, "stream": True}
request = urllib.request.Request("http://127.0.0.1:30000/generate", data=json.dumps(body).encode())
seen = {"tokens": 0, "done": False, "finish": None, "error": None}
try:
    with urllib.request.urlopen(request, timeout=120) as response:
        for raw in response:
            line = raw.decode().strip()
            if line == "data: [DONE]":
                seen["done"] = True
            elif line.startswith("data: "):
                meta = json.loads(line[6:])["meta_info"]
                seen["tokens"] = meta["completion_tokens"]
                seen["finish"] = (meta["finish_reason"] or {}).get("type")
except Exception as error:
    seen["error"] = f"{type(error).__name__}: {error}"
seen["ended"] = time.time()
print(json.dumps(seen))
"""

# runs inside the host: the /metrics gauge of running requests (-1: no answer)
RUNNING = """
import urllib.request
try:
    text = urllib.request.urlopen("http://127.0.0.1:30000/metrics", timeout=5).read().decode()
    print(int(float(next(l for l in text.splitlines() if l.startswith("sglang:num_running_reqs{")).split()[-1])))
except Exception:
    print(-1)
"""

# another team's process: its own service, reparented to PID 1, holding memory on GPU $1 (the double's holders)
FOREIGN = """
import json, os, sys, time
pid = os.getpid()
start = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19]
os.makedirs(sys.argv[2], exist_ok=True)
record = {"pid": pid, "start": start, "gpus": [int(sys.argv[1])], "used_memory": 30000, "name": "/opt/other/python3"}
json.dump(record, open(f"{sys.argv[2]}/{pid}.json", "w"))
time.sleep(3600)
"""


def _scene(host: TestHost, venv: Path, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
           drain_s: int, gpus: str | None = None) -> Scene:  # fmt: skip
    made = make_scene(host, venv, folder, capsys, monkeypatch)
    config = made.folder / "specops.toml"
    text = config.read_text().replace('TOKENS_PER_SECOND = "400"', 'TOKENS_PER_SECOND = "100"')
    config.write_text(text + (f'gpus = "{gpus}"\n' if gpus else ""))
    (made.folder / "profiles").mkdir()
    profile = (PROFILES / "ddtree.toml").read_text() + f"\n[drain]\ntimeout_s = {drain_s}\n"
    (made.folder / "profiles" / "ddtree.toml").write_text(profile)
    return made


def _python(scene: Scene) -> str:
    return str(scene.venv / "bin" / "python")


def _stream(scene: Scene, into: dict[str, Any]) -> threading.Thread:
    def client() -> None:
        done = scene.host.exec([_python(scene), "-c", STREAM_CLIENT, str(STREAM_TOKENS)], timeout=180)
        into.update(json.loads(done.stdout.decode().strip().splitlines()[-1]))

    thread = threading.Thread(target=client)
    thread.start()
    deadline = time.monotonic() + 30
    while scene.host.exec([_python(scene), "-c", RUNNING]).stdout.decode().strip() != "1":
        assert time.monotonic() < deadline, "the streaming request never showed in /metrics"
        time.sleep(0.2)
    return thread


def test_a_stream_running_during_a_deploy_finishes_complete_and_the_deploy_waited(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    scene = _scene(testhost, host_venv, tmp_path, capsys, monkeypatch, drain_s=120)
    first, _ = scene.deploy()
    assert first.code == 0, first.out + first.err
    seen: dict[str, Any] = {}
    client = _stream(scene, seen)
    result, outcome = scene.deploy("--patch", str(RENUMBER_PATCH))
    finished = time.time()
    client.join(timeout=120)
    assert result.code == 0, result.out + result.err
    assert outcome["outcome"] == "deployed"
    assert (seen["tokens"], seen["done"], seen["finish"], seen["error"]) == (STREAM_TOKENS, True, "length", None)
    drain = outcome["drain"]
    assert (drain["was_running"], drain["killed"], drain["cut"]) == (True, False, 0)
    assert drain["at_start"]["running"] == 1
    assert drain["seconds"] > 2  # it waited for the stream, which ended before the deploy did
    assert seen["ended"] < finished
    assert "Gracefully exiting... remaining number of requests 1" in scene.journal()
    shown = scene.host.exec(["systemctl", "show", "sglang.service", "-p", "KillMode"]).stdout.decode()
    assert shown.strip() == "KillMode=mixed"


def test_a_drain_budget_shorter_than_the_request_cuts_it_and_says_so(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    scene = _scene(testhost, host_venv, tmp_path, capsys, monkeypatch, drain_s=2)
    first, _ = scene.deploy()
    assert first.code == 0, first.out + first.err
    seen: dict[str, Any] = {}
    client = _stream(scene, seen)
    result = scene.cli("deploy", testhost.name, "--build", str(UNPATCHED), "--patch", str(PATCH), "--patch",
                       str(RENUMBER_PATCH))  # fmt: skip
    client.join(timeout=120)
    assert result.code == 0, result.out + result.err
    assert f"{testhost.name}: drain budget of 2 s ran out: 1 request cut (SIGKILL)" in result.out
    assert seen["done"] is False and seen["tokens"] < STREAM_TOKENS  # the client saw its stream cut
    audit = json.loads(scene.cli("audit", testhost.name, "--json").out)
    entries = audit["entries"] if isinstance(audit, dict) else audit
    assert entries[-1]["drain"]["cut"] == 1


def _holders(scene: Scene) -> list[dict[str, Any]]:
    listing = scene.host.exec(["sh", "-c", f"cat {HOLDERS}/*.json 2>/dev/null | tr '}}' '\\n'"]).stdout.decode()
    return [json.loads(part + "}") for part in listing.splitlines() if part.strip()]


def _alive(scene: Scene, pid: int) -> bool:
    return scene.host.exec(["kill", "-0", str(pid)], check=False).returncode == 0


def _foreign(scene: Scene, name: str, gpu: int) -> int:
    argv = ["systemd-run", f"--unit={name}", "-p", "WorkingDirectory=/root", "/usr/bin/python3", "-c", FOREIGN,
            str(gpu), HOLDERS]  # fmt: skip
    scene.host.exec(argv)
    deadline = time.monotonic() + 10
    while True:
        shown = scene.host.exec(["systemctl", "show", name, "-p", "MainPID"]).stdout.decode().strip()
        pid = int(shown.split("=")[1])
        if pid and any(holder["pid"] == pid for holder in _holders(scene)):
            return pid
        assert time.monotonic() < deadline, f"{name} never registered its GPU memory"
        time.sleep(0.1)


def _started_in_the_release(scene: Scene, gpu: int) -> int:
    """`nohup python3 ... &` from `current` in a root shell: its shell exits, so it is reparented to PID 1."""
    scene.host.write_file("/run/specops-testbed/manual-run.py", FOREIGN.encode())
    script = 'cd /opt/specops/sglang/current && python3 "$1" "$2" "$3" >/dev/null 2>&1 & echo $!'
    argv = ["sh", "-c", script, "sh", "/run/specops-testbed/manual-run.py", str(gpu), HOLDERS]
    pid = int(scene.host.exec(argv).stdout.decode())
    deadline = time.monotonic() + 10
    while not any(holder["pid"] == pid for holder in _holders(scene)):
        assert time.monotonic() < deadline, "the manual run never registered its GPU memory"
        time.sleep(0.1)
    return pid


def test_an_orphan_on_the_units_gpu_stops_the_start_and_reap_frees_it_never_touching_others(
    testhost: TestHost, host_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    scene = _scene(testhost, host_venv, tmp_path, capsys, monkeypatch, drain_s=30, gpus="0")
    config = scene.folder / "specops.toml"
    plain = config.read_text()
    config.write_text(plain.replace("env = { ", 'env = { SGLANG_TESTENGINE_LEAK_SCHEDULER = "1", '))
    first, _ = scene.deploy()
    assert first.code == 0, first.out + first.err
    (scheduler,) = _holders(scene)  # the engine's scheduler, escaped from the unit's cgroup
    config.write_text(plain)  # the next engines clean up after themselves
    bystander = _foreign(scene, "other-team", gpu=1)  # not on the unit's GPU

    stopped, outcome = scene.deploy("--patch", str(RENUMBER_PATCH))
    assert stopped.code == 1, stopped.out + stopped.err
    assert outcome["outcome"] == "failed"
    assert f"pid {scheduler['pid']} (" in outcome["cause"] and "orphan of the old engine" in outcome["cause"]
    assert "reparented to PID 1" in outcome["cause"] and "/opt/specops/sglang/releases/" in outcome["cause"]
    invocation = outcome["cause"].split("; invocation ", 1)[1].split(" ", 1)[0]  # its run, from its environment
    assert f"invocation {invocation} of sglang.service (its last run)" in outcome["cause"]
    journal = [
        "journalctl",
        "-q",
        "-n",
        "1",
        "-o",
        "cat",
        "_PID=1",
        "UNIT=sglang.service",
        f"INVOCATION_ID={invocation}",
    ]
    assert scene.host.exec(journal).stdout.strip()  # what proves it still once the unit has run again
    assert "--reap" in outcome["hint"]
    assert scene.host.exec(["systemctl", "is-active", "sglang"], check=False).stdout.decode().strip() != "active"
    assert _alive(scene, scheduler["pid"])

    intruder = _foreign(scene, "intruder", gpu=0)  # someone else's process on the unit's GPU
    stray = _started_in_the_release(scene, gpu=0)  # a manual run in a release: reparented, root, not a service
    refused, outcome = scene.deploy("--patch", str(RENUMBER_PATCH), "--reap")
    assert refused.code == 1, refused.out + refused.err
    assert f"pid {intruder} (" in outcome["cause"] and "not the unit's" in outcome["cause"]
    named = next(line for line in outcome["cause"].splitlines() if f"pid {stray} (" in line)
    assert "not the unit's" in named and "no invocation of sglang.service in its environment" in named
    assert "/opt/specops/sglang/releases/" in named and "reparented to PID 1" in named
    assert "specops never stops it" in outcome["hint"]
    assert _alive(scene, intruder) and _alive(scene, scheduler["pid"]) and _alive(scene, stray)

    scene.host.exec(["systemctl", "stop", "intruder"])  # their owners free the GPU
    scene.host.exec(["kill", str(stray)])
    reaped, outcome = scene.deploy("--patch", str(RENUMBER_PATCH), "--reap")
    assert reaped.code == 0, reaped.out + reaped.err
    assert outcome["outcome"] == "deployed"
    assert [holder["pid"] for holder in outcome["gpus"]["reaped"]] == [scheduler["pid"]]
    assert not _alive(scene, scheduler["pid"])
    assert _alive(scene, bystander)  # a process outside the unit is never killed

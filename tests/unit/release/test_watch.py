"""The guard's watch after "verified", run in-process against a real HTTP server on loopback: a healthy engine
is left alone until the window ends; one that accepts connections and never answers /health_generate (a hung
SGLang) is rolled back under the host's lock, the release it leaves marked bad and the audit log saying why;
another specops taking the lock ends the watch; `list` reports the window with the time left."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from specops.remote.release import watch
from specops.remote.release.catalog import op_list
from specops.remote.release.script import WATCH_FILE
from tests.unit.release.hostfixture import add_release, audit_lines, current, point_current, record_systemctl

OLD, NEW = "20261101T000000Z-aaaa", "20261102T000000Z-bbbb"


class Engine(BaseHTTPRequestHandler):
    """/health_generate: 200, or (hung) no answer at all until the test ends."""

    hung = threading.Event()
    release = threading.Event()

    def do_GET(self) -> None:
        if self.hung.is_set():
            self.release.wait(10)
            return
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def engine() -> Iterator[str]:
    Engine.hung.clear()
    Engine.release.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Engine)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/health_generate"
    Engine.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def service(tmp_path: Path) -> Path:
    service_dir = tmp_path / "sglang"
    add_release(service_dir, OLD)
    add_release(service_dir, NEW)
    point_current(service_dir, NEW)
    return service_dir


def _watch(service: Path, url: str, lock_dir: Path, window_s: str) -> dict[str, object]:
    # window, url, lock, probe timeout 0.3 s, 2 misses in a row, a probe every 0.1 s, the plan's target OLD
    return watch.op_watch(str(service), "sglang.service", NEW, window_s, url, str(lock_dir), "0.3", "2", "0.1", OLD)


def _record(service: Path) -> dict[str, object]:
    return dict(json.loads((service / WATCH_FILE).read_text()))


def test_a_healthy_engine_is_left_alone_and_the_watch_ends_with_the_window(
    service: Path, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record_systemctl(monkeypatch)
    began = time.monotonic()
    reply = _watch(service, engine, tmp_path / "lock", "1")
    assert 1.0 <= time.monotonic() - began < 5
    assert reply == {"state": "passed", "reason": "healthy for 1 s after verified: the guard stopped watching"}
    assert current(service) == NEW and calls == []
    record = _record(service)
    assert (record["state"], record["release"], record["failures"]) == ("passed", NEW, 0)
    assert int(str(record["probes"])) >= 3
    entry = audit_lines(service)[-1]
    assert (entry["action"], entry["to"], entry["outcome"]) == ("watch", NEW, "passed")


def test_a_hung_engine_is_rolled_back_under_the_lock_and_marked_bad(
    service: Path, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record_systemctl(monkeypatch)
    Engine.hung.set()
    lock_dir = tmp_path / "lock"
    seen_lock: list[dict[str, object]] = []
    rollback = watch.op_rollback

    def rollback_seeing_the_lock(*args: str) -> dict[str, object]:
        seen_lock.append(json.loads((lock_dir / "holder.json").read_text()))
        return rollback(*args)

    monkeypatch.setattr(watch, "op_rollback", rollback_seeing_the_lock)
    began = time.monotonic()
    reply = _watch(service, engine, lock_dir, "30")
    assert time.monotonic() - began < 5  # two probes of 0.3 s, not the 30 s window
    assert reply["state"] == "rolled-back"
    reason = str(reply["reason"])
    assert reason.startswith(f"guard: release {NEW} failed its watch ")
    assert reason.endswith("/health_generate did not answer within 0.3 s (2 times in a row)")
    assert current(service) == OLD and ["systemctl", "restart", "sglang.service"] in calls
    assert seen_lock[0]["command"] == f"specops guard: rolling back {NEW} (it failed its watch)"
    assert not lock_dir.exists()  # released afterwards
    entry = audit_lines(service)[-1]
    assert (entry["action"], entry["from"], entry["to"], entry["message"]) == ("rollback", NEW, OLD, reason)
    listed = {r["id"]: r for r in op_list(str(service))["releases"]}
    assert listed[NEW]["bad"]["reason"] == "rolled back: " + reason
    assert (_record(service)["state"], _record(service)["reason"]) == ("rolled-back", reason)
    assert _record(service)["rolled_back_to"] == OLD


def test_a_refused_connection_counts_as_a_failure(
    service: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_systemctl(monkeypatch)
    reply = _watch(service, "http://127.0.0.1:9/health_generate", tmp_path / "lock", "30")
    assert reply["state"] == "rolled-back"
    assert "/health_generate could not be reached (" in str(reply["reason"])


def test_an_engine_that_fails_on_an_environment_fault_is_neither_rolled_back_nor_marked(
    service: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    journal = b"INFO loading\nRuntimeError: Could not load libtorchcodec. Likely causes:\n"

    def journal_says_ffmpeg_is_gone(argv: list[str], **_: object) -> subprocess.CompletedProcess[bytes]:
        calls.append(list(argv))
        return subprocess.CompletedProcess(argv, 0, journal if argv[0] == "journalctl" else b"")

    monkeypatch.setattr(subprocess, "run", journal_says_ffmpeg_is_gone)
    reply = _watch(service, "http://127.0.0.1:9/health_generate", tmp_path / "lock", "30")
    assert reply["state"] == "no-rollback"
    reason = str(reply["reason"])
    assert "; the host, not the release: torchcodec cannot load FFmpeg: RuntimeError: Could not load " in reason
    assert "nothing marked bad, NOT rolled back" in reason
    assert current(service) == NEW and [argv[0] for argv in calls] == ["journalctl"]
    assert calls[0][:3] == ["journalctl", "-u", "sglang.service"]
    assert all(release.get("bad") is None for release in op_list(str(service))["releases"])
    entry = audit_lines(service)[-1]
    assert (entry["action"], entry["outcome"], entry["message"]) == ("watch", "no-rollback", reason)


def test_another_specops_taking_the_lock_ends_the_watch_without_a_rollback(
    service: Path, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record_systemctl(monkeypatch)
    lock_dir = tmp_path / "lock"
    lock_dir.mkdir()
    (lock_dir / "holder.json").write_text(json.dumps({"token": "deploy"}))  # the deploy that started the watch

    def next_deploy() -> None:
        time.sleep(0.4)
        (lock_dir / "holder.json").write_text(json.dumps({"token": "someone-else"}))
        Engine.hung.set()

    threading.Thread(target=next_deploy, daemon=True).start()
    reply = _watch(service, engine, lock_dir, "30")
    assert reply == {"state": "ended", "reason": "another specops operation took the host's lock"}
    assert current(service) == NEW and calls == []


def test_a_switched_current_ends_the_watch(service: Path, engine: str, tmp_path: Path) -> None:
    point_current(service, OLD)
    reply = _watch(service, engine, tmp_path / "lock", "30")
    assert reply == {"state": "ended", "reason": f"current is no longer {NEW}: nothing left to watch"}


def test_the_listing_reports_the_window_with_the_time_left(service: Path) -> None:
    record = {"schema": 1, "release": NEW, "state": "watching", "deadline": "2026-12-01T00:02:00Z",
              "deadline_epoch": int(time.time()) + 120, "failures": 0}  # fmt: skip
    (service / WATCH_FILE).write_text(json.dumps(record))
    listed = op_list(str(service))["watch"]
    assert listed["state"] == "watching" and 118 <= listed["left_s"] <= 120
    (service / WATCH_FILE).write_text("[1, 2]")
    assert op_list(str(service))["watch"] is None  # unreadable: no window, never an error
    os.unlink(service / WATCH_FILE)
    assert op_list(str(service))["watch"] is None


@pytest.mark.parametrize("announced", [True, False], ids=["a-deploys-disarm", "a-stop-nobody-announced"])
def test_a_stopped_watch_says_whether_a_deploy_replaced_it_or_it_was_cut_short(
    service: Path, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, announced: bool
) -> None:
    """systemd stops the watch with SIGTERM both for a deploy's disarm and on the way down; only the disarm writes
    the stop file first (commands/guard.py), so a reboot is never taken for a deploy even when systemd, late in
    its shutdown, no longer says it is stopping."""
    import signal

    monkeypatch.setattr(watch, "shutting_down", lambda: False)
    (service / watch.WATCH_STOP_FILE).write_text("")  # an earlier disarm's, with no watch running: ignored

    def stop() -> None:
        time.sleep(0.5)
        if announced:
            (service / watch.WATCH_STOP_FILE).write_text("")
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop, daemon=True).start()
    with pytest.raises(SystemExit):
        _watch(service, engine, tmp_path / "lock", "30")
    record = _record(service)
    assert record["state"] == ("stopped" if announced else "cut-short")
    assert str(record["reason"]).startswith("stopped before its deadline" if announced else "cut short by a stop")
    assert not (service / watch.WATCH_STOP_FILE).exists()


XID_79_ON_GPU_2 = ("2026-12-03T13:52:46.118000+0000 h100-a kernel: NVRM: Xid (PCI:0000:3a:00): 79, pid=0, name=, "
                   "GPU has fallen off the bus.")  # fmt: skip
BUS_TABLE = b"0, 00000000:18:00.0\n1, 00000000:2A:00.0\n2, 00000000:3A:00.0\n3, 00000000:5D:00.0\n"


@pytest.mark.parametrize(("gpus", "state"), [("0,1", "rolled-back"), ("2,3", "no-rollback"), ("", "no-rollback")])
def test_a_gpu_fault_blames_the_host_only_on_a_gpu_the_engine_uses(
    service: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpus: str, state: str
) -> None:
    """GPU 2 fell off the bus while the watched engine failed: with the engine on GPUs 0 and 1 that is another
    engine's GPU, so the failure is the release's (rolled back); on GPUs 2 and 3, or with no `gpus` setting
    (every GPU), the host's (not rolled back, nothing marked)."""
    calls: list[list[str]] = []

    def host(argv: list[str], **_: object) -> subprocess.CompletedProcess[bytes]:
        calls.append(list(argv))
        kernel = argv[:2] == ["journalctl", "-k"]
        out = XID_79_ON_GPU_2.encode() + b"\n" if kernel else BUS_TABLE if argv[0] == "nvidia-smi" else b""
        return subprocess.CompletedProcess(argv, 0, out)

    monkeypatch.setattr(subprocess, "run", host)
    reply = watch.op_watch(str(service), "sglang.service", NEW, "30", "http://127.0.0.1:9/health_generate",
                           str(tmp_path / "lock"), "0.3", "2", "0.1", OLD, gpus)  # fmt: skip
    assert reply["state"] == state, reply
    listed = {r["id"]: r for r in op_list(str(service))["releases"]}
    if state == "rolled-back":
        assert current(service) == OLD and listed[NEW]["bad"] is not None
        assert ["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"] in calls
    else:
        assert "the host, not the release: a GPU failed (kernel journal): " in str(reply["reason"])
        assert current(service) == NEW and listed[NEW]["bad"] is None
        assert any(argv[0] == "nvidia-smi" for argv in calls) == bool(gpus)  # no setting: no table needed

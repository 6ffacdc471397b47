"""[notify] on a real test host: a release that passes its gates and hangs in the guard's watch is rolled back
by the guard, and a webhook listener on the test host receives, from the host itself, the event naming the
release left and why; the deploys' own events come from the operator's machine to the same listener, and the
webhook's token is in no output and only in the host's root-owned 0600 notify file. Real systemd, OpenSSH,
test engine and HTTP."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from specops.ops import notify
from tests.e2e.deployscene import PATCH, Scene, watch_for, watch_until
from tests.testbed.engine import copy_build

pytestmark = pytest.mark.e2e
HANG_AFTER_S = 30  # after the engine's start: its deploy's gates (~15 s here) are done by then, the window not
PORT = 18099
TOKEN = "n0tify-t0ken"
RECEIVED = "/root/webhook-posts.jsonl"
LISTENER = f"""\
import http.server

class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with open({RECEIVED!r}, "ab") as posts:
            posts.write(body.replace(b"\\n", b" ") + b"\\n")
        self.send_response(204)
        self.end_headers()

http.server.ThreadingHTTPServer(("0.0.0.0", {PORT}), Handler).serve_forever()
"""


def _start_listener(scene: Scene) -> str:
    """A webhook receiver on the test host (a transient unit): every POST's body, one line each, in RECEIVED."""
    scene.host.write_file("/root/webhook-listener.py", LISTENER.encode())
    python = str(scene.venv / "bin" / "python")
    scene.host.exec(["systemd-run", "--unit=notify-listener", "--collect", python, "/root/webhook-listener.py"])
    for _ in range(50):
        with socket.socket() as probe:
            probe.settimeout(1)
            if probe.connect_ex((scene.host.ip, PORT)) == 0:
                break
        time.sleep(0.2)
    return f"http://{scene.host.ip}:{PORT}/hooks/{TOKEN}?token={TOKEN}"


def _received(scene: Scene) -> list[dict[str, Any]]:
    found = scene.host.exec(["cat", RECEIVED], check=False).stdout.decode()
    return [json.loads(line) for line in found.splitlines() if line.strip()]


def _wait_for(scene: Scene, event: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for document in _received(scene):
            if document["event"] == event:
                return document
        time.sleep(0.5)
    raise AssertionError(f"no {event} event reached the listener: {_received(scene)}")


def test_the_guard_rolls_back_a_hung_release_and_the_host_posts_the_event(scene: Scene, tmp_path: Path) -> None:
    webhook = _start_listener(scene)
    toml = scene.folder / "specops.toml"
    toml.write_text(f'[notify]\nwebhook = "{webhook}"\nretries = 1\n' + toml.read_text())
    watch_for(scene, 60)
    first, good = scene.deploy()
    assert first.code == 0, first.out + first.err
    build = copy_build(tmp_path / "hangs" / "python", [PATCH])
    (build / "sglang" / "testengine_env.json").write_text(
        json.dumps({"SGLANG_TESTENGINE_HANG_AFTER_SECONDS": str(HANG_AFTER_S)})
    )
    planned = scene.cli("deploy", scene.host.name, "--build", str(build), "--dry-run")
    assert f"the guard posts its rollbacks to http://{scene.host.ip}:{PORT}/***" in planned.out, planned.out
    result = scene.cli("deploy", scene.host.name, "--build", str(build), "--json")
    assert result.code == 0, result.out + result.err
    hung = str(json.loads(result.out)["hosts"][scene.host.name]["release"])
    notify.wait_for_deliveries()  # the operator's own events: posted in the background after the outcome
    verified = [e for e in _received(scene) if e["event"] == "deploy.verified"]
    assert [(e["host"], e["release"], e["source"]) for e in verified] == [
        (scene.host.name, good["release"], "specops"), (scene.host.name, hung, "specops")]  # fmt: skip

    found = watch_until(scene, "rolled-back", timeout=90)
    assert found["current"] == good["release"]
    event = _wait_for(scene, "watch.rolled-back")
    assert (event["host"], event["release"], event["serving"], event["previous"]) == (
        scene.host.name, hung, good["release"], good["release"])  # fmt: skip
    assert (event["outcome"], event["profile"], event["source"]) == ("rolled-back", "ddtree", "host")
    assert str(event["cause"]).startswith(f"guard: release {hung} failed its watch ")
    assert "/health_generate did not answer within 2 s (2 times in a row)" in str(event["cause"])

    kept = scene.host.exec(["stat", "-c", "%a %U", "/opt/specops/sglang/.specops-notify.json"]).stdout.decode()
    assert kept.split() == ["600", "root"]
    seen = first.out + first.err + planned.out + planned.err + result.out + result.err
    assert TOKEN not in seen + scene.cli("audit", scene.host.name).out + scene.cli("status", scene.host.name).out

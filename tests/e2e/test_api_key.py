"""A deploy to a real test host whose engine is protected by SGLang's --api-key (api_key_secret): the gates
pass because specops sends the key, and the key is only in the 0600 env files (the live one and the release's
own, which a rollback restores) and, as SGLang reads it, the engine's own command line; never in specops's output,
the unit file, the manifest or the audit log."""

from __future__ import annotations

import json

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-4f1c9a7d2b"
UNIT = "/etc/systemd/system/sglang.service"
SERVICE_DIR = "/opt/specops/sglang"
ASK = """import sys, urllib.request, urllib.error
request = urllib.request.Request("http://127.0.0.1:30000" + sys.argv[1], data=sys.argv[2].encode() or None)
if sys.argv[3]:
    request.add_header("Authorization", "Bearer " + sys.argv[3])
try:
    print(urllib.request.urlopen(request, timeout=30).status)
except urllib.error.HTTPError as error:
    print(error.code)
"""


@pytest.fixture
def scene(scene: Scene, monkeypatch: pytest.MonkeyPatch) -> Scene:
    """The shared scene, with the engine protected by an API key kept as a secret."""
    made = scene
    config = made.folder / "specops.toml"
    config.write_text(config.read_text() + 'secrets = ["SGLANG_API_KEY"]\napi_key_secret = "SGLANG_API_KEY"\n')
    monkeypatch.setenv("SGLANG_API_KEY", KEY)
    return made


def _status(scene: Scene, path: str, body: str, key: str) -> str:
    words = ["/usr/bin/python3", "-c", ASK, path, body, key]
    return scene.host.exec(words).stdout.decode().strip()


def test_a_protected_engine_deploys_verified_and_the_key_stays_in_the_env_file(scene: Scene) -> None:
    build = ["--build", str(UNPATCHED), "--patch", str(PATCH)]
    plan = scene.cli("-v", "deploy", scene.host.name, *build, "--dry-run")
    assert plan.code == 0, plan.out + plan.err
    assert "--api-key ${SGLANG_API_KEY}" in plan.out  # the unit diff shows the reference
    result = scene.cli("-v", "deploy", scene.host.name, *build, "--json")
    assert result.code == 0, result.out + result.err
    host = json.loads(result.out)["hosts"][scene.host.name]
    assert host["outcome"] == "deployed" and host["gates"]["passed"] is True
    status = scene.cli("status", scene.host.name, "--json")
    rendered = scene.cli("render", scene.host.name, "--json")
    for output in (plan, result, status, rendered):
        assert KEY not in output.out + output.err

    unit = scene.host.read_file(UNIT).decode()
    assert "--api-key ${SGLANG_API_KEY}" in unit and KEY not in unit
    mode = scene.host.exec(["stat", "-c", "%a %U", f"{SERVICE_DIR}/env"]).stdout.decode().split()
    assert mode == ["600", "root"] and f'SGLANG_API_KEY="{KEY}"' in scene.host.read_file(f"{SERVICE_DIR}/env").decode()
    found = scene.host.exec(["grep", "-rlF", KEY, SERVICE_DIR, "/etc/systemd/system"], check=False).stdout.decode()
    release = json.loads(result.out)["hosts"][scene.host.name]["release"]
    kept = f"{SERVICE_DIR}/releases/{release}/.specops-env"  # the release's own env file, restored by a rollback
    assert sorted(found.split()) == sorted([f"{SERVICE_DIR}/env", kept])  # not in a manifest, the audit log, a unit
    kept_mode = scene.host.exec(["stat", "-c", "%a %U", kept]).stdout.decode().split()
    assert kept_mode == ["600", "root"]

    pid = scene.host.exec(["systemctl", "show", "-p", "MainPID", "--value", "sglang"]).stdout.decode().strip()
    argv = scene.host.read_file(f"/proc/{pid}/cmdline").split(b"\0")
    assert argv[argv.index(b"--api-key") + 1] == KEY.encode()  # systemd filled ${SGLANG_API_KEY} in
    generate = '{"text": "hi", "sampling_params": {"max_new_tokens": 1}}'
    assert _status(scene, "/generate", generate, "") == "401"  # the engine really is protected
    assert _status(scene, "/generate", generate, KEY) == "200"
    assert _status(scene, "/health", "", "") == "200"  # SGLang exempts /health*


def test_the_engine_runs_verified_under_the_units_hardening(scene: Scene) -> None:
    result, host = scene.deploy()
    assert result.code == 0, result.out + result.err
    assert host["outcome"] == "deployed" and host["gates"]["passed"] is True
    shown = scene.host.exec(["systemctl", "show", "-p", "NoNewPrivileges,ProtectSystem,PrivateTmp", "sglang"])
    assert sorted(shown.stdout.decode().split()) == ["NoNewPrivileges=yes", "PrivateTmp=yes", "ProtectSystem=full"]
    pid = scene.host.exec(["systemctl", "show", "-p", "MainPID", "--value", "sglang"]).stdout.decode().strip()
    status = scene.host.read_file(f"/proc/{pid}/status").decode()
    assert "NoNewPrivs:\t1" in status.splitlines()
    mounts = scene.host.read_file(f"/proc/{pid}/mountinfo").decode()
    assert any(line.split()[4] == "/usr" and " ro" in line for line in mounts.splitlines())  # ProtectSystem
    assert any(line.split()[4] == "/tmp" for line in mounts.splitlines())  # its own /tmp

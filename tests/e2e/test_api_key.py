"""A deploy to a real test host whose engine is protected by SGLang's --api-key (api_key_secret): the gates
pass because specops sends the key, and the key is only in the 0600 env files (the live one and the release's
own, which a rollback restores) and, as SGLang reads it, the engine's own command line; never in specops's output,
the unit file, the manifest or the audit log. Not even when specops reads that command line back from /proc to
name the processes holding the GPUs, reaps them, or quotes the journal of a start that failed."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.deployscene import PATCH, UNPATCHED, Scene
from tests.testbed.engine import RENUMBER_PATCH
from tests.unit.clirun import CliResult

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-4f1c9a7d2b"
UNIT = "/etc/systemd/system/sglang.service"
SERVICE_DIR = "/opt/specops/sglang"
HOLDERS = "/run/specops-testbed/gpu-holders"  # the nvidia-smi double lists the processes recorded here
# runs inside the host as argv[0] `-c` followed by the engine's own words (so its /proc cmdline holds the key
# as systemd expanded it): leaves its parent for PID 1 and the unit's cgroup for its own, sits in a release
# folder and holds 60000 MiB of GPU 0, as an engine process left behind by a GPU fault does
ORPHAN = """import json, os, sys, time
if os.fork():
    sys.exit(0)
os.setsid()
null = os.open("/dev/null", os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
os.makedirs("/sys/fs/cgroup/specops-e2e-orphan", exist_ok=True)
open("/sys/fs/cgroup/specops-e2e-orphan/cgroup.procs", "w").write(str(os.getpid()))
os.chdir(os.environ["RELEASE"])
pid = os.getpid()
start = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19]
os.makedirs(os.environ["HOLDERS"], exist_ok=True)
record = {"pid": pid, "start": start, "gpus": [0], "used_memory": 60000, "name": sys.executable}
json.dump(record, open(os.environ["HOLDERS"] + f"/{pid}.json", "w"))
time.sleep(3600)
"""
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


def _engine_argv(scene: Scene) -> list[str]:
    pid = scene.host.exec(["systemctl", "show", "-p", "MainPID", "--value", "sglang"]).stdout.decode().strip()
    return scene.host.read_file(f"/proc/{pid}/cmdline").decode().rstrip("\0").split("\0")


def _orphan(scene: Scene, argv: list[str]) -> int:
    """A process with the engine's command line left on GPU 0 in the serving release, with the unit's run in its
    environment as systemd gives it to every process of the unit (a scheduler that escaped): the pid, once listed."""
    release = scene.host.exec(["readlink", "-f", f"{SERVICE_DIR}/current"]).stdout.decode().strip()
    run = scene.host.exec(["systemctl", "show", "-p", "InvocationID", "--value", "sglang"]).stdout.decode().strip()
    env = ["env", f"RELEASE={release}", f"HOLDERS={HOLDERS}", f"INVOCATION_ID={run}"]
    one_line = f"exec(bytes.fromhex('{ORPHAN.encode().hex()}'))"  # no newline or backslash in a /proc line
    scene.host.exec([*env, "/usr/bin/python3", "-c", one_line, *argv])
    deadline = time.monotonic() + 10
    while True:
        found = scene.host.exec(["pgrep", "-f", "-n", "--", "exec.bytes.fromhex"], check=False).stdout.decode()
        listed = scene.host.exec(["ls", HOLDERS], check=False).stdout.decode().split()
        if found.strip() and f"{found.strip()}.json" in listed:
            return int(found)
        assert time.monotonic() < deadline, "the orphan never registered its GPU memory"
        time.sleep(0.1)


def _outputs(scene: Scene, *runs: CliResult) -> dict[str, str]:
    """Everything specops showed or wrote: each run's stdout (--json or plain) and stderr, both audit logs, the
    journal as `specops logs` shows it (plain and --json) and `specops audit`."""
    found = {f"run {index} {stream}": text for index, run in enumerate(runs)
             for stream, text in (("stdout", run.out), ("stderr", run.err))}  # fmt: skip
    found["local audit log"] = (scene.folder / "state" / "specops" / "audit.jsonl").read_text()
    found["host audit log"] = scene.host.read_file(f"{SERVICE_DIR}/audit.jsonl").decode()
    for words in (("logs", scene.host.name, "-n", "400"), ("--json", "logs", scene.host.name, "-n", "400"),
                  ("audit", scene.host.name), ("--json", "audit", scene.host.name)):  # fmt: skip
        shown = scene.cli(*words)
        found[" ".join(words)] = shown.out + shown.err
    return found


def test_a_deploy_a_reap_and_a_failed_start_show_the_key_nowhere(scene: Scene) -> None:
    """The GPUs-busy error, the reaping, the journal of a start that failed: each names what the host said,
    and the key that systemd expanded into the engine's command line is *** in every output."""
    first, host = scene.deploy()
    assert first.code == 0 and host["outcome"] == "deployed", first.out + first.err
    engine = _engine_argv(scene)
    assert engine[engine.index("--api-key") + 1] == KEY
    orphan = _orphan(scene, engine)

    busy = scene.cli("deploy", scene.host.name, "--build", str(UNPATCHED), "--patch", str(PATCH), "--patch",
                     str(RENUMBER_PATCH))  # fmt: skip
    busy_json, host = scene.deploy("--patch", str(RENUMBER_PATCH))
    assert busy.code == 1 and busy_json.code == 1, busy.out + busy.err
    assert f"pid {orphan} (" in host["cause"] and "--api-key ***" in host["cause"]  # named, the key masked
    reaped = scene.cli("-v", "deploy", scene.host.name, "--build", str(UNPATCHED), "--patch", str(PATCH),
                       "--patch", str(RENUMBER_PATCH), "--reap")  # fmt: skip
    assert reaped.code == 0, reaped.out + reaped.err
    assert f"reaping pid {orphan} (" in reaped.out + reaped.err and "--api-key ***" in reaped.out + reaped.err

    orphan = _orphan(scene, _engine_argv(scene))
    config = scene.folder / "specops.toml"
    crash = 'SGLANG_TESTENGINE_CRASH_AFTER_LOAD = "weights do not fit", '
    config.write_text(config.read_text().replace("env = { ", "env = { " + crash, 1))
    failed, host = scene.deploy("--reap")
    assert failed.code != 0 and host["outcome"] == "rolled-back", failed.out + failed.err
    assert [holder["pid"] for holder in host["gpus"]["reaped"]] == [orphan]
    assert "--api-key ***" in host["gpus"]["reaped"][0]["command"]
    assert "weights do not fit" in json.dumps(host)  # the failed start quotes its journal

    shown = _outputs(scene, first, busy, busy_json, reaped, failed)
    assert "api_key='***'" in shown["logs " + scene.host.name + " -n 400"]  # SGLang's server_args, masked
    assert [where for where, text in shown.items() if KEY in text] == []
    assert KEY in scene.journal()  # it was there to leak: SGLang logged it at every start

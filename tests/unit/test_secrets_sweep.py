"""The secrets sweep: every command, plain, --json, -v and both, on success and on failure, with a secret set
in the environment, and the engine's API key (api_key_secret) that the host hands back: in the engine's command line
that a deploy reads from /proc when an orphan holds the GPUs (refused, or reaped), and in journal lines. The
secrets' values must appear in no stdout, stderr, argv word, command input (the audit
log's lines), file put on the host (unit, manifest) or file left on this machine - only in the env file,
written with mode 0600.

Hosts are scripted RecordingHosts (tests/unit/deploy/scene.py: the deploy's whole conversation); a failure
is a failing smoke gate, an unreachable host, an unknown profile or a broken config. `SWEEP` is what ran
(docs/reliability.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from specops.commands.engine_stop import REAP_SCRIPT, inspect_argv
from specops.config.inventory import HostSpec
from specops.errors import ConnectError
from specops.host.process import FinishedPipe
from specops.host.recording import RecordingHost, reply
from tests.unit.clirun import run_cli
from tests.unit.deploy.scene import HOST, PYTHON, DeployScene, release, use_scene, write_build

pytestmark = pytest.mark.corpus  # the whole-product sweeps: outside the fast suite (pytest -m "not corpus"), run by CI

SECRET = "hf_S3cr3tV4lue9QzK7pL2xW"
API_KEY = "sk-Sw33pK3y7rQ2mZ"
CURRENT = "20261129T000000Z-aaaaaaaaaaaa"
CONFIG = f"""
[hosts.{HOST}]
ssh = "{HOST}"
python = "{PYTHON}"
model_path = "/srv/models/target"
profile = "nextn"
secrets = ["HF_TOKEN", "SGLANG_API_KEY"]
api_key_secret = "SGLANG_API_KEY"
k8s = {{ image = "registry.example/sglang:v1", models = {{ host_path = "/srv/models" }}, models_mount = "/srv/models", secret = "s" }}
env = {{ LOG_LEVEL = "info" }}
"""
BROKEN = CONFIG + "port = 0\n"
MODES = {"plain": (), "json": ("--json",), "verbose": ("-v",), "json+verbose": ("--json", "-v")}


@dataclass(frozen=True)
class Command:
    """One command line of the sweep; `host` says how the host answers ("scene", "unreachable", "none")."""

    name: str
    args: tuple[str, ...]
    host: str = "scene"
    smoke_passes: bool = True
    config: str = "specops.toml"
    held: tuple[str, ...] = ()  # the stop's GPU inspections in turn ("busy": an orphan with the key in its argv)


COMMANDS = [
    Command("render", ("render", HOST), host="none"),
    Command("render --env", ("render", HOST, "--env"), host="none"),
    Command("render, unknown profile", ("render", HOST, "--profile", "nosuch"), host="none"),
    Command("render --target k8s", ("render", HOST, "--target", "k8s"), host="none"),
    Command("render --target k8s --check", ("render", HOST, "--target", "k8s", "--check"), host="none"),
    Command("config check", ("config", "check"), host="none"),
    Command("config check, broken config", ("config", "check"), host="none", config="broken.toml"),
    Command("hosts", ("hosts",), host="none"),
    Command("deploy --dry-run", ("deploy", HOST, "--build", "build", "--dry-run")),
    Command("deploy", ("deploy", HOST, "--build", "build")),
    Command("deploy, failing gate", ("deploy", HOST, "--build", "build"), smoke_passes=False),
    Command("deploy, GPUs held by an orphan", ("deploy", HOST, "--build", "build"), held=("busy",)),
    Command("deploy --reap of an orphan", ("deploy", HOST, "--build", "build", "--reap"), held=("busy", "free")),
    Command("deploy, unreachable host", ("deploy", HOST, "--build", "build"), host="unreachable"),
    Command("status", ("status", HOST)),
    Command("status, unreachable host", ("status", HOST), host="unreachable"),
    Command("logs", ("logs", HOST, "-n", "5")),
    Command("audit", ("audit", HOST)),
    Command("audit, unreachable host", ("audit", HOST), host="unreachable"),
    Command("doctor", ("doctor", HOST)),
    Command("doctor, unreachable host", ("doctor", HOST), host="unreachable"),
]


@dataclass
class Seen:
    """Everything the secret could leak into during one command."""

    code: int = 0
    texts: dict[str, str] = field(default_factory=dict)
    env_files: list[tuple[int, bytes]] = field(default_factory=list)

    def leaks(self) -> list[str]:
        return [where for where, text in self.texts.items() if SECRET in text or API_KEY in text]


def _record_inputs(monkeypatch: pytest.MonkeyPatch, inputs: list[bytes]) -> None:
    """RecordingHost keeps only an input's size (inputs may carry secrets): keep the bytes, for this test."""
    original = RecordingHost.run

    def run(self: RecordingHost, argv: Any, *, input: bytes | None = None, **kwargs: Any) -> Any:
        if input is not None:
            inputs.append(input)
        return original(self, argv, input=input, **kwargs)

    monkeypatch.setattr(RecordingHost, "run", run)
    send = FinishedPipe.send

    def streamed(self: FinishedPipe, data: bytes, /) -> int:  # the push: the tar with the manifest in it
        inputs.append(bytes(data))
        return send(self, data)

    monkeypatch.setattr(FinishedPipe, "send", streamed)


def _with_views(host: RecordingHost, service_dir: str) -> RecordingHost:
    """What status, logs and audit read besides the deploy's conversation: the unit's state, its journal, the
    audit log (one earlier entry)."""
    from specops.ops import audit

    state = "ActiveState=active\nSubState=running\nMainPID=42\nNRestarts=0\nLoadState=loaded\n"
    entry = {
        "v": 1,
        "at": "2026-11-29T00:00:00Z",
        "op": "deploy",
        "user": "ops",
        "result": "ok",
        "message": f"pid 42 (python -m sglang.launch_server --api-key {API_KEY}) held GPU 0",
    }  # an older line
    host.script(["systemctl", "show"], reply(state))
    host.script(["sh", "-c", audit.READ_SCRIPT], reply(json.dumps(entry) + "\n"))
    said = f"server_args=ServerArgs(api_key='{API_KEY}')\nargv: --api-key={API_KEY}\nGET https://u:{API_KEY}@hub/m\n"
    host.script(["journalctl"], reply(said + "-- cursor: s=1;i=9\n"))
    host.script(["readlink"], reply(f"{service_dir}/releases/{CURRENT}\n"))
    host.script(["du"], reply(f"4096\t{service_dir}/cache\n"))  # status: the compile cache's size
    return host


def _holding(host: RecordingHost, spec: HostSpec, held: tuple[str, ...]) -> RecordingHost:
    """The stop before the restart finds an orphan of the old engine (its argv with the expanded key) on GPU 0."""
    if not held:
        return host
    stat = "4242 (python3) S 1 " + " ".join(["0"] * 17) + " 4711 0"
    orphan = (f"@gpus\n0, GPU-0, 60000\n@apps\n4242, 60000, GPU-0\n@unit\n@proc 4242\nstat {stat}\n"
              f"exe {PYTHON}\ncwd {spec.service_dir}/releases/{CURRENT}\ncgroup 0::/escaped;\n"
              f"cmdline {PYTHON} -m sglang.launch_server --api-key {API_KEY} --port 30000\n@end\n")  # fmt: skip
    free = "@gpus\n0, GPU-0, 0\n@apps\n@unit\n@end\n"
    host.script(inspect_argv(spec.unit_name), *(reply(orphan if one == "busy" else free) for one in held))
    host.script(["sh", "-c", REAP_SCRIPT], reply("stopped 4242\n"))
    host._rules[:0] = [host._rules.pop(), host._rules.pop()]  # first match wins: ahead of the scene's own
    return host


def _local_files(root: Path) -> dict[str, str]:
    found = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            found[f"local file {path.relative_to(root)}"] = path.read_bytes().decode("utf-8", "replace")
    return found


def _is_release_env_file(path: str, service_dir: str) -> bool:
    """A release's own env file (`releases/<id>/.specops-env`, 0600 root): the one other place the secret belongs."""
    parent, _, name = path.rpartition("/")
    return name == ".specops-env" and parent.rpartition("/")[0] == f"{service_dir}/releases"


def sweep_one(command: Command, mode: tuple[str, ...], folder: Path, capsys: pytest.CaptureFixture[str],
              monkeypatch: pytest.MonkeyPatch) -> Seen:  # fmt: skip
    """Run one command line in a fresh state folder; collect every text the secret could have reached."""
    from specops.config.loader import load_config

    run_folder = folder / "runs" / f"{command.name}-{'-'.join(mode) or 'plain'}".replace(" ", "_").replace(",", "")
    for variable, name in (("XDG_CACHE_HOME", "cache"), ("XDG_STATE_HOME", "state"), ("HOME", "home")):
        monkeypatch.setenv(variable, str(run_folder / name))
    spec = load_config(folder / "specops.toml", folder).host(HOST)
    scene = DeployScene(spec, releases=[release(CURRENT, "0" * 64)], current=CURRENT)
    hosts: list[RecordingHost] = [_holding(_with_views(scene.host(), spec.service_dir), spec, command.held)]
    use_scene(monkeypatch, scene, hosts, [command.smoke_passes, True])  # a failed gate's rollback passes
    if command.host == "unreachable":

        def refuse(spec: object) -> RecordingHost:
            raise ConnectError(f"{HOST}: cannot connect: connection refused", hint="is the host up?")

        monkeypatch.setattr("specops.host.ssh.connection.connect", refuse)
    inputs: list[bytes] = []
    _record_inputs(monkeypatch, inputs)
    result = run_cli(capsys, "--config", str(folder / command.config), *mode, *command.args)
    seen = Seen(result.code, {"stdout": result.out, "stderr": result.err})
    calls = [call for host in hosts for call in host.calls]
    seen.texts["argv"] = json.dumps([list(call.argv) for call in calls])
    seen.texts["command inputs"] = b"\n".join(inputs).decode("utf-8", "replace")  # audit lines, the pushed tar
    for host in hosts:
        for path, data in host.files.items():
            mode_of = next((c.mode for c in reversed(host.calls) if c.kind == "put" and c.path == path), None)
            if path == spec.env_file or _is_release_env_file(path, spec.service_dir):
                seen.env_files.append((mode_of or 0, data))
            else:
                seen.texts[f"host file {path}"] = data.decode("utf-8", "replace")
    seen.texts.update(_local_files(run_folder))
    return seen


@pytest.fixture
def sweep_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setenv("SGLANG_API_KEY", API_KEY)
    monkeypatch.delenv("SPECOPS_CONFIG", raising=False)
    (tmp_path / "specops.toml").write_text(CONFIG)
    (tmp_path / "broken.toml").write_text(BROKEN)
    write_build(tmp_path)
    return tmp_path


@pytest.mark.parametrize("mode", list(MODES), ids=list(MODES))
@pytest.mark.parametrize("command", COMMANDS, ids=[command.name for command in COMMANDS])
def test_no_secret_leaks(command: Command, mode: str, sweep_folder: Path, capsys: pytest.CaptureFixture[str],
                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    seen = sweep_one(command, MODES[mode], sweep_folder, capsys, monkeypatch)
    assert seen.code != 70, seen.texts["stderr"] + seen.texts["stdout"]
    assert not seen.leaks(), f"the secret leaked into: {seen.leaks()}"
    if command.held:  # the orphan's command line, with the key in it, was read and shown (masked)
        assert (
            "4242" in seen.texts["stdout"] + seen.texts["stderr"] + seen.texts["local file state/specops/audit.jsonl"]
        )
    for file_mode, content in seen.env_files:
        assert file_mode == 0o600 and SECRET.encode() in content


def test_a_real_deploy_writes_the_secret_to_the_env_file_only(sweep_folder: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The sweep is not vacuous: the deploy did reveal the secret, to the 0600 env file."""
    (deploy,) = [command for command in COMMANDS if command.name == "deploy"]  # by name: the list grows
    seen = sweep_one(deploy, (), sweep_folder, capsys, monkeypatch)
    assert seen.code == 0, seen.texts["stderr"]
    assert seen.env_files and all(mode == 0o600 for mode, _ in seen.env_files)
    assert any(f'HF_TOKEN="{SECRET}"'.encode() in content for _, content in seen.env_files)
    assert "manifest.json" in seen.texts["command inputs"]  # the pushed tree (with its manifest) was searched too
    assert "host file /etc/systemd/system/sglang.service" in seen.texts

"""A scripted GPU host for deploy tests without root: a RecordingHost that answers every command a deploy runs.

`DeployScene` holds the host's state as a deploy would find it (its releases, its installed unit) and what the
gates will say; `host()` makes a fresh RecordingHost scripted from it, so a dry run and a deploy can each run
against the same starting point and their commands be compared. The engine's smoke gate is replaced by a
canned SmokeResult (engine/smoke.py has its own tests); the probe runs its real command, and the doctor's
checks return what the scene says.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from specops.commands import engine_stop, journal
from specops.commands import release as release_cmd
from specops.commands.cache import PREPARE_SCRIPT
from specops.commands.guard import ARM_SCRIPT, DISARM_SCRIPT, HANDOVER_SCRIPT
from specops.commands.host_files import FILES_SCRIPT
from specops.commands.lock import LOCK_SCRIPT
from specops.commands.probe import probe_argv
from specops.config.inventory import HostSpec
from specops.deploy.engine_commands import engine_state_argv
from specops.doctor.model import CheckResult, Status
from specops.engine.smoke import Gate, SmokeResult
from specops.host.recording import Answer, RecordingHost, reply
from tests.unit.engine.fakes import CannedServer

HOST = "gpu1"
PYTHON = "/opt/venv/bin/python"
CONFIG = f"""
[hosts.{HOST}]
ssh = "{HOST}"
python = "{PYTHON}"
model_path = "/srv/models/target"
profile = "nextn"
"""
READY = "ActiveState=active\nSubState=running\nMainPID=42\nExecMainPID=42\nNRestarts=0\n"
EXITED = "ActiveState=failed\nSubState=failed\nMainPID=0\nExecMainPID=42\nExecMainStatus=1\nNRestarts=0\n"
FIGURES = {"tokens_per_s": 120.0, "accept_length": 3.1}


def release(release_id: str, tree_hash: str, verified: bool = True) -> dict[str, Any]:
    """One release as the host's listing reports it."""
    gates = {"smoke": {"figures": FIGURES}} if verified else {}
    return {"id": release_id, "complete": True, "verified": verified, "tree_hash": tree_hash, "profile": "nextn",
            "gates": gates, "error": None}  # fmt: skip


def smoke(passed: bool) -> SmokeResult:
    gates = [Gate("accept_length", passed, "3.1" if passed else "1.0", ">= 1.5")]
    return SmokeResult(passed, gates, dict(FIGURES))


@dataclass
class DeployScene:
    """The host before the deploy, and how its gates and checks will end."""

    spec: HostSpec
    releases: list[dict[str, Any]] = field(default_factory=list)
    current: str | None = None
    unit: str | None = None  # the installed unit's text
    boot: str | None = None  # the installed boot unit's text
    ready: list[bool] = field(default_factory=lambda: [True])  # each readiness wait in turn: ready or exited
    checks: Status = Status.PASS
    results: list[CheckResult] | None = None  # the doctor's results, when not the one check of `checks`
    rollback_reply: dict[str, Any] | None = None  # the host-side rollback's answer (default: back to `current`)
    on_command: dict[str, Callable[[], Answer | None]] = field(default_factory=dict)  # a hook per step command
    server: CannedServer = field(default_factory=CannedServer)
    lock_holder: str | None = None  # holder.json of a deploy holding the lock when this one starts
    engine: str = "ActiveState=active\nSubState=running\nInactiveEnterTimestamp=\n"  # the unit before the deploy
    env: str | None = None  # the current release's own env file (None: it has none, nor is there a live one)
    unit_state: str = "ActiveState=inactive\nSubState=dead\nMainPID=0\n"  # the engine's, as its stop sees it

    def host(self) -> RecordingHost:
        spec, script = self.spec, release_cmd.script_argv(self.spec, "x")[:4]
        host = RecordingHost(HOST, tunnel_factory=self.server.tunnel)
        self.server.add("GET", "/health_generate", (200, b"{}"))
        if self.lock_holder is not None:  # held; the acquire naming the holder's token takes it over
            held = f"now=100\nbeat=99\nholder:\n{self.lock_holder}"
            host.script(lambda argv: argv[4:5] == ("acquire",) and len(argv) == 9, reply(f"state=taken-over\n{held}"))
            host.script(["sh", "-c", LOCK_SCRIPT, "specops-lock", "acquire"], reply(f"state=held\n{held}"))
        for op, answer in (("acquire", "state=acquired\n"), ("heartbeat", "state=beat\n"),
                           ("release", "state=released\nnow=1\n")):  # fmt: skip
            host.script(["sh", "-c", LOCK_SCRIPT, "specops-lock", op], reply(answer))
        host.script(release_cmd.session_argv(spec), reply(self._session_output()))
        files = {"unit": self.unit, "env": self.env}  # the read step's one request (the live env: none here)
        host.script([PYTHON, "-IS", "-c", FILES_SCRIPT], reply(json.dumps(files)))
        host.script(["cat", f"/etc/systemd/system/specops-boot-{spec.service}.service"],
                    reply(self.boot) if self.boot is not None else reply(exit_code=1))  # fmt: skip
        host.script(["cat", f"/etc/systemd/system/{spec.unit_name}"],
                    reply(self.unit) if self.unit is not None else reply(stderr="No such file", exit_code=1))  # fmt: skip
        host.script(self._hooked("probe", probe_argv(PYTHON)), reply("{}\n"))
        host.script(self._hooked("arm", ["sh", "-c", ARM_SCRIPT]), reply())  # the guard's arming
        host.script(["sh", "-c", HANDOVER_SCRIPT], reply())  # the disarm, then the watch
        env = reply(self.env) if self.env is not None else reply(stderr="cat: No such file", exit_code=1)
        host.script(lambda argv: argv[:1] == ("cat",) and argv[-1].endswith("/.specops-env"), env)
        host.script(["cat", spec.env_file], reply(stderr="cat: No such file", exit_code=1))
        # a release's manifest read by `cat --` (status's drift check): these scenes record no fingerprint
        host.script(["cat", "--"], reply(stderr="cat: manifest.json: No such file or directory\n", exit_code=1))
        self._script_release_ops(host, script)
        self._script_gates(host)
        for prefix in (["sh", "-c", DISARM_SCRIPT], ["sh", "-c", PREPARE_SCRIPT], ["mkdir"], ["rm"], ["touch"], ["systemd-analyze"], ["systemctl", "daemon-reload"], ["systemctl", "enable"],
                       ["systemctl", "stop"], ["systemctl", "reset-failed"], [PYTHON, "-I", "-c"], [PYTHON, "-IS", "-c"],
                       ["chown"], ["chmod"], ["ln"], ["mv"]):  # fmt: skip
            host.script(prefix, reply())
        host.script(["systemctl", "show", spec.unit_name, "-p", "NeedDaemonReload"], reply("NeedDaemonReload=no\n"))
        host.script(engine_state_argv(spec), reply(self.engine))
        host.script(
            journal.last_entry_argv(spec.unit_name), reply("2026-12-02T07:01:02+00:00 gpu1 systemd[1]: Stopped\n")
        )
        # the stop before a restart: the engine already stopped, its GPUs free (ops/engine_stop.py has its own tests)
        host.script(engine_stop.state_argv(spec.unit_name), reply(self.unit_state))
        host.script(self._hooked("gpus", engine_stop.inspect_argv(spec.unit_name, spec.run_as)),
                    reply("@gpus\n0, GPU-0, 0\n@apps\n@unit\n@end\n"))  # fmt: skip
        fragment = (
            f"LoadState=loaded\nFragmentPath=/etc/systemd/system/{spec.unit_name}\n"
            if self.unit is not None
            else "LoadState=not-found\nFragmentPath=\n"
        )
        host.script(["systemctl", "show", spec.unit_name, "-p", "LoadState,FragmentPath"], reply(fragment))
        return host

    def _hooked(self, name: str, prefix: list[str]) -> Callable[[tuple[str, ...]], bool]:
        """A rule matching `prefix` that first runs the scene's hook for `name` (e.g. losing the lock)."""

        def matches(argv: tuple[str, ...]) -> bool:
            if argv[: len(prefix)] != tuple(prefix):
                return False
            hook = self.on_command.get(name)
            if hook is not None:
                answer = hook()
                if isinstance(answer, BaseException):
                    raise answer
            return True

        return matches

    def _session_output(self) -> str:
        listing = {"ok": True, "current": self.current, "releases": self.releases}
        files = {"ok": True, "files": {}}  # the base's files map: every staged file differs from it
        room = {"ok": True, "removed": [], "free": 1 << 50, "path": "/opt/sglang"}  # before a byte is sent
        received = {"ok": True, "tree_hash": "unused", "linked": 0, "copied": 0}
        lines = (listing, files, room, received) if self.releases else (listing, room, received)  # no base: no files
        return "\n".join(json.dumps(line) for line in lines) + "\n"

    def _script_release_ops(self, host: RecordingHost, script: list[str]) -> None:
        listing = {"ok": True, "current": self.current, "releases": self.releases}
        updated = {"ok": True, "id": "x", "complete": True}
        host.script([*script, "update-manifest"], reply(json.dumps(updated)))
        host.script(self._hooked("switch", [*script, "switch"]), reply(json.dumps({"ok": True, "previous": None})))
        host.script([*script, "prune"], reply(json.dumps({"ok": True, "removed": []})))
        host.script([*script, "list"], reply(json.dumps(listing)))
        restored = {"ok": True, "release": self.current, "unit_restored": False, "env": "same"}
        host.script([*script, "restore-config"], reply(json.dumps(restored)))
        back = self.rollback_reply or {"ok": True, "previous": "new", "current": self.current or "none"}
        host.script(
            self._hooked("rollback", [*script, "rollback"]), reply(json.dumps(back), exit_code=0 if back["ok"] else 3)
        )

    def _script_gates(self, host: RecordingHost) -> None:
        host.script(journal.cursor_argv(), reply("-- cursor: s=1;i=1;b=1;m=1;t=661bb2fb3fd01;x=1\n"))
        host.script(self._hooked("restart", ["systemctl", "restart"]), reply())
        polls = [reply((READY if ok else EXITED) + journal.POLL_MARKER + "\n-- cursor: s=1;i=2\n") for ok in self.ready]
        poll = self._hooked("ready", ["sh", "-c"])  # a readiness poll
        host.script(lambda argv: len(argv) > 2 and journal.POLL_MARKER in argv[2] and poll(argv), *polls)
        host.script(lambda argv: argv[:2] == ("sh", "-c") and argv[3:4] == ("specops-journal",), reply())

    def check_results(self) -> list[CheckResult]:
        if self.results is not None:
            return list(self.results)
        return [CheckResult(id="ffmpeg.libs", status=self.checks, summary="FFmpeg libraries: none found",
                            hint="install FFmpeg 4-7")]  # fmt: skip


def use_scene(monkeypatch: pytest.MonkeyPatch, scene: DeployScene, hosts: list[RecordingHost],
              smokes: list[bool]) -> None:  # fmt: skip
    """Route connections to a fresh scripted host per command run (kept in `hosts`), and can the checks and
    the smoke gate: `smokes` is each smoke gate's verdict in turn (the last repeats)."""
    import specops.host.ssh.connection
    from tests.unit.doctor.factory import healthy_facts

    def connect(spec: HostSpec) -> RecordingHost:
        return hosts[-1]

    verdicts = list(smokes)

    def run_smoke(*args: object, **kwargs: object) -> SmokeResult:
        return smoke(verdicts.pop(0) if len(verdicts) > 1 else verdicts[0])

    monkeypatch.setattr(specops.host.ssh.connection, "connect", connect)
    monkeypatch.setattr("specops.probe.run.parse_host_facts", lambda document: healthy_facts())
    monkeypatch.setattr("specops.deploy.preflight_step.run_checks", lambda context, checks: scene.check_results())
    monkeypatch.setattr("specops.engine.gates.run_smoke", run_smoke)


def write_build(folder: Path) -> Path:
    """A tiny sglang package: what a deploy stages and pushes."""
    package = folder / "build" / "sglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = '0.0.1'\n")
    (package / "server.py").write_text("print('serving')\n")
    return package.parent

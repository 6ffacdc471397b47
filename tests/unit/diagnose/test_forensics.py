"""What `diagnose` reads from a host, on a recorded host: a crash-looping release whose interpreter is gone."""

from __future__ import annotations

import json

from specops.commands.probe import probe_argv
from specops.config.inventory import HostSpec
from specops.diagnose.case import build_case
from specops.diagnose.verdict import CODE, CONFIG, decide
from specops.host.recording import RecordingHost, reply
from specops.ops.forensics import DIFF_MARKER, collect
from tests.unit.diagnose.test_verdict import BAD, GOOD, SCHEDULER, files, manifest_json

SPEC = HostSpec(name="llm-one", ssh="root@llm-one", python="/opt/venv/bin/python", model_path="/m")
LISTING = {"ok": True, "current": BAD, "releases": [
    {"id": GOOD, "complete": True, "verified": True}, {"id": BAD, "complete": True, "verified": False}]}  # fmt: skip
TRACEBACK = "\n".join([
    "Traceback (most recent call last):",
    f'  File "/opt/specops/sglang/releases/{BAD}/{SCHEDULER}", line 120, in event_loop',
    "ZeroDivisionError: division by zero",
])  # fmt: skip


def recorded_host(envs: dict[str, str] | None = None, bad_files: dict[str, object] | None = None,
                  journal: str = TRACEBACK) -> RecordingHost:  # fmt: skip
    """`envs`: each release's own env file (none: releases from before they kept one)."""
    host = RecordingHost("llm-one")
    host.script(lambda argv: "list" in argv and "-IS" in argv, reply(stdout=json.dumps(LISTING)))
    for release in (GOOD, BAD):
        text = (envs or {}).get(release)
        env = reply(stdout=text) if text is not None else reply(stderr="No such file", exit_code=1)
        host.script(["cat", f"{SPEC.service_dir}/releases/{release}/.specops-env"], env)
    for release, tree, file_map in ((GOOD, "a", files()), (BAD, "b", bad_files or files(scheduler="t"))):
        path = f"{SPEC.service_dir}/releases/{release}/manifest.json"
        host.script(["cat", "--", path], reply(stdout=json.dumps(manifest_json(tree, file_map))))
    diff = f"{DIFF_MARKER}{SCHEDULER}\n--- a\n+++ b\n@@ -1 +1 @@\n-x = 1\n+x = 1 / 0\n"
    host.script(lambda argv: argv[:2] == ("sh", "-c") and DIFF_MARKER in argv, reply(stdout=diff))
    show = "ActiveState=activating\nSubState=auto-restart\nNRestarts=7\nExecMainStatus=1\nMainPID=0\n"
    host.script(["systemctl", "show"], reply(stdout=show))
    host.script(lambda argv: argv[:2] == ("sh", "-c") and "InvocationID" in argv[2], reply(stdout=journal))
    host.script(probe_argv(SPEC.python), reply(stderr="No such file or directory", exit_code=127))
    return host


def test_a_crash_loop_with_the_interpreter_gone_is_still_diagnosed_from_files_and_journal() -> None:
    host = recorded_host()
    material = collect(host, SPEC, None)
    assert (material.subject, material.reference, material.current) == (BAD, GOOD, BAD)
    assert material.facts is None  # the probe could not run: diagnosed without it
    assert material.file_stats == {SCHEDULER: (1, 1)}
    assert material.unit is not None and material.unit.n_restarts == 7
    found = decide(build_case(material))
    assert found.kind == CODE
    assert f"{SCHEDULER} +1 −1" in found.headline
    assert any("frames are in changed files" in line for line in found.evidence)
    readers = [c for c in host.commands if c[0] in ("cat", "sh", SPEC.python) or c[:2] == ("systemctl", "show")]
    assert readers == host.commands  # reads only: nothing on a broken host is changed
    assert not any("list" not in c and "-IS" in c for c in host.commands)  # no release op other than the listing


def test_a_failure_that_names_a_changed_env_value_is_a_configuration_change_with_secrets_masked() -> None:
    """Both releases kept their env file: the keys that differ are the evidence, a secret's values never shown."""
    crash = "\n".join([
        "Traceback (most recent call last):",
        '  File "/opt/specops/sglang/current/sglang/launch_server.py", line 45, in _env_float',
        "ValueError: could not convert string to float: '0.5s'",
    ])  # fmt: skip
    envs = {GOOD: 'LOAD_SECONDS="0.5"\nHF_TOKEN="hf_old"\n', BAD: 'LOAD_SECONDS="0.5s"\nHF_TOKEN="hf_new"\n'}
    spec = SPEC.model_copy(update={"secrets": ["HF_TOKEN"]})
    material = collect(recorded_host(envs, files(), crash), spec, None)
    found = decide(build_case(material))
    assert found.kind == CONFIG
    assert "env LOAD_SECONDS '0.5' → '0.5s'" in found.headline
    assert "env HF_TOKEN *** → ***" in found.headline
    assert "hf_old" not in json.dumps(found.to_json()) and "hf_new" not in json.dumps(found.to_json())

"""systemd itself reads the rendered unit: awkward arguments and env values arrive byte for byte.

The unit's ExecStart= and the env file are quoted by specops (systemd's rules: `%` specifiers, `$`
expansion, quotes, backslashes). Here a tiny stand-in `sglang.launch_server` records its argv and
environment under a real systemd on a test host, and the test compares them with what specops meant.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from specops.commands.systemd import launch_argv, operator_environment
from tests.testbed.staging import install_build, install_unit, resolve_target
from tests.testbed.testhost import TestHost

pytestmark = pytest.mark.e2e

RECORDER = """\
import json, os, sys
keys = [k for k in os.environ if k.startswith(("WEIRD_", "SGLANG_", "CUDA_", "PYTHONPATH"))]
with open("/run/argv.json", "w") as out:
    json.dump({"argv": sys.argv[1:], "env": {k: os.environ[k] for k in keys}}, out)
"""

AWKWARD_ARGS = [
    "--chat-template",
    "/srv/templates/chat 100%.jinja",
    "--json-model-override-args",
    '{"rope_scaling": {"factor": 2}, "note": "it\'s $HOME and ${USER} at 50%"}',
    "--tag",
    "semi;colon back\\slash  two  spaces",
]
AWKWARD_ENV = {"WEIRD_DOLLAR": "$HOME ${PATH} $$", "WEIRD_QUOTES": "say \"hi\" and 'bye'", "WEIRD_PCT": "50%n %%"}


def test_arguments_and_environment_survive_systemd_quoting(testhost: TestHost, tmp_path: Path) -> None:
    build = tmp_path / "build"
    (build / "sglang").mkdir(parents=True)
    (build / "sglang" / "__init__.py").write_text("")
    (build / "sglang" / "launch_server.py").write_text(RECORDER)
    install_build(testhost, build, "quoting")
    env = ", ".join(f"{key} = {json.dumps(value)}" for key, value in AWKWARD_ENV.items())
    toml = (
        f'[hosts.{testhost.name}]\nssh = "{testhost.name}"\npython = "/usr/bin/python3"\n'
        f'model_path = "/srv/models/target"\nprofile = "nextn"\nlimit_nofile = 20000\n'
        f"extra_args = {json.dumps(AWKWARD_ARGS)}\nenv = {{ {env} }}\n"
    )
    target = resolve_target(tmp_path, toml, testhost.name)
    unit = install_unit(testhost, target)
    testhost.exec(["systemctl", "start", unit])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if testhost.exec(["test", "-e", "/run/argv.json"], check=False).returncode == 0:
            break
        time.sleep(0.2)
    recorded = json.loads(testhost.read_file("/run/argv.json"))
    assert recorded["argv"] == launch_argv(target)[3:]
    assert recorded["argv"][-6:] == AWKWARD_ARGS
    for key, value in operator_environment(target).items():
        assert recorded["env"][key] == value
    assert recorded["env"]["PYTHONPATH"] == "/opt/specops/sglang/current"

"""Real upstream SGLang on a test host: the doctor reads it right, and a deploy it cannot run stops at preflight.

The host's Python is the real-SGLang venv (torch 2.13 CPU + what the parser imports); the build is the real
release trimmed to what its parser loads (tests/testbed/realsglang.py), so every verdict below comes from
SGLang's own code: `ServerArgs.add_cli_args(parser); parser.parse_args(argv)` on the unit's exact argv.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.testbed import drift
from tests.testbed.engine import BUILD_PYTHON
from tests.testbed.realsglang import SGLANG_VERSION, parser_build_dir
from tests.testbed.staging import install_build, install_models, inventory_toml
from tests.testbed.testhost import TestHost
from tests.unit.clirun import CliResult, run_cli

pytestmark = pytest.mark.e2e
UNIT = "/etc/systemd/system/sglang.service"


@pytest.fixture
def host(
    testhost: TestHost, host_venv: Path, real_sglang: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> TestHost:
    """A GPU-looking host whose Python can import real SGLang; specops.toml and ~/.ssh/config in tmp_path."""
    install_models(testhost, tmp_path)
    drift.install_nvidia_smi(testhost, "h100x8-580")
    drift.set_torch_cuda_tag(testhost, host_venv, version="2.13.0+cu130", cuda="13.0")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "config").write_text(testhost.ssh_config_block(testhost.name))
    toml = inventory_toml(testhost, real_sglang / "venv" / "bin" / "python")
    (tmp_path / "specops.toml").write_text(toml.replace('listen = "0.0.0.0"', 'listen = "127.0.0.1"'))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return testhost


def _checks(result: CliResult, name: str) -> dict[str, dict[str, object]]:
    document = json.loads(result.out)
    return {check["id"]: check for check in document["hosts"][name]["checks"]}


def test_doctor_reads_real_sglang_its_version_and_its_parsers_verdicts(
    host: TestHost, real_sglang: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_build(host, parser_build_dir(real_sglang), "r1")
    dflash = _checks(run_cli(capsys, "doctor", host.name, "--profile", "dflash", "--json"), host.name)
    assert dflash["sglang.version"]["summary"].startswith(f"sglang {SGLANG_VERSION} (current: ")  # type: ignore[union-attr]
    assert dflash["sglang.algorithm"]["status"] == "pass"
    assert dflash["sglang.server_args"]["status"] == "pass", dflash["sglang.server_args"]
    assert "checked with the build's own parser (ServerArgs.add_cli_args)" in dflash["sglang.server_args"]["evidence"]  # type: ignore[operator]

    ddtree = _checks(run_cli(capsys, "doctor", host.name, "--profile", "ddtree", "--json"), host.name)
    assert ddtree["sglang.server_args"]["status"] == "fail"
    assert ddtree["sglang.server_args"]["summary"] == (
        f"sglang {SGLANG_VERSION} does not know --speculative-ddtree-budget (a DDTree fork flag: no upstream "
        "release has it): this build cannot run the ddtree profile"
    )
    assert ddtree["sglang.algorithm"]["status"] == "fail"
    assert str(ddtree["sglang.algorithm"]["summary"]).startswith(
        f"DDTREE is not in SpeculativeAlgorithm of sglang {SGLANG_VERSION}"
    )


def test_deploying_ddtree_onto_real_upstream_sglang_stops_at_preflight_before_the_unit(
    host: TestHost, real_sglang: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = str(parser_build_dir(real_sglang))
    result = run_cli(capsys, "deploy", host.name, "--build", build, "--profile", "ddtree", "--json")
    assert result.code == 1, result.out + result.err
    outcome = json.loads(result.out)["hosts"][host.name]
    assert outcome["outcome"] == "preflight-failed"
    assert f"sglang.server_args: sglang {SGLANG_VERSION} does not know --speculative-ddtree-budget" in outcome["cause"]
    assert host.exec(["test", "-e", UNIT], check=False).returncode == 1  # the unit was never installed
    assert host.exec(["test", "-e", "/opt/specops/sglang/current"], check=False).returncode == 1


def test_the_stand_in_engine_on_a_host_refuses_what_real_sglang_refuses(host: TestHost, host_venv: Path) -> None:
    """The stand-in accepts any attention backend; upstream's parser has choices: the host sees its table."""
    release = install_build(host, BUILD_PYTHON, "stand-in")
    argv = ["env", f"PYTHONPATH={release}", str(host_venv / "bin" / "python"), "-m", "sglang.launch_server"]
    done = host.exec([*argv, "--model-path", "/srv/models/target", "--attention-backend", "fa9"], check=False)
    assert done.returncode == 2
    assert (
        "launch_server.py: error: argument --attention-backend: invalid choice: 'fa9' "
        f"(real sglang {SGLANG_VERSION}'s parser refuses it)"
    ) in done.stderr.decode()

"""The CLI as an operator meets it: help, version, init, hosts, render, config check, errors."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST
from tests.unit.needs import need_program, need_root


def test_help_lists_commands_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--help")
    assert result.code == 0
    for command in ("init", "render", "hosts", "config"):
        assert f"  {command} " in result.out
    for line in ("0  success", "3  configuration error", "4  a host could not be reached", "6  another specops holds",
                 "130  interrupted (Ctrl-C, SIGINT)", "143  interrupted by SIGTERM", "129  interrupted by SIGHUP"):  # fmt: skip
        assert line in result.out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from specops import __version__

    assert run_cli(capsys, "--version").out == f"specops {__version__}\n"


def test_unknown_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "render", "--bogus")
    assert result.code == 2
    assert "No such option" in result.err


def test_no_config_found_says_where_it_looked(capsys: pytest.CaptureFixture[str], config_dir: Path) -> None:
    result = run_cli(capsys, "hosts")
    assert result.code == 3
    assert result.err.splitlines() == [
        "error: no specops.toml found (looked for ./specops.toml, $SPECOPS_CONFIG, ~/.config/specops/specops.toml)",
        "hint: run `specops init` to write a commented starter file, or pass --config PATH",
    ]


def test_config_is_found_through_env_then_home(
    capsys: pytest.CaptureFixture[str], config_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home_config = config_dir / "home" / ".config" / "specops" / "specops.toml"
    home_config.parent.mkdir(parents=True)
    home_config.write_text(VALID_HOST.replace("llm-two", "from-home"), encoding="utf-8")
    assert "from-home" in run_cli(capsys, "hosts").out
    env_config = config_dir / "elsewhere.toml"
    env_config.write_text(VALID_HOST.replace("llm-two", "from-env"), encoding="utf-8")
    monkeypatch.setenv("SPECOPS_CONFIG", str(env_config))
    assert "from-env" in run_cli(capsys, "hosts").out
    (config_dir / "specops.toml").write_text(VALID_HOST.replace("llm-two", "from-cwd"), encoding="utf-8")
    assert "from-cwd" in run_cli(capsys, "hosts").out


def test_init_writes_a_valid_starter_and_refuses_to_overwrite(
    capsys: pytest.CaptureFixture[str], config_dir: Path
) -> None:
    first = run_cli(capsys, "init")
    assert first.code == 0
    assert (config_dir / "specops.toml").read_text(encoding="utf-8").startswith("# specops.toml")
    assert run_cli(capsys, "config", "check").code == 0
    again = run_cli(capsys, "init")
    assert again.code == 2
    assert again.err.splitlines() == ["error: specops.toml already exists", "hint: pass --force to overwrite it"]
    assert run_cli(capsys, "init", "--force").code == 0


def test_hosts_resolves_ssh_config_alias(capsys: pytest.CaptureFixture[str], config_dir: Path) -> None:
    ssh_dir = config_dir / "home" / ".ssh"
    ssh_dir.mkdir(parents=True)
    (ssh_dir / "config").write_text(
        "Host gpu-a\n  HostName 10.0.0.7\n  User deploy\n  Port 2222\n  IdentityFile ~/.ssh/gpu_ed25519\n",
        encoding="utf-8",
    )
    (config_dir / "specops.toml").write_text(
        VALID_HOST.replace('ssh = "root@llm-two"', 'ssh = "gpu-a"') + 'become = "sudo"\n[groups]\ngpu = ["llm-two"]\n',
        encoding="utf-8",
    )
    result = run_cli(capsys, "--json", "hosts")
    assert result.code == 0, result.err
    assert json.loads(result.out)["hosts"] == [
        {
            "name": "llm-two",
            "ssh": "gpu-a",
            "hostname": "10.0.0.7",
            "user": "deploy",
            "port": 2222,
            "keys": [str(ssh_dir / "gpu_ed25519")],
            "become": "sudo",
            "become_user": "root",
            "hops": [],
            "proxy_command": None,
            "profile": "ddtree",
            "service": "sglang",
            "groups": ["gpu"],
        }
    ]
    table = run_cli(capsys, "hosts", "gpu").out.splitlines()
    assert table[0].split() == ["HOST", "SSH", "HOSTNAME", "USER", "PORT", "KEY", "BECOME", "VIA", "PROFILE",
                                "SERVICE", "GROUPS"]  # fmt: skip
    assert table[1].split() == ["llm-two", "gpu-a", "10.0.0.7", "deploy", "2222", str(ssh_dir / "gpu_ed25519"),
                                "sudo", "->", "root", "-", "ddtree", "sglang", "gpu"]  # fmt: skip


def test_hosts_shows_the_jump_hosts_of_ssh_config_and_of_the_inventory(
    capsys: pytest.CaptureFixture[str], config_dir: Path
) -> None:
    ssh_dir = config_dir / "home" / ".ssh"
    ssh_dir.mkdir(parents=True)
    (ssh_dir / "config").write_text(
        "Host gpu-a\n  HostName 10.0.0.7\n  ProxyJump ops@bastion:2200,inner\nHost bastion\n  HostName 192.0.2.1\n",
        encoding="utf-8",
    )
    second = VALID_HOST.replace("llm-two]", "llm-three]").replace('"root@llm-two"', '"10.0.0.9"\njump = "bastion"')
    (config_dir / "specops.toml").write_text(
        VALID_HOST.replace('ssh = "root@llm-two"', 'ssh = "gpu-a"') + second, encoding="utf-8"
    )
    result = run_cli(capsys, "--json", "hosts")
    assert result.code == 0, result.err
    assert [row["hops"] for row in json.loads(result.out)["hosts"]] == [["ops@bastion:2200", "inner"], ["bastion"]]
    table = run_cli(capsys, "hosts").out
    assert "ops@bastion:2200 -> inner" in table


def test_explicit_user_and_port_win_over_ssh_config(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config(VALID_HOST.replace('ssh = "root@llm-two"', 'ssh = "admin@[fd00::7]:2200"'))
    row = json.loads(run_cli(capsys, "--json", "hosts").out)["hosts"][0]
    assert (row["hostname"], row["user"], row["port"]) == ("fd00::7", "admin", 2200)


def test_unknown_host_and_profile_are_usage_errors(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config(VALID_HOST)
    host = run_cli(capsys, "render", "llm-three")
    assert (host.code, host.err.splitlines()) == (
        2,
        ["error: unknown host 'llm-three' in specops.toml", "hint: known hosts: llm-two"],
    )
    profile = run_cli(capsys, "render", "llm-two", "--profile", "medusa")
    assert profile.code == 2
    assert profile.err.splitlines()[0] == "error: unknown profile 'medusa'"


def test_missing_secret_fails_config_check_without_printing_values(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(VALID_HOST + 'secrets = ["HF_TOKEN", "API_KEY"]\n')
    monkeypatch.setenv("HF_TOKEN", "hf_topsecret")
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    assert (
        result.err.splitlines()[0] == "error: specops.toml: hosts.llm-two.secrets: API_KEY: not set in the environment"
    )
    assert "hf_topsecret" not in result.out + result.err
    monkeypatch.setenv("API_KEY", "k")
    assert (
        run_cli(capsys, "config", "check").out
        == "specops.toml: valid (1 host, 0 groups, profiles: ddtree, dflash, nextn)\n"
    )


def test_internal_error_is_one_line_unless_debug(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(VALID_HOST)

    def broken(*_args: object) -> str:
        raise RuntimeError("template exploded")

    monkeypatch.setattr("specops.commands.systemd.render_unit", broken)
    result = run_cli(capsys, "render", "llm-two")
    assert result.code == 70
    assert result.err.splitlines()[0] == "internal error: RuntimeError: template exploded"
    assert "Traceback" not in result.err
    debug = run_cli(capsys, "--debug", "render", "llm-two")  # the traceback, and still the bug's exit code
    assert debug.code == 70 and debug.err.startswith("Traceback (most recent call last):")
    assert "internal error: RuntimeError: template exploded" in debug.err.splitlines()


def test_starter_config_renders_a_unit_systemd_accepts(capsys: pytest.CaptureFixture[str], config_dir: Path) -> None:
    """The documented example: `specops render llm-two --profile ddtree` passes `systemd-analyze verify`.

    The example's interpreter (/opt/sglang/venv/bin/python) does not exist here, and verify checks that
    ExecStart's binary exists, so verify runs in a private mount namespace where that path is a python.
    """
    need_root("a private mount namespace")
    need_program("unshare", "util-linux")
    need_program("systemd-analyze", "systemd")
    assert run_cli(capsys, "init").code == 0
    result = run_cli(capsys, "render", "llm-two", "--profile", "ddtree")
    assert result.code == 0, result.err
    assert "--speculative-algorithm DDTREE" in result.out
    assert "--speculative-dflash-block-size 16" in result.out
    (config_dir / "sglang.service").write_text(result.out, encoding="utf-8")
    script = (
        "mount -t tmpfs tmpfs /opt && mkdir -p /opt/sglang/venv/bin && "
        "ln -s /usr/bin/python3 /opt/sglang/venv/bin/python && systemd-analyze verify ./sglang.service"
    )
    verified = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, check=False)
    assert verified.returncode == 0, verified.stderr
    assert verified.stderr == ""


def test_a_bad_jump_in_specops_toml_is_a_config_error(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path]
) -> None:
    write_config(VALID_HOST.replace('ssh = "root@llm-two"', 'ssh = "root@llm-two"\njump = "bastion,-oProxyCommand=x"'))
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    assert "hosts.llm-two.jump" in result.err and "would be read as an ssh option" in result.err

"""[engines.NAME]: one SGLang engine over several hosts. A mistake is refused at load, path-qualified, exit 3;
an engine name given to a command that cannot act on it yet is refused rather than acted on host by host."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.config.loader import load_config
from specops.errors import ConfigError
from tests.unit.clirun import run_cli

BASE = """\
[defaults]
python = "/opt/venv/bin/python"
model_path = "/models/target"
draft_model_path = "/models/draft"
profile = "ddtree"

[hosts.ds-a]
ssh = "root@10.1.0.11"
gpus = "0,1,2,3,4,5,6,7"

[hosts.ds-b]
ssh = "root@ds-b"
gpus = "0,1,2,3,4,5,6,7"

[hosts.solo]
ssh = "root@solo"
"""
ENGINE = '\n[engines.ds]\nhosts = ["ds-a", "ds-b"]\n'


def _write(config_dir: Path, text: str) -> Path:
    path = config_dir / "specops.toml"
    path.write_text(text)
    return path


def test_an_engine_loads_with_its_hosts_in_rank_order(config_dir: Path) -> None:
    path = _write(config_dir, BASE + '\n[engines.ds]\nhosts = ["ds-b", "ds-a"]\ndist_port = 6000\n')
    engine = load_config(path, config_dir).inventory.engines["ds"]
    assert (engine.hosts, engine.dist_port, engine.dist_addr) == (["ds-b", "ds-a"], 6000, None)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param('\n[engines.ds]\nhosts = ["ds-a"]\n', "engines.ds.hosts: an engine spans at least 2 hosts",
                     id="one-host"),
        pytest.param('\n[engines.ds]\nhosts = ["ds-a", "ds-c"]\n', "engines.ds.hosts: unknown host 'ds-c'",
                     id="unknown-host"),
        pytest.param('\n[engines.ds]\nhosts = ["ds-a", "ds-a"]\n', "engines.ds.hosts: host 'ds-a' is listed twice",
                     id="twice"),
        pytest.param(ENGINE + '\n[engines.dz]\nhosts = ["ds-b", "solo"]\n',
                     "engines.dz.hosts: host 'ds-b' is already a rank of engine 'ds'", id="two-engines"),
        pytest.param('\n[engines.solo]\nhosts = ["ds-a", "ds-b"]\n', "engines.solo: an engine cannot have the same "
                     "name as a host or group", id="name-clash"),
        pytest.param(ENGINE + "dist_port = 70000\n", "engines.ds.dist_port", id="port"),
        pytest.param(ENGINE + 'dist_addr = "10.1.0.11;id"\n', "engines.ds.dist_addr", id="addr-injection"),
        pytest.param(ENGINE + 'nccl_socket_ifname = "eth0 $(id)"\n', "engines.ds.nccl_socket_ifname", id="ifname"),
        pytest.param(ENGINE + "tp_size = 8\n", "engines.ds.tp_size: tp_size 8 × pp_size 1 = 8 GPUs, but the hosts "
                     "have 16 (ds-a: 8, ds-b: 8)", id="tp-sum"),
        pytest.param(ENGINE + "tp_size = 3\n", "do not divide evenly over 2 hosts", id="tp-divisible"),
        pytest.param(ENGINE.replace('"ds-b"', '"solo"'), "engines.ds.tp_size: not set, and solo list no gpus",
                     id="no-gpus"),
        pytest.param(ENGINE + "\n[hosts.ds-c]\nssh = 'root@ds-c'\ngpus = '0,1'\n[engines.dy]\nhosts = ['solo', 'ds-c']"
                     "\ntp_size = 4\n", "", id="valid:tp-set-where-a-host-lists-no-gpus"),
        pytest.param(ENGINE + '\n[groups]\nds = ["solo"]\n', "engines.ds: an engine cannot have the same name as a "
                     "host or group", id="group-clash"),
        pytest.param(ENGINE + "wat = 1\n", "engines.ds.wat", id="unknown-key"),
    ],
)  # fmt: skip
def test_a_wrong_engine_is_refused_naming_file_and_key(config_dir: Path, extra: str, expected: str) -> None:
    path = _write(config_dir, BASE + extra)
    if not expected:
        load_config(path, config_dir)
        return
    with pytest.raises(ConfigError) as caught:
        load_config(path, config_dir)
    assert any(line.startswith("specops.toml: ") and expected in line for line in caught.value.lines), (
        caught.value.lines
    )


def test_a_rank_with_its_own_tp_size_or_another_model_is_refused(config_dir: Path) -> None:
    text = BASE.replace('ssh = "root@ds-b"\n', 'ssh = "root@ds-b"\ntp_size = 8\nmodel_path = "/models/other"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(_write(config_dir, text + ENGINE), config_dir)
    lines = "\n".join(caught.value.lines)
    assert "hosts.ds-b.tp_size: host 'ds-b' is a rank of engine 'ds'" in lines
    assert "engines.ds.hosts: the ranks differ in model_path" in lines


def test_unequal_gpu_counts_are_refused(config_dir: Path) -> None:
    text = BASE.replace('ssh = "root@ds-b"\ngpus = "0,1,2,3,4,5,6,7"', 'ssh = "root@ds-b"\ngpus = "0,1,2,3"')
    with pytest.raises(ConfigError) as caught:
        load_config(_write(config_dir, text + ENGINE + "tp_size = 12\n"), config_dir)
    assert "specops.toml: engines.ds.hosts: every rank needs the same number of GPUs; gpus lists ds-a: 8, ds-b: 4" in (
        caught.value.lines
    )


def test_audit_of_an_engine_or_a_group_holding_one_reads_every_rank(
    config_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a rank's audit log changes nothing: an engine is a row per rank, not a refusal."""
    from specops.host.local import LocalHost

    text = BASE.replace('ssh = "root@10.1.0.11"', f'ssh = "root@10.1.0.11"\nbase_dir = "{config_dir / "a"}"')
    text = text.replace('ssh = "root@ds-b"', f'ssh = "root@ds-b"\nbase_dir = "{config_dir / "b"}"')
    _write(config_dir, text + ENGINE + '\n[groups]\nfleet = ["ds", "solo"]\n')
    (config_dir / "a" / "sglang").mkdir(parents=True)
    line = (
        '{"schema": 1, "ts": "2026-12-05T00:00:00Z", "who": "alice@laptop", "action": "deploy", "from": null, '
        '"to": "20261205T000000Z-aaaa", "profile": "nextn", "outcome": "deployed", "forced": false, "message": ""}'
    )
    (config_dir / "a" / "sglang" / "audit.jsonl").write_text(line + "\n")
    monkeypatch.setattr("specops.host.ssh.connection.connect", lambda spec: LocalHost(spec.name))
    engine = run_cli(capsys, "audit", "ds")
    assert engine.code == 0, engine
    rows = {line.split()[0]: line for line in engine.out.splitlines()[1:] if line.strip()}
    assert list(rows) == ["ds-a", "ds-b"], engine.out
    assert "alice@laptop" in rows["ds-a"] and "deployed" in rows["ds-a"] and "(no entries)" in rows["ds-b"]
    fleet = run_cli(capsys, "audit", "fleet", "--json")
    assert sorted(json.loads(fleet.out)["hosts"]) == ["ds-a", "ds-b", "solo"], fleet


@pytest.mark.parametrize(
    ("command", "action"),
    [(["deploy", "ds-b", "--dry-run", "--build", "."], "deploy"), (["restart", "ds-a"], "restart"),
     (["rollback", "ds-b"], "roll back"), (["rollback", "pair"], "roll back")],
)  # fmt: skip
def test_one_rank_of_an_engine_is_not_deployed_restarted_or_rolled_back_alone(
    config_dir: Path, capsys: pytest.CaptureFixture[str], command: list[str], action: str
) -> None:
    refused = BASE.replace("root@10.1.0.11", "root@127.0.0.1:1").replace("root@ds-b", "root@127.0.0.1:1")
    refused = refused.replace("root@solo", "root@127.0.0.1:1")  # were it not refused, it would reach nothing
    _write(config_dir, refused + ENGINE + '\n[groups]\npair = ["solo", "ds-b"]\n')
    result = run_cli(capsys, *command)
    assert result.code == 2, result
    rank = "rank 0" if "ds-a" in command else "rank 1"
    host = "ds-a" if "ds-a" in command else "ds-b"
    assert f"host '{host}' is {rank} of engine 'ds' (ds-a, ds-b): specops does not {action} one rank" in result.err


def test_a_rank_stays_readable_on_its_own(config_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(config_dir, BASE + ENGINE)
    result = run_cli(capsys, "render", "ds-b")
    assert result.code == 0, result


def test_config_check_counts_engines_and_checks_their_profile_rules(
    config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(config_dir, BASE + ENGINE)
    result = run_cli(capsys, "config", "check")
    assert (result.code, result.out) == (
        0,
        "specops.toml: valid (3 hosts, 0 groups, 1 engine, profiles: ddtree, dflash, nextn)\n",
    )
    _write(config_dir, BASE + ENGINE + "pp_size = 2\n")
    result = run_cli(capsys, "config", "check")
    assert result.code == 3
    assert "specops.toml: engines.ds.pp_size: DDTREE needs pp_size = 1; got 2" in result.err

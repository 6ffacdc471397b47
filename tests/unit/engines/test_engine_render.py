"""`specops render ENGINE`: one unit per rank, the single-host command plus --nnodes/--node-rank/--dist-init-addr,
rank 0 first; the engine's tp/pp and interface variables in every rank's unit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.config.loader import load_config
from tests.unit.clirun import run_cli
from tests.unit.engines.test_engine_config import BASE, ENGINE


def _units(out: str) -> list[str]:
    return out.split("# engine ds, rank ")[1:]


def test_render_prints_every_ranks_unit_with_the_rendezvous_flags(
    config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (config_dir / "specops.toml").write_text(
        BASE + ENGINE + 'nccl_socket_ifname = "eth0"\ngloo_socket_ifname = "eth0"\n'
    )
    result = run_cli(capsys, "render", "ds")
    assert result.code == 0, result.err
    rank0, rank1 = _units(result.out)
    assert rank0.startswith("0 of 2 (serves HTTP): host ds-a, /etc/systemd/system/sglang.service\n")
    assert rank1.startswith("1 of 2 (schedulers only, no HTTP): host ds-b, ")
    for rank, unit in enumerate((rank0, rank1)):
        assert "--tp-size 16 \\\n" in unit
        assert f"--nnodes 2 \\\n    --node-rank {rank} \\\n    --dist-init-addr 10.1.0.11:5000\n" in unit
        assert 'Environment="NCCL_SOCKET_IFNAME=eth0"' in unit and 'Environment="GLOO_SOCKET_IFNAME=eth0"' in unit
    assert (
        rank0.replace("--node-rank 0", "--node-rank 1").replace("rank 0/2", "rank 1/2").split("\n", 1)[1].rstrip()
        == rank1.split("\n", 1)[1].rstrip()
    )


def test_a_single_hosts_unit_is_unchanged_by_engines(config_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (config_dir / "specops.toml").write_text(BASE + ENGINE)
    result = run_cli(capsys, "render", "solo")
    assert result.code == 0, result.err
    assert "--nnodes" not in result.out and "--tp-size 1 " in result.out and "NCCL_SOCKET_IFNAME" not in result.out


def test_dist_addr_pp_size_and_json(config_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BASE + ENGINE + 'dist_addr = "fd00::11"\ndist_port = 6000\npp_size = 2\n'
    (config_dir / "specops.toml").write_text(text.replace('profile = "ddtree"', 'profile = "nextn"'))
    result = run_cli(capsys, "render", "ds", "--json")
    assert result.code == 0, result.err
    shown = json.loads(result.out)
    assert [(rank["rank"], rank["host"], rank["serves_http"]) for rank in shown["ranks"]] == [
        (0, "ds-a", True), (1, "ds-b", False)
    ]  # fmt: skip
    unit = shown["ranks"][1]["content"]
    assert "--tp-size 8 \\\n" in unit and "--pp-size 2 \\\n" in unit and '--dist-init-addr "[fd00::11]:6000"\n' in unit


def test_dflash_family_refuses_an_engine_pp_size(config_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (config_dir / "specops.toml").write_text(BASE + ENGINE + "pp_size = 2\n")
    result = run_cli(capsys, "render", "ds")
    assert result.code == 3
    assert "specops.toml: engines.ds.pp_size: DDTREE needs pp_size = 1; got 2" in result.err


def test_without_dist_addr_rank_0s_ssh_hostname_is_used(config_dir: Path) -> None:
    from specops.config.engine_targets import resolve_engine
    from specops.errors import ConfigError

    (config_dir / "specops.toml").write_text(BASE + ENGINE)
    config = load_config(config_dir / "specops.toml", config_dir)
    targets = resolve_engine(config, "ds", None, lambda host: f"{host.name}.cluster.local")
    assert [t.rank.dist_init_addr for t in targets if t.rank] == ["ds-a.cluster.local:5000"] * 2
    with pytest.raises(ConfigError, match=r"engines\.ds\.dist_addr: not set, and rank 0's ssh HostName"):
        resolve_engine(config, "ds", None, lambda host: "$(id)")


def test_an_engine_run_of_the_resolved_ranks_carries_rank_0s_address_for_every_command(config_dir: Path) -> None:
    """deploy, a group's member and restart all build the run this way: the dist port test's ADDR:PORT is the one
    the units render."""
    from specops.config.engine_targets import resolve_engine
    from specops.deploy.engine_run import EngineRun

    (config_dir / "specops.toml").write_text(BASE + ENGINE)
    config = load_config(config_dir / "specops.toml", config_dir)
    run = EngineRun.of("ds", resolve_engine(config, "ds", None, lambda host: f"{host.name}.cluster.local"))
    assert (run.engine, run.hosts, run.dist_init_addr) == ("ds", ["ds-a", "ds-b"], "ds-a.cluster.local:5000")


def test_render_k8s_of_an_engine_is_one_leaderworkerset_of_its_ranks(
    config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = BASE.replace("[hosts.ds-a]", '[defaults.k8s]\nmodels = { pvc = "models" }\n\n[hosts.ds-a]')
    (config_dir / "specops.toml").write_text(text + ENGINE)
    result = run_cli(capsys, "render", "ds", "--target", "k8s", "--image", "lmsysorg/sglang:v0.5.12", "--json")
    assert result.code == 0, result.err
    objects = json.loads(result.out)["objects"]
    (lws,) = [item for item in objects if item["kind"] == "LeaderWorkerSet"]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    command = json.dumps(lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"])
    assert '"--tp-size", "16"' in command and '"--nnodes", "$(LWS_GROUP_SIZE)"' in command
    assert not [item for item in objects if item["kind"] == "Deployment"]


def test_extra_args_cannot_set_the_rendezvous_flags(config_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (config_dir / "specops.toml").write_text(
        BASE.replace('ssh = "root@solo"', 'ssh = "root@solo"\nextra_args = ["--node-rank=1"]')
    )
    result = run_cli(capsys, "render", "solo")
    assert result.code == 3
    assert "hosts.solo.extra_args.0: --node-rank is set by specops" in result.err


def test_render_completes_engine_names_beside_hosts(config_dir: Path) -> None:
    from specops.cli.complete import candidates

    (config_dir / "specops.toml").write_text(BASE + ENGINE)
    offered = [value for value, _ in candidates(["render"], "", {"HOME": str(config_dir)}, config_dir)]
    assert offered == ["ds-a", "ds-b", "solo", "ds"]

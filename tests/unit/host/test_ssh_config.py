"""~/.ssh/config as OpenSSH applies it for one alias: Host, Match, Include, first value wins; hops resolved."""

from __future__ import annotations

from pathlib import Path

import pytest

from specops.errors import ConfigError
from specops.host.ssh.config import lookup
from specops.host.ssh.proxycommand import proxy_argv, start_proxy
from specops.host.ssh.resolve import resolve_ssh_target


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_the_first_value_wins_and_identity_files_add_up(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "config",
        "Host gpu-*\n  User ops\n  IdentityFile ~/a\nHost *\n  User root\n  IdentityFile ~/b\n  Port=2222\n",
    )
    options = lookup(config, "gpu-1")
    assert options["user"] == ["ops"]
    assert options["identityfile"] == ["~/a", "~/b"]
    assert options["port"] == ["2222"]
    assert lookup(config, "other")["user"] == ["root"]


def test_include_applies_inside_the_block_that_includes_it(tmp_path: Path) -> None:
    """A Host line opens a block that lasts until the next Host/Match: the second Include needs its own `Host *`."""
    _write(tmp_path / "bastions.conf", "ProxyJump jump1\n")
    _write(tmp_path / "extra-1.conf", "Host *\n  ConnectTimeout 4\n")
    config = _write(
        tmp_path / "config",
        f"Host gpu-*\n  Include {tmp_path}/bastions.conf\n  User ops\nHost *\nInclude {tmp_path}/extra-*.conf\n",
    )
    assert lookup(config, "gpu-1") == {"proxyjump": ["jump1"], "user": ["ops"], "connecttimeout": ["4"]}
    assert lookup(config, "cpu-1") == {"connecttimeout": ["4"]}


def test_match_host_sees_the_hostname_found_so_far(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "config",
        "Host gpu-1\n  HostName 10.1.0.5\nMatch host 10.1.*,!10.1.0.9 user root\n  ProxyJump lab-bastion\n",
    )
    assert lookup(config, "gpu-1", user="root")["proxyjump"] == ["lab-bastion"]
    assert "proxyjump" not in lookup(config, "gpu-1", user="ops")
    assert "proxyjump" not in lookup(config, "10.1.0.9", user="root")


def test_match_exec_is_refused_only_where_it_decides(tmp_path: Path) -> None:
    config = _write(tmp_path / "config", 'Match host gpu-* exec "test -f /x"\n  ProxyJump b\n')
    assert lookup(config, "cpu-1") == {}  # `host` already fails: exec cannot change anything
    with pytest.raises(ConfigError, match=r"config:1: Match exec test -f /x: specops cannot evaluate"):
        lookup(config, "gpu-1")


def test_proxy_jump_and_proxy_command_exclude_each_other(tmp_path: Path) -> None:
    config = _write(tmp_path / "config", "Host a\n  ProxyCommand nc %h %p\nHost *\n  ProxyJump b\n")
    assert lookup(config, "a") == {"proxycommand": ["nc %h %p"]}


def test_hops_are_resolved_with_their_own_config(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "config",
        "Host gpu\n  HostName 10.2.0.2\n  ProxyJump ops@bastion:2200,inner\n"
        "Host bastion\n  HostName 192.0.2.1\n  User nobody\n  Port 22\n  ProxyJump outer\n"
        "Host inner\n  HostName 10.2.0.1\n  ProxyJump ignored\n",
    )
    target = resolve_ssh_target("gpu", config, environ={})
    assert [hop.alias for hop in target.jumps] == ["outer", "ops@bastion:2200", "inner"]  # bastion's own jump first
    assert target.jumps[1].address == "ops@192.0.2.1:2200"
    assert target.route == "outer -> ops@bastion:2200 -> inner -> gpu"
    assert resolve_ssh_target("gpu", config, jump="none", environ={}).jumps == ()
    assert [hop.alias for hop in resolve_ssh_target("x", config, jump="bastion", environ={}).jumps] == [
        "outer",
        "bastion",
    ]


def test_a_jump_loop_is_a_config_error(tmp_path: Path) -> None:
    config = _write(tmp_path / "config", "Host *\n  ProxyJump bastion\n")
    with pytest.raises(ConfigError, match="loops"):
        resolve_ssh_target("gpu", config, environ={})


def test_agent_and_key_tokens(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "config",
        "Host a\n  IdentityAgent none\nHost b\n  IdentityAgent ${SOCKS}/agent.%r\n  IdentityFile ~/.ssh/%h_%p\n"
        "  CertificateFile %d/c-cert.pub\n  User ops\n  HostName 10.0.0.3\n",
    )
    assert resolve_ssh_target("a", config, environ={"SSH_AUTH_SOCK": "/run/agent"}).agent_socket is None
    assert resolve_ssh_target("c", config, environ={"SSH_AUTH_SOCK": "/run/agent"}).agent_socket == "/run/agent"
    target = resolve_ssh_target("b", config, environ={"SOCKS": "/s"})
    assert target.agent_socket == "/s/agent.ops"
    assert target.identity_files == (str(Path("~/.ssh/10.0.0.3_22").expanduser()),)
    assert target.certificate_files == (str(Path("~/c-cert.pub").expanduser()),)
    with pytest.raises(ConfigError, match=r"\$\{SOCKS\} is not set"):
        resolve_ssh_target("b", config, environ={})


def test_proxy_command_runs_without_a_shell_when_it_can(tmp_path: Path) -> None:
    config = _write(tmp_path / "config", "Host a\n  HostName 10.0.0.4\n  ProxyCommand nc -q0 %h %p\n")
    assert proxy_argv(resolve_ssh_target("a", config, environ={})) == ["nc", "-q0", "10.0.0.4", "22"]
    config.write_text('Host a\n  HostName 10.0.0.4\n  ProxyCommand ssh -W "[%h]:%p" jump | cat\n')
    assert proxy_argv(resolve_ssh_target("a", config, environ={})) == [
        "/bin/sh", "-c", 'exec ssh -W "[10.0.0.4]:22" jump | cat'
    ]  # fmt: skip


def test_a_proxy_command_socket_carries_bytes_and_ends_its_command() -> None:
    sock = start_proxy(["cat"])
    sock.sendall(b"SSH-2.0-test\r\n")
    assert sock.recv(100) == b"SSH-2.0-test\r\n"
    sock.close()
    assert sock.process is not None and sock.process.poll() is not None


def test_keys_are_offered_in_openssh_order(tmp_path: Path) -> None:
    from specops.host.ssh.keyorder import key_order
    from specops.host.ssh.target import SshTarget

    named, other = tmp_path / "id_named", tmp_path / "id_file_only"
    for path, blob in ((named, b"NAMED"), (other, b"OTHER")):
        path.write_text("private")
        Path(f"{path}.pub").write_text(f"ssh-ed25519 {__import__('base64').b64encode(blob).decode()} c\n")
    target = SshTarget("a", "h", "u", 22, identity_files=(str(named), str(other), str(tmp_path / "missing")))
    agent = [(b"AGENT-ONLY", "ssh-ed25519 laptop"), (b"NAMED", "ssh-ed25519 named")]
    order = key_order(target, agent)
    assert [c.label for c in order] == [f"{named} (ssh-agent)", "ssh-agent ssh-ed25519 laptop", str(other)]
    assert [
        c.label for c in key_order(SshTarget("a", "h", "u", 22, target.identity_files, identities_only=True), agent)
    ] == [
        f"{named} (ssh-agent)",
        str(other),
    ]


def test_the_ssh_line_of_a_hint_takes_the_same_hops(tmp_path: Path) -> None:
    from specops.host.ssh.errors import ssh_command

    config = _write(tmp_path / "config", "Host gpu\n  HostName 10.0.0.8\n")
    assert ssh_command(resolve_ssh_target("gpu", config, jump="ops@bastion:2200", environ={})) == (
        "ssh -J ops@bastion:2200 gpu"
    )
    assert ssh_command(resolve_ssh_target("gpu", config, environ={})) == "ssh gpu"

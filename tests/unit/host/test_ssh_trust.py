"""~/.ssh/config keywords about trust, each test the attack it stops: a revoked host key, a host pinned to its
own known_hosts file, a HostKeyAlias, a config file someone else could write, a ProxyCommand token value."""

from __future__ import annotations

import base64
import os
import pwd
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from specops.errors import ConfigError, ConnectError, ExitCode
from specops.host.ssh.connection import open_ssh
from specops.host.ssh.hostkeys import HostKeyChecker, known_hosts_files
from specops.host.ssh.proxycommand import proxy_argv
from specops.host.ssh.resolve import resolve_ssh_target
from specops.host.ssh.target import SshTarget
from tests.testbed.testhost.keys import write_keypair
from tests.unit.clirun import run_cli
from tests.unit.conftest import VALID_HOST
from tests.unit.needs import need_root

IP = "10.0.0.7"


def _key(tmp_path: Path, name: str) -> tuple[str, bytes]:
    """(`ssh-ed25519 AAAA...`, its blob): a fresh host key."""
    line = write_keypair(tmp_path / name, name)
    return line, base64.b64decode(line.split()[1])


def _config(tmp_path: Path, *lines: str, alias: str = "gpu") -> Path:
    config = tmp_path / "config"
    config.write_text("\n".join([f"Host {alias}", f"  HostName {IP}", *(f"  {line}" for line in lines)]) + "\n")
    return config


def _checker(target: SshTarget) -> HostKeyChecker:
    return HostKeyChecker(target, known_hosts_files(target))


def test_a_key_listed_in_revoked_host_keys_is_refused_even_when_known_hosts_lists_it(tmp_path: Path) -> None:
    good, blob = _key(tmp_path, "host")
    (tmp_path / "known").write_text(f"{IP} {good}\n")
    (tmp_path / "revoked").write_text(f"# retired keys\n{good} old-host\n")
    target = resolve_ssh_target("gpu", _config(tmp_path, f"UserKnownHostsFile {tmp_path}/known",
                                               f"RevokedHostKeys {tmp_path}/revoked"))  # fmt: skip
    with pytest.raises(ConnectError) as caught:
        _checker(target).check(blob, "ssh-ed25519")
    assert caught.value.exit_code is ExitCode.UNREACHABLE
    assert "which RevokedHostKeys revokes" in caught.value.message
    assert f"{tmp_path}/revoked:2" in caught.value.message


def test_a_missing_or_broken_revocation_list_refuses_every_host_never_revokes_nothing(tmp_path: Path) -> None:
    good, blob = _key(tmp_path, "host")
    (tmp_path / "known").write_text(f"{IP} {good}\n")
    config = _config(tmp_path, f"UserKnownHostsFile {tmp_path}/known", "RevokedHostKeys ~/no-such-krl-%h")
    with pytest.raises(ConnectError, match=rf"RevokedHostKeys {Path.home()}/no-such-krl-{IP} cannot be read"):
        _checker(resolve_ssh_target("gpu", config))
    (tmp_path / "revoked.krl").write_bytes(b"SSHKRL\n\0\0\0\0\1" + bytes(40))
    config = _config(tmp_path, f"UserKnownHostsFile {tmp_path}/known", f"RevokedHostKeys {tmp_path}/revoked.krl")
    with pytest.raises(ConnectError, match=r"revoked.krl: it cannot be read as a KRL: .*no host key is accepted"):
        _checker(resolve_ssh_target("gpu", config)).check(blob, "ssh-ed25519")


def test_user_known_hosts_file_replaces_the_default_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host pinned to its own file: a stale line for its (recycled) address in ~/.ssh/known_hosts, holding the
    key an impostor now presents, must not be accepted."""
    pinned, _ = _key(tmp_path, "pinned")
    impostor, impostor_blob = _key(tmp_path, "impostor")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "known_hosts").write_text(f"{IP} {impostor}\n")
    (tmp_path / "prod").write_text(f"{IP} {pinned}\n")
    target = resolve_ssh_target("gpu", _config(tmp_path, "UserKnownHostsFile ~/prod"))
    assert known_hosts_files(target) == [tmp_path / "prod", Path("/etc/ssh/ssh_known_hosts"),
                                         Path("/etc/ssh/ssh_known_hosts2")]  # fmt: skip
    with pytest.raises(ConnectError, match="HAS CHANGED"):
        _checker(target).check(impostor_blob, "ssh-ed25519")


def test_known_hosts_keywords_take_several_files_none_and_tokens(tmp_path: Path) -> None:
    config = _config(
        tmp_path, "HostKeyAlias prod-gpu", "UserKnownHostsFile /kh/%h /kh/%k-%p", "GlobalKnownHostsFile none"
    )
    target = resolve_ssh_target("gpu", config)
    assert known_hosts_files(target) == [Path(f"/kh/{IP}"), Path("/kh/prod-gpu-22")]
    config = _config(tmp_path, "UserKnownHostsFile none", "GlobalKnownHostsFile /g/one /g/two")
    assert known_hosts_files(resolve_ssh_target("gpu", config)) == [Path("/g/one"), Path("/g/two")]
    with pytest.raises(ConfigError, match="`none` must appear alone"):
        resolve_ssh_target("gpu", _config(tmp_path, "UserKnownHostsFile none /kh/x"))


def test_host_key_alias_is_the_name_known_hosts_is_searched_for(tmp_path: Path) -> None:
    """Two hosts behind one address on different ports keep their keys apart only through HostKeyAlias."""
    good, blob = _key(tmp_path, "host")
    other, other_blob = _key(tmp_path, "other")
    (tmp_path / "known").write_text(f"prod-gpu {good}\n{IP} {other}\n")
    config = _config(tmp_path, "HostKeyAlias prod-gpu", "Port 2222", f"UserKnownHostsFile {tmp_path}/known")
    checker = _checker(resolve_ssh_target("gpu", config))
    checker.check(blob, "ssh-ed25519")
    with pytest.raises(ConnectError, match="THE HOST KEY FOR prod-gpu HAS CHANGED"):
        checker.check(other_blob, "ssh-ed25519")


@pytest.mark.parametrize("mode", [0o664, 0o646, 0o666])
def test_an_ssh_config_others_can_write_is_refused_like_openssh(tmp_path: Path, mode: int) -> None:
    """Whoever can write it can set a ProxyCommand: code run as the operator."""
    config = _config(tmp_path, "User ops")
    config.chmod(mode)
    with pytest.raises(ConfigError) as caught:
        resolve_ssh_target("gpu", config)
    assert caught.value.exit_code is ExitCode.CONFIG
    assert caught.value.message == f"Bad owner or permissions on {config}"


def test_an_included_file_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    included = tmp_path / "extra.conf"
    included.write_text("Host *\n  ProxyCommand nc %h %p\n")
    config = tmp_path / "config"
    config.write_text(f"Include {included}\n")
    config.chmod(0o600)
    assert resolve_ssh_target("gpu", config).proxy_command == "nc %h %p"  # ours (or root's), 0644: fine
    need_root("only root can give a file away")
    os.chown(included, 65534, 65534)
    with pytest.raises(ConfigError, match=f"Bad owner or permissions on {included}"):
        resolve_ssh_target("gpu", config)


@pytest.mark.parametrize(
    ("command", "hostname"),
    [
        ('sh -c "nc %h %p"', "h$(touch MARK)"),  # $(...) inside the command's own double quotes
        ("bash -c 'exec 3<>/dev/tcp/%h/%p; cat <&3'", "h';touch MARK;'"),  # the token inside single quotes
        ("nc %h %p", "-cMARK"),  # an option of the proxy program
    ],
)
def test_a_proxy_command_token_value_cannot_inject(tmp_path: Path, command: str, hostname: str) -> None:
    mark = tmp_path / "MARK"
    target = SshTarget(alias="gpu", hostname=hostname.replace("MARK", str(mark)), user="ops", port=22,
                       identity_files=(), proxy_command=command)  # fmt: skip
    with pytest.raises(ValueError, match=r"ProxyCommand %h would be .*: refused"):
        proxy_argv(target)
    with pytest.raises(ConnectError, match=r"ProxyCommand failed: ProxyCommand %h would be") as caught:
        open_ssh(target, known_hosts=[], connect_timeout=2)
    assert caught.value.exit_code is ExitCode.UNREACHABLE
    assert not mark.exists()


def _openssh_resolves(config: Path, alias: str) -> dict[str, str]:
    """`ssh -G`: how the real OpenSSH client reads the config for the alias (it connects nowhere)."""
    done = subprocess.run(["ssh", "-G", "-F", str(config), alias], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)


def test_the_known_hosts_keywords_resolve_as_ssh_G_shows_them(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        f"Host gpu\n  HostName {IP}\n  User ops\n  Port 2222\n  HostKeyAlias prod-gpu\n"
        "  UserKnownHostsFile /kh/%h-%p-%r-%n-%k /kh/second\n  GlobalKnownHostsFile /g/one /g/two\n"
        "Host other\n  UserKnownHostsFile none\n  GlobalKnownHostsFile none\n"
    )
    for alias in ("gpu", "other"):
        openssh, target = _openssh_resolves(config, alias), resolve_ssh_target(alias, config)
        assert " ".join(target.known_hosts_files or ("none",)) == openssh["userknownhostsfile"]
        assert " ".join(target.global_known_hosts_files or ("none",)) == openssh["globalknownhostsfile"]
        assert (target.host_key_alias or "none") == openssh.get("hostkeyalias", "none")


def test_specops_refuses_a_group_writable_ssh_config_with_openssh_words_and_exit_3(
    capsys: pytest.CaptureFixture[str], write_config: Callable[[str], Path], config_dir: Path
) -> None:
    """The operator's view: `specops hosts` reads ~/.ssh/config to show where each host is reached."""
    write_config(VALID_HOST)
    ssh_config = config_dir / "home" / ".ssh" / "config"
    ssh_config.parent.mkdir(parents=True)
    ssh_config.write_text("Host llm-two\n  ProxyCommand nc %h %p\n")
    ssh_config.chmod(0o664)
    result = run_cli(capsys, "hosts")
    assert result.code == 3
    assert f"error: Bad owner or permissions on {ssh_config}" in result.err.splitlines()
    assert f"hint: `chmod go-w {ssh_config}`" in result.err
    ssh_config.chmod(0o644)
    assert run_cli(capsys, "hosts").code == 0


def test_the_local_user_is_our_account_not_what_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As OpenSSH: %u, `Match localuser` and the default User come from getuid(), not $USER/$LOGNAME."""
    me = pwd.getpwuid(os.getuid()).pw_name
    monkeypatch.setenv("USER", "mallory")
    monkeypatch.setenv("LOGNAME", "mallory")
    config = _config(tmp_path, "IdentityFile /keys/%u")
    config.write_text(config.read_text() + "Match localuser mallory\n  ProxyCommand nc %h %p\n")
    target = resolve_ssh_target("gpu", config)
    assert (target.user, target.identity_files, target.proxy_command) == (me, (f"/keys/{me}",), None)

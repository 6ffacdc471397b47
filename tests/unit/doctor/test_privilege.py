"""ssh.privilege: commands must run as root, through a root login or a working `become = "sudo"`."""

from __future__ import annotations

from contextlib import AbstractContextManager

from specops.doctor.model import Status
from specops.doctor.registry import all_checks
from specops.doctor.runner import DoctorTarget, examine
from specops.host.base import Host
from specops.host.become import BecomeError
from tests.unit.doctor.factory import HOST, context, healthy_facts, replace, run


def _facts(euid: int | None) -> object:
    return healthy_facts(system=replace(healthy_facts().system, euid=euid))


def test_root_login_and_sudo_to_root_pass() -> None:
    direct = run("ssh.privilege", context(_facts(0)))  # type: ignore[arg-type]
    assert (direct.status, direct.summary) == (Status.PASS, "commands run as root (as the login user)")
    sudo = run("ssh.privilege", context(_facts(0), host=HOST.model_copy(update={"become": "sudo"})))  # type: ignore[arg-type]
    assert (sudo.status, sudo.summary) == (Status.PASS, "commands run as root (through sudo -u root)")


def test_a_non_root_login_without_become_fails_with_the_setting_to_add() -> None:
    result = run("ssh.privilege", context(_facts(1000)))  # type: ignore[arg-type]
    assert result.status is Status.FAIL
    assert result.summary == (
        "the login user is not root (uid 1000) and become is not set: a deploy cannot write its files"
    )
    assert result.hint.startswith(f'set become = "sudo" for {HOST.name} in specops.toml')


def test_sudo_to_another_user_fails_naming_become_user() -> None:
    host = HOST.model_copy(update={"become": "sudo", "become_user": "svc"})
    result = run("ssh.privilege", context(_facts(998), host=host))  # type: ignore[arg-type]
    assert (result.status, result.summary) == (Status.FAIL, "sudo runs commands as svc (uid 998), not root")


def test_an_older_probe_without_euid_and_local_are_skipped() -> None:
    assert run("ssh.privilege", context(_facts(None))).status is Status.SKIP  # type: ignore[arg-type]
    assert run("ssh.privilege", context(_facts(1000), host=None)).status is Status.SKIP  # type: ignore[arg-type]


def test_sudo_refusing_on_connect_is_reported_as_ssh_privilege_with_the_fix() -> None:
    def refuse() -> AbstractContextManager[Host]:
        raise BecomeError("gpu-one (ubuntu@gpu-one:22): sudo needs a password for ubuntu", hint="NOPASSWD or -K")

    target = DoctorTarget(name="gpu-one", spec=HOST, profile=None, open_host=refuse, python="/venv/bin/python")
    report = examine(target, all_checks(), deep=False)
    assert report.unreachable == "gpu-one (ubuntu@gpu-one:22): sudo needs a password for ubuntu"
    assert [(r.id, r.status, r.hint) for r in report.results] == [("ssh.privilege", Status.FAIL, "NOPASSWD or -K")]

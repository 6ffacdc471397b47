"""Checks about the host itself: reachability, the interpreter, systemd (resources.py: disk, ports, limits)."""

from __future__ import annotations

from specops.doctor.model import CheckContext, CheckResult, failed, passed, skipped
from specops.doctor.registry import check


@check("ssh.reachable", "the host answers over SSH and the probe runs there")
def ssh_reachable(ctx: CheckContext) -> CheckResult:
    """The runner reports FAIL itself when it cannot connect; reaching this function means the probe ran."""
    facts = ctx.facts
    where = f"{ctx.host.name} ({ctx.host.ssh})" if ctx.host else "this machine (--local)"
    hostname = facts.system.hostname or "unknown hostname"
    evidence = [f"hostname: {hostname}", f"probe version {facts.probe_version}, {facts.probe_seconds:.2f} s"]
    if facts.system.os_release:
        evidence.append(f"os: {facts.system.os_release}, kernel {facts.system.kernel or '?'}")
    evidence += [f"could not observe {section}: {why}" for section, why in sorted(facts.errors.items())]
    return passed("ssh.reachable", f"probed {where}: {hostname} in {facts.probe_seconds:.1f} s", evidence)


@check("ssh.privilege", "commands on the host run as root: a root login, or become = sudo that works")
def ssh_privilege(ctx: CheckContext) -> CheckResult:
    """The runner reports FAIL itself when sudo refuses (BecomeError); here the probe ran, as whom?"""
    if ctx.host is None:
        return skipped("ssh.privilege", "not needed for --local (nothing is installed)")
    euid = ctx.facts.system.euid
    if euid is None:
        return skipped("ssh.privilege", "the probe did not say which user it ran as")
    how = f"through sudo -u {ctx.host.become_user}" if ctx.host.uses_sudo else "as the login user"
    if euid == 0:
        return passed("ssh.privilege", f"commands run as root ({how})", [f"probe euid 0 ({how})"])
    if ctx.host.uses_sudo:
        return failed(
            "ssh.privilege",
            f"sudo runs commands as {ctx.host.become_user} (uid {euid}), not root",
            f'set hosts.{ctx.host.name}.become_user = "root" (or remove it: root is the default)',
            [f"probe euid {euid}"],
        )
    return failed(
        "ssh.privilege",
        f"the login user is not root (uid {euid}) and become is not set: a deploy cannot write its files",
        f'set become = "sudo" for {ctx.host.name} in specops.toml (and give the login user NOPASSWD sudo), '
        "or log in as root",
        [f"probe euid {euid}", f"ssh {ctx.host.ssh}"],
    )


@check("python.interpreter", "the configured interpreter runs and is Python >= 3.10")
def python_interpreter(ctx: CheckContext) -> CheckResult:
    py = ctx.facts.python
    major, minor = (int(part) for part in py.version.split(".")[:2])
    if (major, minor) < (3, 10):
        return failed(
            "python.interpreter",
            f"Python {py.version} at {py.executable} is too old for SGLang",
            "point hosts.NAME.python at a venv with Python >= 3.10",
            [f"sys.executable = {py.executable}", f"sys.prefix = {py.prefix}"],
        )
    return passed("python.interpreter", f"Python {py.version} ({py.executable})", [f"sys.prefix = {py.prefix}"])


@check("systemd.present", "systemd is PID 1 and new enough for the unit specops installs")
def systemd_present(ctx: CheckContext) -> CheckResult:
    system = ctx.facts.system
    if system.systemd_version is None:
        if ctx.host is None:
            return skipped("systemd.present", "no systemd found (not needed for --local)")
        return failed(
            "systemd.present",
            "systemd is not running on this host",
            "specops runs SGLang as a systemd service; use a host booted with systemd",
            [ctx.facts.errors.get("systemd", "systemctl --version failed")],
        )
    return passed("systemd.present", f"systemd {system.systemd_version}", [system.systemd_version_text or ""])

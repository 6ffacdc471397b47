"""The timed cases: bare paramiko, OpenSSH, and `specops doctor` in-process and as the console script.

Why both doctor variants: in-process shows what the doctor itself costs (connect, probe, checks, JSON);
the console script adds what a user also waits for (Python start-up, imports). Each case returns its own
wall time and then checks what it got (JSON of every host, exit status), so a case that silently fails
cannot produce a fast figure. Checking happens after the clock stops.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import paramiko

from bench.fleet import GROUP, GROUP4, Fleet

# 0: every check passed, 1: some check failed or warned; 4 (unreachable) or anything else is a broken run
DOCTOR_OK_CODES = (0, 1)


class CaseFailed(RuntimeError):
    """A timed case did not do what it claims; its figure would be meaningless."""


@dataclass(frozen=True)
class Case:
    """One measured operation; `run` returns its wall seconds."""

    key: str
    label: str
    run: Callable[[], float]


def bare_paramiko(fleet: Fleet, index: int = 0) -> float:
    """The floor for any SSH tool: connect + auth (strict known_hosts, the same key) + one exec + close."""
    host = fleet.hosts[index]
    command = f"{shlex.quote(str(fleet.python))} -c pass"
    started = time.perf_counter()
    client = paramiko.SSHClient()
    client.load_host_keys(str(host.known_hosts_path))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    try:
        client.connect(
            host.ip, username="root", key_filename=str(host.key_path), allow_agent=False, look_for_keys=False,
            timeout=10,
        )  # fmt: skip
        _, stdout, _ = client.exec_command(command)
        status = stdout.channel.recv_exit_status()
    finally:
        client.close()
    elapsed = time.perf_counter() - started
    if status != 0:
        raise CaseFailed(f"bare paramiko: `{command}` exited {status}")
    return elapsed


BARE_SCRIPT = """
import sys, paramiko
ip, key, known, command = sys.argv[1:5]
client = paramiko.SSHClient()
client.load_host_keys(known)
client.set_missing_host_key_policy(paramiko.RejectPolicy())
client.connect(ip, username="root", key_filename=key, allow_agent=False, look_for_keys=False, timeout=10)
_, stdout, _ = client.exec_command(command)
status = stdout.channel.recv_exit_status()
client.close()
sys.exit(status)
"""


def bare_paramiko_script(fleet: Fleet) -> float:
    """The same connect + exec as a new Python process (interpreter start and `import paramiko` included): the
    floor for a console script that speaks SSH through paramiko, as a user runs one."""
    host = fleet.hosts[0]
    command = f"{shlex.quote(str(fleet.python))} -c pass"
    argv = [sys.executable, "-c", BARE_SCRIPT, host.ip, str(host.key_path), str(host.known_hosts_path), command]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise CaseFailed(f"bare paramiko script exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return elapsed


def bare_paramiko_all(fleet: Fleet) -> float:
    """The same for every host at once in threads: how this machine itself scales N trivial SSH execs."""
    hosts = fleet.hosts
    with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        started = time.perf_counter()
        list(pool.map(lambda index: bare_paramiko(fleet, index), range(len(hosts))))
        return time.perf_counter() - started


def openssh(fleet: Fleet) -> float:
    """The same exec with the OpenSSH client (for reference: what `ssh HOST ...` costs here)."""
    host = fleet.hosts[0]
    argv = ["ssh", "-F", str(fleet.ssh_config), "-o", "BatchMode=yes", host.name, f"{fleet.python} -c pass"]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=fleet.env(), check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise CaseFailed(f"ssh exited {done.returncode}: {done.stderr.strip()}")
    return elapsed


def doctor_argv(fleet: Fleet, targets: list[str]) -> list[str]:
    return ["--config", str(fleet.config), "doctor", *targets, "--json"]


def doctor_in_process(fleet: Fleet, targets: list[str], expected: list[str]) -> float:
    """`specops.cli.main.main([...])` with stdout captured and HOME pointing at the fleet's."""
    from specops.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    saved_home = os.environ.get("HOME")
    os.environ["HOME"] = str(fleet.home)
    try:
        started = time.perf_counter()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(doctor_argv(fleet, targets))
        elapsed = time.perf_counter() - started
    finally:
        if saved_home is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = saved_home
    check_doctor_output(code, out.getvalue(), err.getvalue(), expected)
    return elapsed


def console_script() -> Path:
    """The installed `specops` entry point next to this interpreter (what `pip install` puts on PATH)."""
    script = Path(sys.executable).parent / "specops"
    if not script.exists():
        raise CaseFailed(f"no console script at {script}: install specops into this venv (pip install -e .)")
    return script


def doctor_subprocess(fleet: Fleet, targets: list[str], expected: list[str]) -> float:
    """The user's view: the console script as a new process (Python start-up and imports included)."""
    argv = [str(console_script()), *doctor_argv(fleet, targets)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=fleet.env(), check=False)
    elapsed = time.perf_counter() - started
    check_doctor_output(done.returncode, done.stdout, done.stderr, expected)
    return elapsed


def check_doctor_output(code: int, stdout: str, stderr: str, expected: list[str]) -> dict[str, object]:
    """Every expected host answered with probe facts and checks; otherwise the run is not a figure."""
    if code not in DOCTOR_OK_CODES:
        raise CaseFailed(f"doctor exited {code}: {stderr.strip()[-600:] or stdout.strip()[-600:]}")
    try:
        hosts = json.loads(stdout)["hosts"]
    except (ValueError, KeyError, TypeError) as error:
        raise CaseFailed(f"doctor --json printed no hosts document ({error}): {stdout[:300]!r}") from None
    if sorted(hosts) != sorted(expected):
        raise CaseFailed(f"doctor reported hosts {sorted(hosts)}, expected {sorted(expected)}")
    for name, report in hosts.items():
        if report.get("unreachable") or not report.get("facts") or not report.get("checks"):
            raise CaseFailed(f"doctor: {name} has no probe facts/checks: {report.get('unreachable')}")
    return dict(hosts)


def all_cases(fleet: Fleet) -> list[Case]:
    """The cases in report order; keys are what the ratios refer to."""
    one, everyone = [fleet.hosts[0].name], fleet.names
    return [*_base_cases(fleet, one), *_group_cases(fleet, everyone), *_four_cases(fleet)]


def _base_cases(fleet: Fleet, one: list[str]) -> list[Case]:
    count = len(fleet.hosts)
    return [
        Case("bare", "bare paramiko: connect + exec `python -c pass` + close (1 host)", lambda: bare_paramiko(fleet)),
        Case("bare_cli", "bare paramiko as a script: Python start + `import paramiko` + connect + exec (1 host)",
             lambda: bare_paramiko_script(fleet)),
        Case("bareN", f"bare paramiko, all {count} hosts in parallel threads", lambda: bare_paramiko_all(fleet)),
        Case("openssh", "OpenSSH `ssh HOST python -c pass` (1 host, reference)", lambda: openssh(fleet)),
        Case("doc1_in", "`specops doctor HOST --json`, in-process (1 host)",
             lambda: doctor_in_process(fleet, one, one)),
        Case("doc1_cli", "`specops doctor HOST --json`, console script (1 host)",
             lambda: doctor_subprocess(fleet, one, one)),
    ]  # fmt: skip


def _group_cases(fleet: Fleet, everyone: list[str]) -> list[Case]:
    count = len(everyone)
    return [
        Case("docN_in", f"`specops doctor {GROUP} --json`, in-process ({count} hosts)",
             lambda: doctor_in_process(fleet, [GROUP], everyone)),
        Case("docN_cli", f"`specops doctor {GROUP} --json`, console script ({count} hosts)",
             lambda: doctor_subprocess(fleet, [GROUP], everyone)),
    ]  # fmt: skip


def _four_cases(fleet: Fleet) -> list[Case]:
    """With more than 4 hosts, the doctor of the first 4 too: the middle point of how wall time grows."""
    if len(fleet.hosts) <= 4:
        return []
    four = fleet.names[:4]
    return [
        Case("doc4_in", f"`specops doctor {GROUP4} --json`, in-process (4 hosts)",
             lambda: doctor_in_process(fleet, [GROUP4], four)),
        Case("doc4_cli", f"`specops doctor {GROUP4} --json`, console script (4 hosts)",
             lambda: doctor_subprocess(fleet, [GROUP4], four)),
    ]  # fmt: skip


def compile_bytecode(log: Callable[[str], None]) -> None:
    """What pip does when it installs a wheel: every module of specops compiled to .pyc. Without it, an editable
    install run with PYTHONDONTWRITEBYTECODE=1 (or a stale cache) compiles the sources at every start, and a
    console script's figure would measure the compiler rather than the imports an operator waits for."""
    import compileall

    import specops

    if not compileall.compile_dir(Path(specops.__file__).parent, quiet=1):
        raise CaseFailed("could not compile specops to bytecode")
    log("compiled specops to bytecode (as pip does at install)")

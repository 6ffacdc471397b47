"""Start and stop test hosts.

start: reserve name/index/subnet under a lock -> keys + seeded upper layer -> own cgroup ->
`unshare` (pid, mount, uts, ipc, net, cgroup) running pid1.sh -> veth into its netns -> "go" ->
systemd boots -> wait until a real strict `ssh ... true` works.

stop: see teardown.py; the leftover check must come back empty.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.testbed.testhost import network, procs
from tests.testbed.testhost.host import TestHost
from tests.testbed.testhost.keys import write_keypair
from tests.testbed.testhost.layout import (
    MAX_INDEX,
    HostRecord,
    base_dir,
    cgroup_dir,
    check_name_and_index,
    inner_ip,
    outer_ip,
    outer_link,
)
from tests.testbed.testhost.leftovers import LeftoverError, host_leftovers, mounts_mentioning
from tests.testbed.testhost.teardown import remember_start, started_records, teardown_record
from tests.testbed.testhost.upper import seed_upper

PID1_SCRIPT = Path(__file__).with_name("pid1.sh")


class TestHostError(RuntimeError):
    """A host could not be started; the message ends with its console log."""

    __test__ = False


def require_root() -> None:
    if os.geteuid() != 0 or not Path("/proc/self/ns/pid").exists():
        raise PermissionError("test hosts need root on Linux (namespaces, mounts, veth, cgroups)")


@contextlib.contextmanager
def harness_lock() -> Iterator[None]:
    """Serialise reservations and cleanups across threads and processes (flock on BASE/.lock)."""
    base_dir().mkdir(parents=True, exist_ok=True)
    with open(base_dir() / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _taken_indexes() -> set[int]:
    taken = set()
    for state_dir in base_dir().iterdir():
        record = HostRecord.load(state_dir) if state_dir.is_dir() else None
        if record:
            taken.add(record.index)
    return taken


def _index_is_free(index: int, taken: set[int]) -> bool:
    return index not in taken and not network.link_exists(outer_link(index)) and not network.subnet_in_use(index)


def _name_in_use(name: str) -> bool:
    return (base_dir() / name).exists() or cgroup_dir(name).exists()


def _reserve(name: str | None, index: int | None, manual: bool) -> tuple[HostRecord, Path]:
    """Pick/validate name and index and create the state dir with its record, atomically."""
    with harness_lock():
        taken = _taken_indexes()
        if index is None:  # a default name's folder or cgroup may outlive its record (a host being torn down)
            index = next((i for i in range(1, MAX_INDEX + 1) if _index_is_free(i, taken) and not _name_in_use(f"th{i}")),
                         0)  # fmt: skip
            if not index:
                raise TestHostError("no free test host index (10.200.1-254) left")
        name = name or f"th{index}"
        check_name_and_index(name, index)
        state_dir = base_dir() / name
        if state_dir.exists() or cgroup_dir(name).exists():
            raise TestHostError(f"test host {name} exists already (stop it, or run cleanup)")
        if not _index_is_free(index, taken):
            raise TestHostError(f"index {index} (10.200.{index}.0/30, {outer_link(index)}) is in use")
        state_dir.mkdir(mode=0o700)
        me = None if manual else os.getpid()
        record = HostRecord(
            name=name, index=index, owner_pid=me, owner_start=procs.start_time(me) if me else None,
            cgroup=str(cgroup_dir(name)), link=outer_link(index), incarnation=uuid.uuid4().hex[:12],
        )  # fmt: skip
        record.save(state_dir)
        return record, state_dir


def _launch(record: HostRecord, state_dir: Path, lower: Path, go_read: int) -> subprocess.Popen[bytes]:
    """Start `unshare` inside the host's fresh cgroup; its only child becomes the host's PID 1."""
    Path(record.cgroup).mkdir()
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "STH_NAME": record.name,
        "STH_LOWER": str(lower),
        "STH_UPPER": str(state_dir / "upper"),
        "STH_WORK": str(state_dir / "work"),
        "STH_ROOT": str(state_dir / "root"),
        "STH_GO_FD": str(go_read),
    }
    # the shell moves itself into the cgroup before exec'ing unshare, so the cgroup namespace is
    # rooted there; (no preexec_fn: hosts are started from several threads at once)
    argv = [
        "sh", "-c", 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"', "sh", record.cgroup,
        "unshare", "--pid", "--fork", "--kill-child=SIGKILL", "--mount", "--uts", "--ipc", "--net",
        "--cgroup", "bash", str(PID1_SCRIPT),
    ]  # fmt: skip
    with open(state_dir / "console.log", "wb") as console:
        return subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT,
            pass_fds=(go_read,), start_new_session=True,
        )  # fmt: skip


def _wait_for_pid1(launcher: subprocess.Popen[bytes], timeout: float = 10) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        child = procs.first_child(launcher.pid)
        if child is not None and Path(f"/proc/{child}/ns/pid").exists():
            ns_of_child = procs.pid_namespace_inode(child)
            if ns_of_child != procs.pid_namespace_inode(launcher.pid):
                return child
        if launcher.poll() is not None:
            break
        time.sleep(0.005)
    raise TestHostError("the namespaces did not start")


def _sshd_listens(systemd_pid: int) -> bool:
    """True once something listens on TCP port 22 in the host's netns.

    Read from /proc/PID/net/tcp{,6} (the netns of PID) instead of a probe connection: a bare TCP
    connect would make sshd log "kex_exchange_identification" warnings into every host's journal.
    """
    for table in ("tcp", "tcp6"):
        try:
            rows = Path(f"/proc/{systemd_pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        if any(row.split()[1].endswith(":0016") and row.split()[3] == "0A" for row in rows):
            return True
    return False


def _wait_for_ssh(host: TestHost, pid1_start: int, timeout: float) -> None:
    """Return once a real `ssh ... true` with strict host-key checking succeeds."""
    deadline = time.monotonic() + timeout
    last_error = "sshd never listened on port 22"
    while time.monotonic() < deadline:
        if not procs.is_alive(host.systemd_pid, pid1_start):
            raise TestHostError("the host's PID 1 died while booting")
        if not _sshd_listens(host.systemd_pid):  # cheap: an ssh process per poll is costly on 2 cores
            time.sleep(0.02)
            continue
        done = host.ssh("true", check=False, timeout=10)
        if done.returncode == 0:
            return
        last_error = done.stderr.strip()
        time.sleep(0.1)
    raise TestHostError(f"ssh did not work within {timeout:.0f}s: {last_error}")


def _console_tail(state_dir: Path, lines: int = 30) -> str:
    try:
        return "\n".join((state_dir / "console.log").read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no console log)"


def boot(record: HostRecord, state_dir: Path, remember: Callable[[subprocess.Popen[bytes]], None]) -> int:
    """Launch PID 1 on the host's state dir (its upper layer: its disk), plug its network in, let it boot;
    return PID 1's outer pid. Shared by start and reboot (a reboot boots the same disk again)."""
    go_read, go_write = os.pipe()  # closing go_write without "go" makes pid1.sh give up
    try:
        launcher = _launch(record, state_dir, Path(record.lower), go_read)
    except BaseException:
        os.close(go_write)
        raise
    finally:
        os.close(go_read)
    remember(launcher)
    record.launcher_pid, record.launcher_start = launcher.pid, procs.start_time(launcher.pid)
    with os.fdopen(go_write, "w") as go:
        pid1 = _wait_for_pid1(launcher)
        record.systemd_pid, record.systemd_start = pid1, procs.start_time(pid1)
        record.pidns_inode = procs.pid_namespace_inode(pid1)
        record.save(state_dir)
        network.plug_in(record.index, pid1)
        go.write("go\n")
    return pid1


def wait_for_ssh(host: TestHost, pid1_start: int, timeout: float) -> None:
    """Return once a real `ssh ... true` with strict host-key checking succeeds (after a start or a reboot)."""
    _wait_for_ssh(host, pid1_start, timeout)


def start_host(
    name: str | None = None, index: int | None = None, *, lower: Path = Path("/"), timeout: float = 60,
    manual: bool = False,
) -> TestHost:  # fmt: skip
    """Start a host; return once `ssh` with strict host-key checking works (see package docs)."""
    require_root()
    record, state_dir = _reserve(name, index, manual)
    try:
        for sub in ("upper", "work", "root"):
            (state_dir / sub).mkdir()
        client_public = write_keypair(state_dir / "id_ed25519", f"specops-testhost-client@{record.name}")
        host_public = seed_upper(state_dir / "upper", lower, record.name, client_public)
        (state_dir / "known_hosts").write_text(f"{inner_ip(record.index)} {host_public}\n")
        record.lower = str(lower)
        pid1 = boot(record, state_dir, lambda launcher: remember_start(record, state_dir, launcher))
        host = TestHost(
            name=record.name, index=record.index, ip=inner_ip(record.index), outer_ip=outer_ip(record.index),
            key_path=state_dir / "id_ed25519", known_hosts_path=state_dir / "known_hosts",
            systemd_pid=pid1, state_dir=state_dir, incarnation=record.incarnation,
        )  # fmt: skip
        _wait_for_ssh(host, record.systemd_start or 0, timeout)
        return host
    except BaseException as exc:
        console = _console_tail(state_dir)
        with contextlib.suppress(Exception):
            teardown_record(record, state_dir, harness_lock)
        if isinstance(exc, Exception):
            raise TestHostError(f"test host {record.name} did not start: {exc}\n--- console:\n{console}") from exc
        raise


def stop_host(host: TestHost | str) -> None:
    """Stop a host (a TestHost or a name); idempotent; raise LeftoverError if anything remains.

    Given a TestHost, only that very start of the host is stopped: if its name has since been
    reused by a newer host (here or in another process), the newer one is left alone.
    """
    if isinstance(host, TestHost):
        stop_state_dir(host.state_dir, host.incarnation or None)
    else:
        stop_state_dir(base_dir() / host)


def stop_state_dir(state_dir: Path, incarnation: str | None = None) -> None:
    record = HostRecord.load(state_dir)
    if record is not None and incarnation is not None and record.incarnation != incarnation:
        record = None  # the name now belongs to a newer host; ours was stopped already
    if record is None:
        known = [r for r, d in started_records() if d == state_dir and r.incarnation == incarnation]
        if known:  # ours, already stopped: still insist that it left nothing behind
            with harness_lock():  # no reservation of the same name while we look
                found = host_leftovers(known[-1], state_dir)
            if found:
                raise LeftoverError(f"test host {known[-1].name} left things behind:\n  " + "\n  ".join(found))
        elif incarnation is None and state_dir.exists() and not mounts_mentioning(state_dir):
            shutil.rmtree(state_dir)  # reserved but never launched
        return
    teardown_record(record, state_dir, harness_lock)


def stop_owned_hosts() -> list[str]:
    """Stop every host this process started (not by hand) and has not stopped; return names."""
    stopped = []
    for record, state_dir in started_records():
        current = HostRecord.load(state_dir)
        if record.owner_pid == os.getpid() and current and current.incarnation == record.incarnation:
            stop_state_dir(state_dir, record.incarnation)
            stopped.append(record.name)
    return stopped


def _stop_all_at_exit() -> None:
    """Last line of defence (Ctrl-C, an exception outside a fixture): stop what we still own."""
    with contextlib.suppress(Exception):
        stop_owned_hosts()


atexit.register(_stop_all_at_exit)

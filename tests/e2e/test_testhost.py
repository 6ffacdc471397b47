"""The test hosts behave like real SSH targets, stay isolated, and leave nothing behind."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import paramiko
import pytest

from tests.testbed.testhost import (
    LeftoverError,
    TestHost,
    assert_no_leftovers,
    cleanup_stale,
    list_hosts,
    start_host,
    stop_host,
)
from tests.testbed.testhost.fixtures import require_testhost_environment
from tests.testbed.testhost.keys import write_keypair
from tests.testbed.testhost.layout import CGROUP_PREFIX, HostRecord, base_dir, cgroup2_root, cgroup_dir
from tests.testbed.testhost.leftovers import host_leftovers, mounts_mentioning
from tests.testbed.testhost.peering import peer
from tests.testbed.testhost.procs import cgroup_of, in_cgroup, pid_namespace_inode, pids_in_pid_namespace

REPO = Path(__file__).resolve().parents[2]
Factory = Callable[[int], list[TestHost]]


def _wait_until(check: Callable[[], bool], timeout: float = 15, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


# --- logging in ------------------------------------------------------------------------------


@pytest.mark.e2e
def test_ssh_login_with_strict_host_key_checking(testhost: TestHost) -> None:
    done = testhost.ssh("hostname; systemctl is-system-running; systemctl --failed --no-legend")
    assert done.stdout.splitlines() == [testhost.name, "running"]
    assert testhost.known_hosts_path.read_text().startswith(f"{testhost.ip} ssh-ed25519 ")


@pytest.mark.e2e
def test_paramiko_with_reject_policy_and_known_hosts(testhost: TestHost) -> None:
    client = paramiko.SSHClient()
    client.load_host_keys(str(testhost.known_hosts_path))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(
        testhost.ip, username="root", key_filename=str(testhost.key_path),
        look_for_keys=False, allow_agent=False, timeout=10,
    )  # fmt: skip
    try:
        _, stdout, _ = client.exec_command("systemctl --version")
        assert stdout.read().decode().startswith("systemd 252")
        assert stdout.channel.recv_exit_status() == 0
    finally:
        client.close()


@pytest.mark.e2e
def test_unknown_or_changed_host_key_is_refused(testhost: TestHost, tmp_path: Path) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.touch()
    base = ["ssh", "-F", "none", "-i", str(testhost.key_path), "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes", "-o", "GlobalKnownHostsFile=/dev/null"]  # fmt: skip
    unknown = subprocess.run(
        [*base, "-o", f"UserKnownHostsFile={empty}", f"root@{testhost.ip}", "true"], capture_output=True, text=True
    )
    assert unknown.returncode == 255
    assert "Host key verification failed" in unknown.stderr

    stranger_line = write_keypair(tmp_path / "stranger", "stranger")
    changed_file = tmp_path / "changed_known_hosts"
    changed_file.write_text(f"{testhost.ip} {stranger_line}\n")
    changed = subprocess.run(
        [*base, "-o", f"UserKnownHostsFile={changed_file}", f"root@{testhost.ip}", "true"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert changed.returncode == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in changed.stderr

    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    with pytest.raises(paramiko.SSHException, match="not found in known_hosts"):
        client.connect(testhost.ip, username="root", key_filename=str(testhost.key_path),
                       look_for_keys=False, allow_agent=False, timeout=10)  # fmt: skip
    client.close()


# --- systemd ---------------------------------------------------------------------------------

HELLO_UNIT = """\
[Unit]
Description=specops e2e hello
[Service]
ExecStart=/bin/sh -c 'echo "hello from %H"; exec sleep infinity'
"""


@pytest.mark.e2e
def test_unit_install_start_show_and_journal(testhost: TestHost) -> None:
    testhost.write_file("/etc/systemd/system/hello-e2e.service", HELLO_UNIT.encode())
    testhost.ssh("systemctl daemon-reload && systemctl start hello-e2e")
    shown = testhost.ssh("systemctl show -p ActiveState,SubState,LoadState,MainPID hello-e2e").stdout
    props = dict(line.split("=", 1) for line in shown.splitlines())
    assert props["ActiveState"] == "active"
    assert props["SubState"] == "running"
    assert props["LoadState"] == "loaded"
    assert int(props["MainPID"]) > 1

    def journal_has_greeting() -> bool:
        journal = testhost.ssh("journalctl -u hello-e2e --no-pager -o cat").stdout
        return f"hello from {testhost.name}" in journal

    _wait_until(journal_has_greeting, what="the unit's greeting in the journal")


@pytest.mark.e2e
def test_http_unit_inside_is_reachable_from_the_outer_machine(testhost: TestHost) -> None:
    page = f"served by {testhost.name} {uuid.uuid4().hex}\n"
    testhost.write_file("/srv/e2e-www/page.txt", page.encode())
    testhost.write_file(
        "/etc/systemd/system/e2e-http.service",
        b"[Service]\nExecStart=/usr/bin/python3 -m http.server 8080 --bind 0.0.0.0 --directory /srv/e2e-www\n",
    )
    testhost.ssh("systemctl daemon-reload && systemctl start e2e-http")
    no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def fetched() -> str | None:
        try:
            with no_proxy.open(f"http://{testhost.ip}:8080/page.txt", timeout=2) as response:
                return str(response.read().decode())
        except OSError:
            return None

    _wait_until(lambda: fetched() is not None, what="the http unit to answer")
    assert fetched() == page


# --- isolation -------------------------------------------------------------------------------


@pytest.mark.e2e
def test_a_file_written_in_one_host_stays_in_that_host(testhost_factory: Factory) -> None:
    one, other = testhost_factory(2)
    marker = f"/etc/specops-e2e-marker-{uuid.uuid4().hex}"
    one.ssh(f"echo written-in-{one.name} > {marker}")
    assert one.read_file(marker) == f"written-in-{one.name}\n".encode()
    assert not Path(marker).exists(), "the write reached the outer machine"
    assert other.exec(["test", "-e", marker], check=False).returncode == 1
    assert (one.state_dir / "upper" / marker.lstrip("/")).exists(), "the write is not in one's upper layer"
    assert other.ssh("hostname").stdout.strip() == other.name
    assert socket.gethostname() not in {one.name, other.name}


@pytest.mark.e2e
def test_peered_hosts_reach_each_other_and_nothing_else(testhost_factory: Factory) -> None:
    rank0, rank1, stranger = testhost_factory(3)
    peer([rank0, rank1])

    def connects(source: TestHost, address: str) -> bool:
        probe = f"timeout 5 bash -c 'echo > /dev/tcp/{address}/22'"
        return source.exec(["sh", "-c", probe], check=False).returncode == 0

    assert connects(rank0, rank1.ip) and connects(rank1, rank0.ip)
    assert not connects(rank0, stranger.ip) and not connects(stranger, rank0.ip)
    assert Path("/proc/sys/net/ipv4/conf/all/forwarding").read_text().strip() == "0"


@pytest.fixture
def outer_tree() -> Iterator[Path]:
    """A small tree on the outer machine, like the hosts' shared venv under /var/cache."""
    tree = Path("/var/tmp") / f"specops-e2e-outer-{uuid.uuid4().hex}"
    (tree / "lib").mkdir(parents=True)
    (tree / "lib" / "libfake.so").write_bytes(b"original lib")
    (tree / "VERSION").write_text("1.0\n")
    try:
        yield tree
    finally:
        for path in sorted(tree.rglob("*"), key=lambda p: -len(p.parts)):
            path.rmdir() if path.is_dir() else path.unlink()
        tree.rmdir()


@pytest.mark.e2e
def test_outer_files_are_visible_and_breaking_them_inside_stays_local(
    outer_tree: Path, testhost_factory: Factory
) -> None:
    broken, healthy = testhost_factory(2)
    assert broken.read_file(f"{outer_tree}/VERSION") == b"1.0\n"
    broken.exec(["rm", f"{outer_tree}/lib/libfake.so"])
    broken.write_file(f"{outer_tree}/VERSION", b"2.0-drifted\n")
    assert broken.exec(["test", "-e", f"{outer_tree}/lib/libfake.so"], check=False).returncode == 1
    assert broken.read_file(f"{outer_tree}/VERSION") == b"2.0-drifted\n"
    assert healthy.read_file(f"{outer_tree}/lib/libfake.so") == b"original lib"
    assert healthy.read_file(f"{outer_tree}/VERSION") == b"1.0\n"
    assert (outer_tree / "lib" / "libfake.so").read_bytes() == b"original lib"
    assert (outer_tree / "VERSION").read_text() == "1.0\n"


@pytest.mark.e2e
def test_outer_ssh_host_keys_are_hidden_inside(testhost: TestHost) -> None:
    keys = testhost.ssh("ls /etc/ssh/ | grep ssh_host_").stdout.split()
    assert keys == ["ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"]
    inner_pub = testhost.read_file("/etc/ssh/ssh_host_ed25519_key.pub").split()[:2]
    assert testhost.known_hosts_path.read_bytes().split()[1:3] == inner_pub


# --- fleet and teardown ----------------------------------------------------------------------


@pytest.mark.e2e
def test_eight_hosts_start_and_stop(testhost_factory: Factory) -> None:
    began = time.monotonic()
    hosts = testhost_factory(8)
    started = time.monotonic() - began
    assert sorted(h.ssh("hostname").stdout.strip() for h in hosts) == sorted(h.name for h in hosts)
    assert len({h.ip for h in hosts}) == 8
    records = [(HostRecord.load(h.state_dir), h.state_dir) for h in hosts]
    began = time.monotonic()
    for host in hosts:
        stop_host(host)
    stopped = time.monotonic() - began
    print(f"\n[testhost] 8 hosts: start (parallel) {started:.2f}s, stop (one by one) {stopped:.2f}s")
    assert_no_leftovers([(record, state_dir) for record, state_dir in records if record])


@pytest.mark.e2e
def test_stop_leaves_no_process_mount_link_or_cgroup(testhost_session: None) -> None:
    host = start_host()
    host.ssh("systemd-run --unit=e2e-sleeper sleep 600 && systemctl is-active e2e-sleeper")
    record = HostRecord.load(host.state_dir)
    assert record is not None and record.pidns_inode is not None
    all_in_namespace = pids_in_pid_namespace(record.pidns_inode)
    assert len(all_in_namespace) >= 5  # systemd, journald, sshd, logind, sleep
    # every process of the host lives in its cgroup subtree (one that exited since the scan has no cgroup left)
    outside = [pid for pid in all_in_namespace
               if cgroup_of(pid, cgroup2_root()) is not None and not in_cgroup(pid, Path(record.cgroup))]  # fmt: skip
    assert outside == []
    began = time.monotonic()
    stop_host(host)
    print(f"\n[testhost] stop: {time.monotonic() - began:.2f}s")
    assert pids_in_pid_namespace(record.pidns_inode) == []
    assert mounts_mentioning(host.state_dir) == []
    assert not Path(f"/sys/class/net/{record.link}").exists()
    assert not Path(record.cgroup).exists()
    assert not host.state_dir.exists()
    assert host_leftovers(record, host.state_dir) == []
    stop_host(host)  # idempotent


@pytest.mark.e2e
def test_stopping_an_old_host_spares_a_newer_one_with_the_same_name(testhost_session: None) -> None:
    name = f"reuse{os.getpid() % 100000}"
    old = start_host(name)
    stop_host(old)
    new = start_host(name)
    try:
        stop_host(old)  # e.g. a late finalizer holding the old TestHost
        assert new.ssh("hostname").stdout.strip() == name
    finally:
        stop_host(new)


@pytest.mark.e2e
def test_poweroff_inside_ends_the_host_and_stop_still_cleans_up(testhost_session: None) -> None:
    host = start_host()
    record = HostRecord.load(host.state_dir)
    assert record is not None
    host.ssh("systemctl poweroff", check=False, timeout=15)
    _wait_until(lambda: not Path(f"/proc/{host.systemd_pid}").exists() or _is_zombie(host.systemd_pid),
                what="the host's PID 1 to exit")  # fmt: skip
    stop_host(host)
    assert host_leftovers(record, host.state_dir) == []


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


# --- crashed and interrupted runs ------------------------------------------------------------


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


@pytest.mark.e2e
def test_cleanup_stale_removes_the_hosts_of_a_killed_run(testhost_session: None) -> None:
    name = f"crash{os.getpid() % 10000}"
    crashed = subprocess.run(
        _python(f"""
            import os, signal
            from tests.testbed.testhost import start_host
            start_host({name!r})
            os.kill(os.getpid(), signal.SIGKILL)  # no finally, no atexit: like kill -9 / OOM
        """),
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    state_dir = base_dir() / name
    record = HostRecord.load(state_dir)
    assert record is not None
    assert [s.owner for s in list_hosts() if s.name == name] == [f"pid {record.owner_pid} (gone)"]
    with pytest.raises(LeftoverError):
        assert_no_leftovers([(record, state_dir)])  # it is really still there
    assert f"host {name}" in cleanup_stale()
    assert host_leftovers(record, state_dir) == []


@pytest.mark.e2e
def test_cleanup_stale_removes_orphaned_cgroups_and_links(testhost_session: None) -> None:
    cgroup = cgroup2_root() / f"{CGROUP_PREFIX}orphan{os.getpid() % 100000}"
    link = "stho253"
    assert not Path(f"/sys/class/net/{link}").exists(), "index 253 is in use; cannot fake an orphan"
    cgroup.mkdir()
    subprocess.run(["ip", "link", "add", link, "type", "veth", "peer", "name", "sthi253"], check=True)
    sleeper = subprocess.Popen(
        ["sh", "-c", 'echo $$ > "$1/cgroup.procs" && exec sleep 600', "sh", str(cgroup)], start_new_session=True
    )
    try:
        _wait_until(lambda: str(sleeper.pid) in (cgroup / "cgroup.procs").read_text(), what="the orphan's process")
        cleanup_stale()
        assert sleeper.wait(timeout=10) == -signal.SIGKILL
        assert not cgroup.exists()
        assert not Path(f"/sys/class/net/{link}").exists()
    finally:
        sleeper.kill()
        sleeper.wait()
        subprocess.run(["ip", "link", "del", link], capture_output=True)
        if cgroup.exists():
            cgroup.rmdir()


INTERRUPTED_TEST = """
import time

def test_waits(testhost):
    print("READY", testhost.state_dir, flush=True)
    time.sleep(120)
"""


@pytest.mark.e2e
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_pytest_run_stops_its_host(testhost_session: None, tmp_path: Path, sig: int) -> None:
    (tmp_path / "conftest.py").write_text("from tests.testbed.testhost.fixtures import *  # noqa: F403\n")
    (tmp_path / "test_interrupted.py").write_text(INTERRUPTED_TEST)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-s", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert run.stdout is not None
        ready = next((line for line in run.stdout if line.startswith("READY")), "")
        assert ready, "the inner test never got its host"
        state_dir = Path(ready.split()[1])
        record = HostRecord.load(state_dir)
        assert record is not None
        run.send_signal(sig)
        output = run.communicate(timeout=60)[0]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert "KeyboardInterrupt" in output
    assert host_leftovers(record, state_dir) == [], output


# --- skip rules (no root needed) -------------------------------------------------------------


def test_without_root_e2e_skips_locally_but_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="need root"):
        require_testhost_environment()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="must run, not skip"):
        require_testhost_environment()


# --- last: this session's hosts are all gone -------------------------------------------------


@pytest.mark.e2e
def test_zz_no_host_of_this_session_left_anything(testhost_session: None) -> None:
    assert_no_leftovers()


@pytest.mark.e2e
def test_a_stranger_in_a_recycled_pid_namespace_inode_is_not_a_leftover(testhost_session: None) -> None:
    """The kernel recycles namespace inodes at once: a torn-down host's inode may name someone else's host
    a moment later. Its processes are not ours, so the leftover check must not count them."""
    stranger = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "sleep", "60"])
    try:
        deadline = time.monotonic() + 10
        inode = None
        while inode is None and time.monotonic() < deadline:
            child = next((p for p in _children(stranger.pid)), None)
            inode = pid_namespace_inode(child) if child else None
            time.sleep(0.05)
        assert inode is not None and inode != pid_namespace_inode(os.getpid())
        gone = HostRecord(name="th-gone", index=250, owner_pid=None, owner_start=None,
                          cgroup=str(cgroup_dir("th-gone")), link="stho250", incarnation="gone", pidns_inode=inode)  # fmt: skip
        assert pids_in_pid_namespace(inode) != []  # the stranger is there, in the recycled inode
        assert host_leftovers(gone, Path("/nonexistent/th-gone")) == []
    finally:
        stranger.kill()
        stranger.wait()


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []

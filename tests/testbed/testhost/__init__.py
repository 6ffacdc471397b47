"""Real SSH "test hosts" for specops's end-to-end tests: systemd 252 + OpenSSH in namespaces.

Each host has its own PID, mount, UTS, IPC, net and cgroup namespaces, the real systemd as PID 1
(with journald, logind, dbus), the real OpenSSH server as `ssh.service` with a fresh ed25519 host
key, and root login by a generated key. Its root is an overlay: lower = the outer `/`, upper =
STATE/upper, so nothing it writes reaches the machine's own files, while everything installed on
the outer machine (e.g. a venv under /var/cache/specops-testbed/) is visible at the same path and
can be changed or broken inside one host without touching the others. Network: a veth pair on its
own /30, outer 10.200.N.1 <-> inner 10.200.N.2 (no route anywhere else; `peering.peer([a, b])` routes
peered hosts to each other, as a multi-node engine's ranks need). Needs root on Linux.

    from tests.testbed.testhost import TestHost, start_host, stop_host, cleanup_stale

    host = start_host(name="th1", index=1)   # returns once strict-host-key `ssh` works (~1 s)
    host.name, host.index, host.ip            # "th1", 1, "10.200.1.2"
    host.outer_ip                             # "10.200.1.1" (the outer machine, seen from the host)
    host.key_path, host.known_hosts_path      # client private key; one known_hosts line for host.ip
    host.systemd_pid, host.state_dir          # outer PID of its PID 1; Path of its state dir
    host.exec(["systemctl", "is-active", "ssh"], input=None, check=True, timeout=60)
        # -> CompletedProcess[bytes]; nsenter into all its namespaces, clean root env, no ssh
    host.ssh("systemctl is-system-running", check=True, timeout=60)
        # -> CompletedProcess[str]; the real `ssh` client, strict known_hosts, BatchMode
    host.write_file("/etc/foo.conf", b"data", mode=0o644)   # inside the host, parents created
    host.read_file("/etc/foo.conf")                          # -> bytes
    host.ssh_config_block("llm-one")  # "Host llm-one" block for ~/.ssh/config (specops reaches it)
    host.reboot(clean=True)  # boot again on the same disk, address and keys (clean=False: a power cut);
        # new boot id, fresh /run and /tmp, the units enabled inside for multi-user.target started (reboot.py)
    stop_host(host)     # or stop_host("th1"); idempotent; raises LeftoverError if anything remains
    cleanup_stale()     # remove hosts whose starting process is gone (crashed/killed runs)
    assert_no_leftovers()  # every host this process started is gone (processes, mounts, links...)

`start_host()` without arguments picks the lowest free index and names the host `th<index>`.
State dirs live in /tmp/specops-testhosts/NAME/ (env SPECOPS_TESTHOST_DIR); the hosts' own /tmp
is a tmpfs, so they cannot see it. pytest fixtures: `tests.testbed.testhost.fixtures`. By hand:
`python -m tests.testbed.testhost up NAME --index N | down NAME | list | cleanup [--all]`.

Caveats: not a security boundary (root inside is real root, no user namespace); no cgroup
resource controllers on a cgroup-hybrid VM (MemoryMax= etc. are accepted, not enforced);
`reboot`/`poweroff` inside end the host (`host.reboot()` is the reboot that comes back); no time namespace (CAP_SYS_TIME dropped).
"""

from tests.testbed.testhost.cleanup import cleanup_stale, list_hosts
from tests.testbed.testhost.host import TestHost
from tests.testbed.testhost.leftovers import LeftoverError, assert_no_leftovers
from tests.testbed.testhost.lifecycle import TestHostError, start_host, stop_host

__all__ = [
    "LeftoverError",
    "TestHost",
    "TestHostError",
    "assert_no_leftovers",
    "cleanup_stale",
    "list_hosts",
    "start_host",
    "stop_host",
]

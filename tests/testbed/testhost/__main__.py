"""Start and stop test hosts by hand (as root):

    python -m tests.testbed.testhost up NAME --index N   # prints IP, key, known_hosts, ssh line
    python -m tests.testbed.testhost down NAME
    python -m tests.testbed.testhost list
    python -m tests.testbed.testhost cleanup [--all]     # --all: also live and hand-started hosts

Hosts started here are marked "manual": a test session's stale cleanup leaves them alone.
"""

from __future__ import annotations

import argparse
import sys
import time

from tests.testbed.testhost.cleanup import cleanup_stale, list_hosts
from tests.testbed.testhost.lifecycle import start_host, stop_host


def _up(args: argparse.Namespace) -> int:
    began = time.monotonic()
    host = start_host(args.name, args.index, timeout=args.timeout, manual=True)
    print(f"NAME={host.name}")
    print(f"IP={host.ip}")
    print(f"OUTER_IP={host.outer_ip}")
    print(f"KEY={host.key_path}")
    print(f"KNOWN_HOSTS={host.known_hosts_path}")
    print(f"SYSTEMD_PID={host.systemd_pid}")
    print(f"STATE_DIR={host.state_dir}")
    print(f"UP_SECONDS={time.monotonic() - began:.2f}")
    print(f"# log in:   {host.login_command()}")
    print(f"# no ssh:   nsenter -t {host.systemd_pid} -a -r -w systemctl status")
    print(f"# stop:     python -m tests.testbed.testhost down {host.name}")
    return 0


def _down(args: argparse.Namespace) -> int:
    began = time.monotonic()
    stop_host(args.name)
    print(f"DOWN_SECONDS={time.monotonic() - began:.2f}")
    return 0


def _list(args: argparse.Namespace) -> int:
    print(f"{'NAME':<22}{'INDEX':>6}  {'IP':<14}{'PID 1':<9}OWNER")
    for status in list_hosts():
        ip = f"10.200.{status.index}.2" if status.index else "-"
        print(
            f"{status.name:<22}{status.index or '-':>6}  {ip:<14}{'running' if status.running else 'down':<9}"
            f"{status.owner}"
        )
    return 0


def _cleanup(args: argparse.Namespace) -> int:
    removed = cleanup_stale(include_live=args.all)
    print("\n".join(f"removed {item}" for item in removed) or "nothing to remove")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.testbed.testhost", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start one host and print how to reach it")
    up.add_argument("name")
    up.add_argument("--index", type=int, default=None, help="1-254: 10.200.INDEX.2 (default: first free)")
    up.add_argument("--timeout", type=float, default=60, help="seconds to wait for ssh")
    up.set_defaults(run=_up)
    down = sub.add_parser("down", help="stop a host and check nothing is left")
    down.add_argument("name")
    down.set_defaults(run=_down)
    sub.add_parser("list", help="hosts of this harness on this machine").set_defaults(run=_list)
    cleanup = sub.add_parser("cleanup", help="remove leftovers of crashed runs")
    cleanup.add_argument("--all", action="store_true", help="also stop live and hand-started hosts")
    cleanup.set_defaults(run=_cleanup)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except (RuntimeError, ValueError, PermissionError, AssertionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""The checks behind specops.toml's constrained values (specops/config/fields.py wraps each for pydantic), as
plain functions without pydantic: a remembered connection plan (specops/cli/early/plan.py) is checked by the
same rules before anything connects, before pydantic has loaded.

Each returns the value (possibly normalised) or raises ValueError saying what is wrong and how to fix it.
"""

from __future__ import annotations

import ipaddress
import re

# C0 controls, DEL, C1 controls (U+0085 NEL among them) and the Unicode line and paragraph separators: each is
# a line break to something (Python's splitlines, an editor, a terminal) or a terminal command.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_PATH = re.compile(r"/[A-Za-z0-9_.+@=,:/-]*")
_HF_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
_SSH_TARGET = re.compile(
    r"(?:[A-Za-z0-9_][A-Za-z0-9_.-]*@)?(?:[A-Za-z0-9][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?"
)
MAX_PATH = 4096  # PATH_MAX on Linux
# Units a deploy must never overwrite or restart: the ones that keep a host reachable and running.
SYSTEM_UNITS = frozenset(
    {
        "ssh", "sshd", "dbus", "dbus-broker", "cron", "crond", "rsyslog", "syslog", "networking", "network",
        "NetworkManager", "polkit", "udev", "getty", "serial-getty", "user", "init", "nvidia-persistenced",
        "nvidia-fabricmanager", "docker", "containerd", "kubelet", "chronyd", "chrony", "ntp", "auditd",
    }
)  # fmt: skip
SYSTEM_UNIT_PREFIXES = ("systemd-", "getty@", "user@", "sys-", "dev-")
_GPU_LIST = re.compile(r"[0-9]{1,3}(?:,[0-9]{1,3})*")
# systemd's strict user/group name rule (also what useradd accepts by default): no digits-only names (a UID),
# no '$', '@', '.', ':' or spaces, at most 31 characters
_POSIX_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,30}")


def no_control(value: str) -> str:
    match = _CONTROL.search(value)
    if match:
        raise ValueError(
            f"contains a control character ({match.group()!r}); newlines, NUL and other control "
            "characters could inject into a shell command or a unit file"
        )
    return value


def valid_name(value: str) -> str:
    no_control(value)
    if not _NAME.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a valid name: use letters, digits, '.', '_' and '-', starting with a letter "
            "or digit, at most 64 characters"
        )
    return value


def service_name(value: str) -> str:
    valid_name(value)
    if value.endswith(".service"):
        raise ValueError(f"{value!r}: give the unit name without '.service'")
    if value in SYSTEM_UNITS or value.startswith(SYSTEM_UNIT_PREFIXES):
        raise ValueError(
            f"{value!r} is a system service: a deploy would overwrite and restart it (for 'ssh', the host "
            "would drop off the network). Name the engine's own unit, e.g. 'sglang'"
        )
    return value


def abs_path(value: str) -> str:
    no_control(value)
    if len(value) > MAX_PATH:
        raise ValueError(f"a path of {len(value)} characters is longer than any host accepts ({MAX_PATH})")
    if not _PATH.fullmatch(value):
        raise ValueError(
            f"{value!r} is not an absolute path specops can quote safely: it must start with '/' and use only "
            "letters, digits and . _ + @ = , : / -"
        )
    if "/../" in value + "/" or value.endswith("/.."):
        raise ValueError(f"{value!r} contains '..'; give the real path")
    return value


def local_path(value: str) -> str:
    """A path on THIS machine (a build, a patch): relative to specops.toml's folder, or absolute, or `~/...`."""
    no_control(value)
    if not value.strip():
        raise ValueError("an empty path; name a file or folder (relative to specops.toml's folder, or absolute)")
    if len(value) > MAX_PATH:
        raise ValueError(f"a path of {len(value)} characters is longer than this machine accepts ({MAX_PATH})")
    return value


def model_ref(value: str) -> str:
    if value.startswith("/"):
        return abs_path(value)
    no_control(value)
    if not _HF_REPO.fullmatch(value):
        raise ValueError(f"{value!r} is neither an absolute path nor a Hugging Face repo id like 'org/name'")
    return value


def env_name(value: str) -> str:
    no_control(value)
    if not _ENV_NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid environment variable name (letters, digits, '_')")
    return value


def ssh_target(value: str) -> str:
    no_control(value)
    if value.startswith("-"):
        raise ValueError(f"{value!r} starts with '-' and would be read as an ssh option")
    if not _SSH_TARGET.fullmatch(value):
        raise ValueError(f"{value!r} is not an ssh alias or user@host[:port]")
    port = value.rsplit("]", 1)[-1].rpartition(":")[2] if ":" in value.rsplit("]", 1)[-1] else None
    if port is not None and not 1 <= int(port) <= 65535:
        raise ValueError(f"{value!r}: port {int(port)} is outside 1-65535")
    return value


def jump_hosts(value: str) -> str:
    """ProxyJump's syntax: `none`, or hops `[user@]host[:port]` (aliases of ~/.ssh/config) separated by commas."""
    if value.strip().lower() == "none":
        return "none"
    hops = [hop.strip().removeprefix("ssh://") for hop in value.split(",")]
    for hop in hops:
        ssh_target(hop)
    return ",".join(hops)


def gpu_list(value: str) -> str:
    if not _GPU_LIST.fullmatch(value):
        raise ValueError(f"{value!r} is not a GPU index list like '0' or '0,1,2,3'")
    indexes = value.split(",")
    repeated = sorted({index for index in indexes if indexes.count(index) > 1}, key=int)
    if repeated:
        raise ValueError(f"{value!r} lists GPU {', '.join(repeated)} more than once")
    return value


def listen_address(value: str) -> str:
    """--host must be an address: a name or "" would make SGLang bind where specops does not look."""
    no_control(value)
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(f"{value!r} is not an IP address (e.g. 127.0.0.1, 0.0.0.0 or ::1)") from None


def posix_name(value: str) -> str:
    """A user or group name as it goes into User=/Group=/SupplementaryGroups=, `getent` and `sudo -u NAME`: never
    something sudo reads as an option (`-s`), a uid (`#0`) or a group (`%wheel`)."""
    no_control(value)
    if not _POSIX_NAME.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a user or group name: use letters, digits, '_' and '-', starting with a letter or "
            "'_', at most 31 characters"
        )
    return value


# a DNS host name (RFC 1123 labels): what other ranks of a multi-node engine dial to reach rank 0
_HOSTNAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)
# a network interface name, or NCCL's list syntax: '^' excludes, '=' matches exactly, ',' separates
_IFACE = re.compile(r"[=^]?[A-Za-z0-9_.:-]{1,15}(?:,[A-Za-z0-9_.:-]{1,15})*")


def dist_address(value: str) -> str:
    """--dist-init-addr's host part: an IP address or a DNS name, never something a shell or unit reads."""
    no_control(value)
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if not _HOSTNAME.fullmatch(value):
        raise ValueError(f"{value!r} is neither an IP address nor a host name like 'ds-a.cluster.local'")
    return value


def interface_names(value: str) -> str:
    """NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME: interface names (NCCL's '^' and '=' prefixes allowed)."""
    no_control(value)
    if not _IFACE.fullmatch(value):
        raise ValueError(f"{value!r} is not an interface name or list like 'eth0', 'ib0,ib1' or '^docker'")
    return value

"""Pure builders for stopping the engine before a restart: the systemctl words and the two host-side scripts
(what still runs in the unit's cgroup or on its GPUs; stop proven orphans). No I/O here.

Why `stop --no-block`: with KillMode=mixed systemd sends SIGTERM to the engine's main process only, and SGLang
then drains (refuses new requests, finishes the running ones, exits). specops watches the drain through
/metrics while systemd waits, and ends it with SIGKILL when the profile's drain budget runs out.
"""

from __future__ import annotations

from collections.abc import Sequence

ACTIVE_STATES = ("active", "activating", "deactivating", "reloading")  # something of the engine still runs

# $1 = the unit's name. Sections: @gpus (index, uuid, MiB used), @apps (pid, MiB, gpu uuid) from nvidia-smi,
# @unit (pids whose cgroup is the unit's), then one @proc block per pid of either list: its stat line (ppid,
# start time), exe, cwd, cgroup and command line. POSIX sh and coreutils only; no nvidia-smi: @nogpu.
INSPECT_SCRIPT = r"""
unit=$1
if command -v nvidia-smi >/dev/null 2>&1; then
  echo @gpus
  nvidia-smi --query-gpu=index,uuid,memory.used --format=csv,noheader,nounits 2>/dev/null
  echo @apps
  apps=$(nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits 2>/dev/null)
  [ -n "$apps" ] && printf '%s\n' "$apps"
else
  echo @nogpu
  apps=
fi
echo @unit
members=$(grep -l -e "/$unit\$" -e "/$unit/" /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3)
[ -n "$members" ] && printf '%s\n' "$members"
for pid in $( { printf '%s\n' "$apps" | cut -d, -f1; printf '%s\n' "$members"; } | tr -d ' ' | sort -un); do
  [ -r "/proc/$pid/stat" ] || continue
  echo "@proc $pid"
  echo "stat $(cat "/proc/$pid/stat" 2>/dev/null)"
  echo "exe $(readlink "/proc/$pid/exe" 2>/dev/null)"
  echo "cwd $(readlink "/proc/$pid/cwd" 2>/dev/null)"
  echo "cgroup $(tr '\n' ';' < "/proc/$pid/cgroup" 2>/dev/null)"
  echo "cmdline $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
done
echo @end
"""

# $1 = seconds to wait after SIGTERM; then PID:START words. A pid is signalled only while it is still the
# process that was judged (the same start time): a pid the kernel reused meanwhile is left alone.
REAP_SCRIPT = r"""
wait_s=$1; shift
same() {  # alive (a zombie is gone: it holds no memory) and still the process that was judged
  s=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null)
  [ -n "$s" ] && [ "${s%% *}" != Z ] && [ "$(printf '%s' "$s" | cut -d' ' -f20)" = "$2" ]
}
for word in "$@"; do pid=${word%%:*}; start=${word#*:}; same "$pid" "$start" && kill -TERM "$pid"; done
i=0
while [ "$i" -lt "$((wait_s * 10))" ]; do
  alive=0
  for word in "$@"; do same "${word%%:*}" "${word#*:}" && alive=1; done
  [ "$alive" = 0 ] && break
  sleep 0.1; i=$((i + 1))
done
for word in "$@"; do
  pid=${word%%:*}; start=${word#*:}
  if same "$pid" "$start"; then kill -KILL "$pid" && echo "killed $pid"; else echo "stopped $pid"; fi
done
"""
REAP_TERM_WAIT_S = 5


def state_argv(unit: str) -> list[str]:
    return ["systemctl", "show", unit, "-p", "ActiveState,SubState,MainPID"]


def stop_argv(unit: str) -> list[str]:
    """Start the stop and return at once: systemd SIGTERMs the main process (KillMode=mixed) and waits."""
    return ["systemctl", "stop", "--no-block", unit]


def stop_wait_argv(unit: str) -> list[str]:
    """After the SIGKILL: joins the running stop job and returns when systemd saw every process go."""
    return ["systemctl", "stop", unit]


def kill_argv(unit: str) -> list[str]:
    """The drain budget ran out: SIGKILL to every process of the unit's cgroup."""
    return ["systemctl", "kill", "--signal=SIGKILL", unit]


def inspect_argv(unit: str) -> list[str]:
    return ["sh", "-c", INSPECT_SCRIPT, "specops-gpus", unit]


def reap_argv(targets: Sequence[tuple[int, str]]) -> list[str]:
    """Stop these (pid, start time) processes: SIGTERM, up to REAP_TERM_WAIT_S seconds, then SIGKILL."""
    return [
        "sh",
        "-c",
        REAP_SCRIPT,
        "specops-reap",
        str(REAP_TERM_WAIT_S),
        *(f"{pid}:{start}" for pid, start in targets),
    ]

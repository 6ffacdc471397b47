"""Pure builders for stopping the engine before a restart: the systemctl words and the two host-side scripts
(what still runs in the unit's cgroup or on its GPUs; stop proven orphans). No I/O here.

Why `stop --no-block`: with KillMode=mixed systemd sends SIGTERM to the engine's main process only, and SGLang
then drains (refuses new requests, finishes the running ones, exits). specops watches the drain through
/metrics while systemd waits, and ends it with SIGKILL when the profile's drain budget runs out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

ACTIVE_STATES = ("active", "activating", "deactivating", "reloading")  # something of the engine still runs

# $1 = the unit's name, $2 = the engine's user (run_as; root when unset). Sections, one per line: @gpus (index,
# uuid, MiB used), @apps (pid, MiB, gpu uuid) from nvidia-smi, @unit (pids whose cgroup is the unit's), @engine
# (the engine user's uid, the unit's InvocationID as systemd shows it now); no nvidia-smi: @nogpu. Then
# @procs and, NUL-separated, one record per pid of either list: `@proc`, the pid, then key and value for stat,
# uid (real, effective, saved, fs), exe, cwd, cgroup, cmdline, invocation (INVOCATION_ID from its environment,
# 32 hex digits or empty) and run (`last`: the unit's current InvocationID; `journal`: systemd (PID 1) logged
# that invocation for this unit; empty: neither); `@end`. Why NUL: no value can hold one (argv's own NULs become
# spaces), so nothing a process puts in its argv, cwd or name can read as another process's record.
# POSIX sh, coreutils, GNU sed.
# The two nvidia-smi queries run side by side (each can take a second on a driver without persistence mode): the
# GPUs' lines go straight to stdout (fd 3) while the command substitution collects the compute apps.
INSPECT_SCRIPT = r"""
unit=$1; user=${2:-root}
if command -v nvidia-smi >/dev/null 2>&1; then
  exec 3>&1
  echo @gpus
  apps=$( { nvidia-smi --query-gpu=index,uuid,memory.used --format=csv,noheader,nounits 2>/dev/null >&3 & }
          nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits 2>/dev/null
          wait )
  echo @apps
  [ -n "$apps" ] && printf '%s\n' "$apps"
else
  echo @nogpu
  apps=
fi
echo @unit
members=$(grep -l -e "/$unit\$" -e "/$unit/" /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3)
[ -n "$members" ] && printf '%s\n' "$members"
hexid() {  # $1 if it is an invocation id (32 hex digits), else nothing
  case $1 in *[!0-9a-f]*) return ;; esac
  [ "${#1}" -eq 32 ] && printf '%s' "$1"
}
now=$(hexid "$(systemctl show -p InvocationID --value "$unit" 2>/dev/null)")
echo @engine
echo "uid $(id -u "$user" 2>/dev/null)"
echo "invocation $now"
echo @procs
for pid in $( { printf '%s\n' "$apps" | cut -d, -f1; printf '%s\n' "$members"; } | tr -d ' ' | sort -un); do
  [ -r "/proc/$pid/stat" ] || continue
  inv=$(hexid "$(sed -zn '/^INVOCATION_ID=/{s///p;q}' "/proc/$pid/environ" 2>/dev/null | tr -d '\0')")
  run=
  if [ -z "$inv" ]; then :
  elif [ "$inv" = "$now" ]; then run=last
  elif journalctl -q -n 1 -o cat _PID=1 "UNIT=$unit" "INVOCATION_ID=$inv" 2>/dev/null | grep -q .; then run=journal
  fi
  printf '@proc\0%s\0stat\0' "$pid"
  tr -d '\0' < "/proc/$pid/stat" 2>/dev/null
  printf '\0uid\0%s\0exe\0' "$(sed -n 's/^Uid:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null | tr '\t' ' ')"
  readlink -z "/proc/$pid/exe" 2>/dev/null || printf '\0'
  printf 'cwd\0'
  readlink -z "/proc/$pid/cwd" 2>/dev/null || printf '\0'
  printf 'cgroup\0'
  tr '\0\n' ' ;' < "/proc/$pid/cgroup" 2>/dev/null
  printf '\0cmdline\0'
  tr '\0\n' '  ' < "/proc/$pid/cmdline" 2>/dev/null
  printf '\0invocation\0%s\0run\0%s\0' "$inv" "$run"
done
printf '@end\0'
"""

# $1 = seconds to wait after SIGTERM; then PID:START:INVOCATION words. A pid is signalled only while it is still
# the process that was judged: the same start time (a pid the kernel reused meanwhile is left alone) and the
# same INVOCATION_ID of the unit in its environment.
REAP_SCRIPT = r"""
wait_s=$1; shift
same() {  # alive (a zombie is gone: it holds no memory) and still the process that was judged
  pid=${1%%:*}; rest=${1#*:}; start=${rest%%:*}; inv=${rest#*:}
  s=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null)
  [ -n "$s" ] && [ "${s%% *}" != Z ] && [ "$(printf '%s' "$s" | cut -d' ' -f20)" = "$start" ] &&
    [ "$(sed -zn '/^INVOCATION_ID=/{s///p;q}' "/proc/$pid/environ" 2>/dev/null | tr -d '\0')" = "$inv" ]
}
for word in "$@"; do same "$word" && kill -TERM "${word%%:*}"; done
i=0
while [ "$i" -lt "$((wait_s * 10))" ]; do
  alive=0
  for word in "$@"; do same "$word" && alive=1; done
  [ "$alive" = 0 ] && break
  sleep 0.1; i=$((i + 1))
done
for word in "$@"; do
  pid=${word%%:*}
  if same "$word"; then kill -KILL "$pid" && echo "killed $pid"; else echo "stopped $pid"; fi
done
"""
REAP_TERM_WAIT_S = 5
INVOCATION_ID = re.compile(r"[0-9a-f]{32}")  # systemd's id of one run of a unit, as INVOCATION_ID= holds it


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


def inspect_argv(unit: str, run_as: str | None = None) -> list[str]:
    """`run_as`: the engine's user (None: root); an orphan must be that user's process."""
    return ["sh", "-c", INSPECT_SCRIPT, "specops-gpus", unit, run_as or "root"]


def reap_argv(targets: Sequence[tuple[int, str, str]]) -> list[str]:
    """Stop these (pid, start time, INVOCATION_ID) processes: SIGTERM, up to REAP_TERM_WAIT_S seconds, then
    SIGKILL. Each value is checked to be digits or an invocation id: nothing else can reach the script's words."""
    return ["sh", "-c", REAP_SCRIPT, "specops-reap", str(REAP_TERM_WAIT_S), *reap_words(targets)]


def reap_words(targets: Sequence[tuple[int, str, str]]) -> list[str]:
    """The reap's process words `PID:START:INVOCATION_ID`, each checked (what fills a planned reap's slot)."""
    for pid, start, invocation in targets:
        if pid <= 1 or not start.isdigit() or not INVOCATION_ID.fullmatch(invocation):
            raise ValueError(f"not a process to reap: pid {pid}, start {start!r}, invocation {invocation!r}")
    return [f"{pid}:{start}:{invocation}" for pid, start, invocation in targets]

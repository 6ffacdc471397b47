"""Pure builders for the rollback guard: a transient systemd timer on the host that rolls back if the deploying
specops dies (specops/ops/guard.py arms and disarms it). Here so that a deploy's plan shows the same commands."""

from __future__ import annotations

from dataclasses import dataclass

from specops.config.inventory import HostSpec

GUARD_INTERVAL_S = 15
WATCH_INTERVAL_S = 5  # between two probes of the watch (less when the probe timeout is shorter)
WATCH_SPARE_S = 1200  # RuntimeMaxSec= beyond the window: the last probe, and a rollback's restart (up to 600 s)


# The disarm's steps (disarm_argvs): $1 the watch's stop file, $2 the guard's state, then the units
DISARM_SCRIPT = """stop=$1 state=$2; shift 2
touch -- "$stop"
systemctl stop "$@"
systemctl reset-failed "$@"
rm -f -- "$state"
"""


GUARD_HEADER = "# specops rollback guard, schema "  # the guard script's first line, then its schema number
TOO_NEW_MARK = "too-new: "  # what the arming prints, before that first line, when a newer specops armed the guard
ARM_FILES = 3  # the arming's stdin: a line with the sizes of the guard's script, state and notify file, then them
DISARM_WORDS = 5  # the disarm's words after its name: the watch's stop file, the guard's state, its three units

# The disarm as the first step of a larger script (the arming, the hand-over): its DISARM_WORDS words first, each
# of its steps whatever it exits with, then the rest of the words are the caller's.
DISARM_FIRST = f"""disarm() {{
{DISARM_SCRIPT}}}
disarm "$1" "$2" "$3" "$4" "$5"; shift {DISARM_WORDS}
"""

# The arming (arm_argv), one round trip: $1 the guard script, $2 the notify file, $3 the newest guard schema this
# specops reads, then the disarm's DISARM_WORDS words, then the timer's command. A guard script of a newer schema
# is left alone (its first line printed after TOO_NEW_MARK, exit 5, nothing changed); else the disarm (each step
# whatever it exits with), then the three files, each written atomically from stdin (its size checked: a cut
# stdin installs nothing), then the timer is started; the first write that fails stops the arming there.
ARM_SCRIPT = f"""script=$1 notify=$2 known=$3; shift 3
first=$(head -n 1 -- "$script" 2>/dev/null) && case $first in
"{GUARD_HEADER}"*) n=${{first#"{GUARD_HEADER}"}}
  case $n in ''|*[!0-9]*) ;; *) [ "$n" -le "$known" ] || {{ printf '{TOO_NEW_MARK}%s\\n' "$first"; exit 5; }} ;; esac
esac
{DISARM_FIRST}umask 077
tmp=""
trap '[ -z "$tmp" ] || rm -f -- "$tmp"' EXIT
IFS=' ' read -r size_script size_state size_notify || {{ echo "specops-arm: no sizes on stdin" >&2; exit 1; }}
put() {{
  tmp="$1.specops-tmp.$$"
  head -c "$2" > "$tmp" && [ "$(wc -c < "$tmp")" -eq "$2" ] && chmod 600 "$tmp" && mv -f "$tmp" "$1" && return 0
  echo "specops-arm: could not write $1" >&2; exit 1
}}
put "$script" "$size_script"; put "$state" "$size_state"; put "$notify" "$size_notify"
exec "$@"
"""


# The hand-over to the watch (handover_argv), one round trip: the disarm's DISARM_WORDS words (each of its steps
# whatever it exits with), then the watch's own command, whose exit is the hand-over's.
HANDOVER_SCRIPT = f"""{DISARM_FIRST}exec "$@"
"""


def guard_unit(spec: HostSpec) -> str:
    return f"specops-guard-{spec.service}"


def guard_script_path(spec: HostSpec) -> str:
    return f"{spec.service_dir}/.specops-guard.py"


def guard_state_path(spec: HostSpec) -> str:
    """The guard's state: the plan's rollback target, written when the guard is armed, then what it did."""
    return f"{spec.service_dir}/.specops-guard.json"  # GUARD_STATE_FILE of the host-side hostdata.py


def notify_path(spec: HostSpec) -> str:
    """The webhook the guard and its watch post their rollbacks to (0600: the URL may hold a credential)."""
    return f"{spec.service_dir}/.specops-notify.json"  # NOTIFY_FILE of the host-side hostdata.py


def watch_stop_path(spec: HostSpec) -> str:
    """Written by the disarm before it stops the watch: the watch then records "stopped" (a deploy replaced it),
    and any other stop (a shutdown, a reboot, `systemctl stop`) as cut short."""
    return f"{spec.service_dir}/.specops-watch-stop"  # WATCH_STOP_FILE of the host-side script.py


def arm_argv(spec: HostSpec, lock_dir: str, stale_after_s: float, known_schema: int) -> list[str]:
    """Arm the guard in one command (ARM_SCRIPT): unless a newer specops armed it (`known_schema`: the newest
    this one reads), disarm a leftover one, write the script, its state and the notify file (all 0600, from
    stdin: the notify file may hold the webhook's credential), and start the timer."""
    return ["sh", "-c", ARM_SCRIPT, "specops-arm", guard_script_path(spec), notify_path(spec), str(known_schema),
            *_disarm_words(spec), *timer_argv(spec, lock_dir, stale_after_s)]  # fmt: skip


def timer_argv(spec: HostSpec, lock_dir: str, stale_after_s: float) -> list[str]:
    """Start the timer: every GUARD_INTERVAL_S the host-side `guard` op checks the lock's heartbeat."""
    return [
        "systemd-run",
        f"--unit={guard_unit(spec)}",
        f"--on-active={GUARD_INTERVAL_S}",
        f"--on-unit-active={GUARD_INTERVAL_S}",
        "--timer-property=AccuracySec=1s",
        f"--description=specops rollback guard for {spec.unit_name}",
        spec.python,
        "-IS",  # root runs it: no site, so no .pth file of the venv runs (stdlib only)
        guard_script_path(spec),
        "guard",
        spec.service_dir,
        spec.unit_name,
        lock_dir,
        str(int(stale_after_s)),
    ]


def watch_unit(spec: HostSpec) -> str:
    return f"specops-watch-{spec.service}"


@dataclass(frozen=True)
class WatchSettings:
    """The profile's watch after "verified" (readiness.watch_*), and where the engine answers on the host."""

    window_s: int
    timeout_s: int
    failures: int
    url: str

    @property
    def interval_s(self) -> int:
        return max(1, min(WATCH_INTERVAL_S, self.timeout_s))


def watch_argv(spec: HostSpec, release_id: str, lock_dir: str, watch: WatchSettings, rollback_to: str) -> list[str]:
    """Start the watch (remote/release/watch.py) as a transient service; the deploy does not wait for it. A failed
    watch rolls back to `rollback_to`, the plan's target (the release that served before this deploy)."""
    return [
        "systemd-run",
        f"--unit={watch_unit(spec)}",
        f"--description=specops watch of {release_id} for {spec.unit_name}",
        f"--property=RuntimeMaxSec={watch.window_s + WATCH_SPARE_S}",
        "--collect",
        spec.python,
        "-IS",  # root runs it: no site, so no .pth file of the venv runs (stdlib only)
        guard_script_path(spec),
        "watch",
        spec.service_dir,
        spec.unit_name,
        release_id,
        str(watch.window_s),
        watch.url,
        lock_dir,
        str(watch.timeout_s),
        str(watch.failures),
        str(watch.interval_s),
        rollback_to,
        *([spec.gpus] if spec.gpus else []),  # the engine's GPUs: another GPU's fault does not blame the host
    ]


def handover_argv(spec: HostSpec, release_id: str, lock_dir: str, watch: WatchSettings, rollback_to: str) -> list[str]:
    """Disarm the guard and start its watch (watch_argv) in one command (HANDOVER_SCRIPT)."""
    return ["sh", "-c", HANDOVER_SCRIPT, "specops-watch", *_disarm_words(spec),
            *watch_argv(spec, release_id, lock_dir, watch, rollback_to)]  # fmt: skip


def _disarm_words(spec: HostSpec) -> list[str]:
    """The disarm's words after its name (the arming and the hand-over disarm with the same ones)."""
    (disarm,) = disarm_argvs(spec)
    words = disarm[4:]
    assert len(words) == DISARM_WORDS, words
    return words


def disarm_argvs(spec: HostSpec) -> list[list[str]]:
    """Stop the timer, a guard run still exiting and a running watch, then forget their failed runs (they exit
    non-zero when there is no guard: not an error). The caller holds the lock, and a guard rolls back only
    under it, so the guard run stopped here is at most a check, or one that has just let the lock go: left
    running, it would make the next `systemd-run --unit=` fail ("already loaded"). Its state goes too: no
    planned target is shown, or used, once no guard runs. The watch's stop is announced first (watch_stop_path).
    One command, so one round trip: its four steps run in this order whatever each one exits with."""
    unit, watch = guard_unit(spec), watch_unit(spec)
    units = [f"{unit}.timer", f"{unit}.service", f"{watch}.service"]
    return [["sh", "-c", DISARM_SCRIPT, "specops-disarm", watch_stop_path(spec), guard_state_path(spec), *units]]

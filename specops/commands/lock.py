"""Pure builders for the per-host deploy lock: the host-side script, its argv, and the parser of its answer.

The lock is a directory made with mkdir(2) (atomic: exactly one creator wins) holding `holder.json`. Every
check-then-act step (take over a stale lock, release only our own, heartbeat only while still ours) runs on
the host inside one `flock` on `<root>.guard`, so two operators can never interleave those steps; the kernel
drops that flock when the script exits or is killed, so the guard itself can never leak the way Kamal's lock
does on Ctrl-C. Staleness is judged on the HOST, so clock skew between operators' laptops cannot make a live
lock look stale, and by its boot clock (CLOCK_BOOTTIME, /proc/uptime): every heartbeat writes the boot id and
the seconds since boot beside holder.json, so a wall clock stepped back (NTP, a wrong RTC) can neither freeze a
dead lock's age at 0 nor make a live one look old. A lock without that file (or from another boot) falls back
to the wall clock: now minus holder.json's mtime.

Only POSIX sh, coreutils and util-linux `flock` are used: the lock must work before any Python is deployed.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_LOCK_ROOT = "/run/specops/lock"
HOLDER_FILE = "holder.json"
BEAT_FILE = "boot-beat"  # "<boot id> <seconds since boot>" of the last heartbeat: its age by the boot clock
GUARD_WAIT_S = 20  # the guard is held for milliseconds; waiting longer means a wedged host
GUARD_BUSY_EXIT = 75

# $1=op $2=root $3=token $4=stale_after_s [$5=dead token: acquire takes over the lock of that holder, proven
# dead by the caller, whatever its heartbeat says; compared under the guard, so a lock that changed hands
# meanwhile is never taken] ; stdin = the new holder.json (acquire/heartbeat), checked complete.
# Prints `key=value` lines, then `holder:` and the holder.json that was there (if any) as the last lines.
LOCK_SCRIPT = r"""
set -u
op=$1 root=$2 token=$3 stale=$4 dead=${5:-}
holder="$root/holder.json"
mkdir -p -- "$(dirname -- "$root")" || exit 1
input="$root.input.$$"
trap 'rm -f -- "$input"' EXIT
case $op in acquire|heartbeat)  # read all of stdin BEFORE the guard: a client that vanishes mid-send cannot stall it
  cat > "$input" && [ "$(tail -c 2 -- "$input")" = "}" ] || { echo "input=incomplete" >&2; exit 1; } ;;
esac
exec 9>>"$root.guard"
flock -w GUARD_WAIT_S 9 || { echo "guard=busy"; exit GUARD_BUSY_EXIT; }
now=$(date +%s)
boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null) && up=$(cut -d. -f1 /proc/uptime 2>/dev/null) || boot=""
beat() {  # the wall-clock time of the lock's last sign of life in $1: holder.json's mtime, or the directory's
  if [ -f "$1/holder.json" ]; then stat -c %Y -- "$1/holder.json"; else stat -c %Y -- "$1"; fi
}
age() {  # seconds since then: by the boot clock (steady when the wall clock steps) when $1/BEAT_FILE is from this
  b=$(cat -- "$1/BEAT_FILE" 2>/dev/null) || b=""  # boot, else by the wall clock
  case ${b#* } in ''|*[!0-9]*) b="" ;; esac
  if [ -n "$boot" ] && [ -n "$b" ] && [ "${b% *}" = "$boot" ]; then echo $((up - ${b#* }))
  else echo $((now - $(beat "$1"))); fi
}
show() {  # what holds the lock now (or held what we just removed: $1)
  dir=${1:-$root}
  printf 'now=%s\n' "$now"
  if [ -d "$dir" ]; then
    printf 'beat=%s\nage=%s\n' "$(beat "$dir")" "$(age "$dir")"
    echo "holder:"; cat -- "$dir/holder.json" 2>/dev/null || true
  fi
}
ours() { grep -qF "\"token\": \"$token\"" "$holder" 2>/dev/null; }
stale() { [ "$stale" -gt 0 ] && [ "$(age "$root")" -gt "$stale" ]; }
dead_holder() { [ -n "$dead" ] && grep -qF "\"token\": \"$dead\"" "$holder" 2>/dev/null; }
write_holder() {
  cp -- "$input" "$1/.holder.tmp" && mv -f -- "$1/.holder.tmp" "$1/holder.json" || return 1
  [ -z "$boot" ] || { printf '%s %s\n' "$boot" "$up" > "$1/.beat.tmp" && mv -f -- "$1/.beat.tmp" "$1/BEAT_FILE"; }
}
put_away() {  # rename first (others may mkdir at once), then delete at leisure
  away="$root.removed-$token-$$"; mv -T -- "$root" "$away" || exit 1
}
case $op in
status)
  if [ -d "$root" ]; then echo "state=held"; else echo "state=free"; fi; show ;;
acquire)
  if mkdir -- "$root" 2>/dev/null; then write_holder "$root" || { rm -rf -- "$root"; exit 1; }; echo "state=acquired"
  elif stale || dead_holder; then
    put_away; mkdir -- "$root" && write_holder "$root" || exit 1
    echo "state=taken-over"; show "$away"; rm -rf -- "$away"
  else echo "state=held"; show; fi ;;
heartbeat)
  if [ -d "$root" ] && ours; then write_holder "$root" && echo "state=beat"; else echo "state=lost"; show; fi ;;
release)
  if [ ! -d "$root" ]; then echo "state=free"; show
  elif { [ -z "$token" ] || ours; } && { [ "$stale" -eq 0 ] || stale; }; then
    put_away; echo "state=released"; show "$away"; rm -rf -- "$away"
  else echo "state=kept"; show; fi ;;
*) echo "unknown op $op" >&2; exit 2 ;;
esac
""".replace("GUARD_WAIT_S", str(GUARD_WAIT_S)).replace("GUARD_BUSY_EXIT", str(GUARD_BUSY_EXIT))
LOCK_SCRIPT = LOCK_SCRIPT.replace("BEAT_FILE", BEAT_FILE)


def lock_argv(op: str, root: str, token: str = "", stale_after_s: float = 0, dead_token: str = "") -> list[str]:
    """The command for one lock operation. `stale_after_s` > 0 makes acquire take over and release demand
    a lock whose heartbeat is older than that; `token` "" makes release match any holder (--force);
    `dead_token` makes acquire take over the lock held by that token (a holder proven dead) at once."""
    if op not in {"status", "acquire", "heartbeat", "release"}:
        raise ValueError(f"unknown lock operation {op!r}")
    if any(word and not word.isalnum() for word in (token, dead_token)):
        raise ValueError("a lock token is alphanumeric")
    if dead_token and op != "acquire":
        raise ValueError("only acquire takes over a dead holder's lock")
    argv = ["sh", "-c", LOCK_SCRIPT, "specops-lock", op, root, token, str(int(stale_after_s))]
    return [*argv, dead_token] if dead_token else argv


@dataclass(frozen=True)
class LockReply:
    """What the lock script said: the outcome word, the host's clock, and the holder it saw (raw text)."""

    state: str
    host_now: int | None
    last_beat: int | None
    holder_text: str | None
    age: int | None = None  # the host's own measure (the boot clock when it can): preferred

    @property
    def heartbeat_age_s(self) -> int | None:
        if self.age is not None:
            return max(0, self.age)
        if self.host_now is None or self.last_beat is None:
            return None
        return max(0, self.host_now - self.last_beat)


def parse_lock_reply(text: str) -> LockReply:
    """Parse the script's `key=value` lines and the trailing holder.json (absent when the lock was free)."""
    head, marker, tail = text.partition("holder:\n")
    values: dict[str, str] = {}
    for line in head.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return LockReply(
        state=values.get("state", ""),
        host_now=_int_or_none(values.get("now")),
        last_beat=_int_or_none(values.get("beat")),
        holder_text=tail.strip() if marker else None,
        age=_int_or_none(values.get("age")),
    )


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None

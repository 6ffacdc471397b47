"""The host commands of each deploy step, built with the pure builders (specops/commands/): the objects a Step holds
(the engine's read, stop and gates: specops/deploy/engine_commands.py).

Pure: nothing here talks to a host. Every step is run from these very objects: the ones fixed when planning
(the env file, the unit, the guard, the switch, the records, the watch) as they are (specops/ops/planned.py,
specops/deploy/fixed_steps.py), and the ones holding a word only the run knows (the gates' cause, the journal's
position, the compile cache's key, a dead lock holder's token, the processes a reap stops) with that slot filled
in (specops/commands/planned.py HostCommand.filled); the executors find their commands by role. With
engine_commands.py this is where a deploy calls the argv builders of specops/commands/ (tests/test_layering.py
keeps it so), and the deploy tests compare what a deploy ran with these lists (test_one_definition.py).
"""

from __future__ import annotations

from specops.commands import engine_stop
from specops.commands import release as release_cmd
from specops.commands import unit as unit_cmd
from specops.commands.boot import boot_unit
from specops.commands.cache import KEY_PLACEHOLDER, prepare_commands
from specops.commands.conversation import conversation_argv
from specops.commands.guard import (
    WatchSettings,
    arm_argv,
    disarm_argvs,
    handover_argv,
)
from specops.commands.host_files import files_argv
from specops.commands.hostdata import GUARD_SCHEMA
from specops.commands.lock import lock_argv
from specops.commands.planned import SLOTS, HostCommand, Times, put, run
from specops.commands.probe import probe_argv
from specops.config.inventory import HostSpec
from specops.config.secrets import Secret
from specops.deploy.engine_commands import journal_position_commands, readiness_commands, stop_commands
from specops.deploy.steps import Step
from specops.ops import lock, unit
from specops.ops.audit import append_argvs, host_audit_path
from specops.ops.lock import DEFAULT_HEARTBEAT_S, DEFAULT_STALE_AFTER_S, lock_root

MANIFEST = "manifest"  # a step's update of a release's manifest (HostCommand.role)
PROBE = "probe"  # the preflight's probe (specops/probe/run.py runs this very command)
CONVERSATION = "conversation"  # the lock step's command conversation (HostCommand.role)
PUSH_SESSION = "push-session"  # the lock step's push conversation
LISTING = "listing"  # the release script's list
ROLLBACK_MARKING, ROLLBACK_UNMARKED = "rollback", "rollback-unmarked"  # the release it leaves marked bad, or not
ENGINE_STATE = "engine-state"  # the unit's ActiveState (the stop's poll; what serves at the end)
HOST_FILES = "host-files"  # the read step's unit and the env file current runs with
CAUSE_PLACEHOLDER = SLOTS["cause"].mark
HOLDER = "holder.json (who, machine, pid, command, heartbeat time)"
DEAD_HOLDER = Secret(SLOTS["dead"].mark)  # the dead holder's token, known only once the lock is seen (shown ***)


def conversation_commands(spec: HostSpec) -> list[HostCommand]:
    """The deploy's one exec for commands (specops/host/conversation.py): each later `run` and `put` is a request
    on it, except the push (its own conversation, started next)."""
    argv = tuple(conversation_argv(spec.python))
    return [HostCommand(argv, kind="conversation", role=CONVERSATION,
                        stdin="one request per command below: its argv, then its stdin",
                        note="one exec for the whole deploy; a host whose python cannot run it gets one exec per "
                        "command")]  # fmt: skip


def lock_commands(token: str, lock_wait_s: float) -> list[HostCommand]:
    root = lock_root()
    waits = lock_wait_s > 0
    return [
        run(lock_argv("acquire", root, token, DEFAULT_STALE_AFTER_S), stdin=HOLDER,
            times=Times.REPEATED if waits else Times.ONCE, role=lock.ACQUIRE,
            note=f"every 2 s while another deploy holds it, up to {lock_wait_s:g} s" if waits else ""),
        run(lock_argv("acquire", root, token, DEFAULT_STALE_AFTER_S, DEAD_HOLDER), stdin=HOLDER,
            times=Times.IF_NEEDED, role=lock.TAKEOVER, note="only when the holder is a deploy on this machine that "
            "no longer runs: its lock is taken over at once"),
        run(lock_argv("heartbeat", root, token), stdin=HOLDER, times=Times.BACKGROUND, role=lock.HEARTBEAT,
            note=f"every {DEFAULT_HEARTBEAT_S:g} s until the lock is released"),
    ]  # fmt: skip


def unlock_commands(token: str) -> list[HostCommand]:
    return [run(lock_argv("release", lock_root(), token), role=lock.RELEASE)]


def push_session_commands(spec: HostSpec) -> list[HostCommand]:
    """The push conversation, started together with the command conversation (two login shells side by side)."""
    return [
        run(
            release_cmd.session_argv(spec, on_request=True),
            role=PUSH_SESSION,
            stdin="requests (the listing once the lock is held), then the push's tar (if any)",
            note="one conversation: the host's releases first; a push rides on it",
        )
    ]


def listing_commands(spec: HostSpec) -> list[HostCommand]:
    """The host's releases and `current` (a restart reads them on its command conversation)."""
    return [run(release_cmd.list_argv(spec), role=LISTING)]


def read_commands(spec: HostSpec, current: str | None) -> list[HostCommand]:
    """The installed unit, and the env file the current release runs with (read as root, compared on this
    machine, never shown): its own, else the live one (a release from before releases kept their env file).
    One request (specops/commands/host_files.py)."""
    own = release_cmd.release_env_path(spec, current) if current else ""
    argv = files_argv(spec.python, unit_cmd.unit_path(spec.unit_name), own, spec.env_file)
    note = ("the installed unit (none: a first install), and the current release's env file, else the live one "
            "(compared here, never shown)")  # fmt: skip
    return [run(argv, note=note, role=HOST_FILES)]


def preflight_commands(spec: HostSpec, candidate: str, release_id: str) -> list[HostCommand]:
    """The probe; when a check stops the deploy, the candidate's manifest records the environment fingerprint
    and the failed checks (`specops diagnose HOST --release ID` names them later)."""
    return [run(probe_argv(spec.python), stdin=f"the probe script (the doctor's facts, candidate {candidate})",
                role=PROBE),
            manifest_update(spec, release_id, '{"facts": ..., "preflight": {"passed": false, "failed": [...]}}',
                            Times.IF_NEEDED, "only when a check stops the deploy")]  # fmt: skip


def unit_commands(spec: HostSpec, release_id: str, unit_changed: bool, env_lines: int,
                  enabled: bool = False) -> list[HostCommand]:  # fmt: skip
    """The release's own env file always (it may carry a new secret; the live one is written from it when the
    release is started: restart_commands); the unit only when its text changed: verified under a scratch path
    first, then moved in and systemd reloaded. `enabled`: both units were enabled when the host was read, so
    neither is enabled again (systemd reloads itself on every enable). Each command carries its part
    (HostCommand.role): specops/ops/unit.py runs each part with these very objects."""
    boot = boot_unit(spec)
    commands = [
        put(release_cmd.release_env_path(spec, release_id), 0o600, _env_content(env_lines), role=unit.RELEASE_ENV),
        *prepare_commands(spec, KEY_PLACEHOLDER),
        run(unit_cmd.read_unit_argv(boot), note="the boot unit: it re-arms the guard after a reboot mid-deploy",
            role=unit.BOOT),
        put(unit_cmd.unit_path(boot), 0o644, "the boot unit", times=Times.IF_NEEDED, role=unit.BOOT),
    ]  # fmt: skip
    if unit_changed:
        scratch = unit_cmd.verify_path(spec.unit_name)
        commands += [
            run(unit_cmd.read_unit_argv(spec.unit_name), role=unit.UNIT),
            run(unit_cmd.show_argv(spec.unit_name, ["LoadState", "FragmentPath"]), role=unit.UNIT,
                note="a unit specops does not manage stops the deploy here: nothing is written"),
            run(unit_cmd.mkdir_argv(unit_cmd.VERIFY_DIR), role=unit.UNIT),
            put(scratch, 0o644, "the new unit", role=unit.UNIT),
            run(unit_cmd.verify_argv(spec.unit_name), note="skipped by systemd when systemd-analyze is missing",
                role=unit.UNIT),
            run(unit_cmd.remove_argv(scratch), role=unit.UNIT),
            put(unit_cmd.unit_path(spec.unit_name), 0o644, "the new unit", role=unit.UNIT),
            run(unit_cmd.show_argv(spec.unit_name, ["NeedDaemonReload"]), role=unit.UNIT),
            run(unit_cmd.daemon_reload_argv(), role=unit.UNIT),
        ]  # fmt: skip
    commands.append(_enable_command(spec.unit_name, boot, enabled))
    changes = '{"unit": ..., "env_file": ..., "profile": ..., "compile_cache": ...}'
    return [*commands, manifest_update(spec, release_id, changes)]


def _enable_command(unit_name: str, boot: str, enabled: bool) -> HostCommand:
    """Enabled already: only the reload a rewritten boot unit needs (links in place); else enable, with systemd's
    own reload: without it systemd would not know multi-user.target now wants the unit, and would unload the
    unit once stopped (its InvocationID and last run's state gone: an orphan of that run could not be told)."""
    if enabled:
        return run(
            unit_cmd.daemon_reload_argv(),
            times=Times.IF_NEEDED,
            role=unit.ENABLE,
            note="both units are enabled already; only when the boot unit was rewritten and not reloaded yet",
        )
    return run(unit_cmd.enable_argv(unit_name, boot), role=unit.ENABLE,
               note="a reboot starts the engine on `current`")  # fmt: skip


def env_commands(spec: HostSpec, env_lines: int) -> list[HostCommand]:
    return [run(unit_cmd.mkdir_argv(spec.service_dir)), put(spec.env_file, 0o600, _env_content(env_lines))]


def _env_content(env_lines: int) -> str:
    return f"the env file ({env_lines} line{'' if env_lines == 1 else 's'}; secrets not shown)"


def manifest_update(
    spec: HostSpec, release_id: str, changes: str, times: Times = Times.ONCE, note: str = ""
) -> HostCommand:
    """The release script's update-manifest: its changes (stdin) are the deploy's, known once it runs."""
    argv = release_cmd.update_manifest_argv(spec, release_id)
    return run(argv, stdin=f"the changes: {changes}", times=times, note=note, role=MANIFEST)


def guard_commands(spec: HostSpec, release_id: str, rollback_to: str, lock_dir: str = "") -> list[HostCommand]:
    """Arming the guard, one command (specops/ops/guard.py `arm` runs it): unless a newer specops armed it, the
    disarm of a leftover one, its script, state and notify file written, its timer started; `lock_dir`: the lock
    whose heartbeat it watches."""
    from specops.ops.guard import guard_script, notify_summary, state_line

    size = len(guard_script().encode("utf-8"))
    state = state_line(release_id, rollback_to)  # written as shown
    files = f"the release script ({size} bytes); the guard's state: {state}; {notify_summary()}"
    argv = arm_argv(spec, lock_dir or lock_root(), DEFAULT_STALE_AFTER_S, GUARD_SCHEMA)
    note = ("a guard armed by a newer specops is left alone (exit 5); the disarm's steps exit non-zero when no guard "
            "exists (not checked); all three files 0600")  # fmt: skip
    return [run(argv, stdin=f"a line with the three files' sizes, then {files}", note=note)]


def disarm_commands(spec: HostSpec, watched: bool = False) -> list[HostCommand]:
    """`watched`: a watch step follows, whose own command disarms first (watch_commands): this one then runs only
    when that step does not (the gates failed, or the GPUs stayed busy)."""
    note = "exits non-zero when no guard exists"
    if watched:
        return [run(argv, times=Times.IF_NEEDED, note=f"only when no watch starts (the watch's command disarms "
                    f"first); {note}") for argv in disarm_argvs(spec)]  # fmt: skip
    return [run(argv, note=note) for argv in disarm_argvs(spec)]


def watch_commands(spec: HostSpec, release_id: str, watch: WatchSettings, rollback_to: str,
                   lock_dir: str = "") -> list[HostCommand]:  # fmt: skip
    """The guard disarmed and its watch started, one command (specops/ops/guard.py `start_watch` runs it);
    `lock_dir`: the lock's folder."""
    note = ("the disarm's steps exit non-zero when no guard exists (not checked); the deploy returns; the watch "
            "runs on the host (`specops status` shows it)")  # fmt: skip
    return [run(handover_argv(spec, release_id, lock_dir or lock_root(), watch, rollback_to), note=note)]


def switch_commands(spec: HostSpec, release_id: str) -> list[HostCommand]:
    return [run(release_cmd.switch_argv(spec, release_id))]


def verified_commands(spec: HostSpec, release_id: str, protect: set[str]) -> list[HostCommand]:
    return [
        manifest_update(spec, release_id, '{"verified": true, "verified_at": ..., "gates": ..., "bad": null}'),
        run(release_cmd.prune_argv(spec, spec.keep_releases, protect)),
    ]


def failed_commands(spec: HostSpec, release_id: str) -> list[HostCommand]:
    return [manifest_update(spec, release_id, '{"verified": false, "gates": ...}')]


def rollback_commands(spec: HostSpec, target_id: str, reason: str, drain_s: int, keep_unmarked: bool = False,
                      force: bool = False, host_blamed: bool = False) -> list[HostCommand]:  # fmt: skip
    """The host-side rollback (switch, the target's recorded unit and env file, daemon-reload, restart in one
    command), then the same gates as a deploy; the restored release's gates are recorded only when they pass.
    `keep_unmarked`: the failed release is not marked bad (its deploy changed the configuration); `host_blamed`:
    it may not be either, when the journal names a fault of the host (then its own command, run instead)."""
    switch = run(release_cmd.rollback_argv(spec, target_id, reason, force, keep_unmarked),
                 times=Times.IF_NEEDED if host_blamed else Times.ONCE, role=ROLLBACK_MARKING if not keep_unmarked
                 else ROLLBACK_UNMARKED, note="unless the engine's journal names a fault of the host" if host_blamed
                 else "")  # fmt: skip
    instead = "instead, when the engine's journal names a fault of the host: nothing is marked bad"
    unmarked = [run(release_cmd.rollback_argv(spec, target_id, reason, force, keep_unmarked=True),
                    times=Times.IF_NEEDED, role=ROLLBACK_UNMARKED,
                    note=instead)] if host_blamed and not keep_unmarked else []  # fmt: skip
    return [
        *listing_commands(spec),
        *stop_commands(spec, drain_s),
        *journal_position_commands(),
        switch,
        *unmarked,
        *readiness_commands(spec),
        manifest_update(spec, target_id, '{"last_gates": ...}', Times.IF_NEEDED, "only when the restored one passes"),
    ]


def serving_step(spec: HostSpec) -> Step:
    """What serves at the end, for the summary's last line: `current` and its verified flag, and the unit's state
    (not read after a failed rollback, which already says that nothing verified serves)."""
    note = "not after a failed rollback"
    commands = (run(release_cmd.list_argv(spec), times=Times.IF_NEEDED, note=note, role=LISTING),
                run(engine_stop.state_argv(spec.unit_name), times=Times.IF_NEEDED, note=note,
                    role=ENGINE_STATE))  # fmt: skip
    return Step("serving", "read what serves now (current, verified, the engine's state) for the summary", commands)


def record_commands(spec: HostSpec) -> list[HostCommand]:
    """The audit line's append (ops/audit.py `append_on_host` runs these two)."""
    by_python, fallback = append_argvs(spec.python, host_audit_path(spec))
    entry = "the audit entry (one JSON line: who, what, outcome, phases, gates)"
    return [
        run(by_python, stdin=entry, note="on a new connection when the deploy's own one is gone"),
        run(fallback, stdin=entry, times=Times.IF_NEEDED, note=f"only when {spec.python} cannot run"),
    ]  # fmt: skip

"""`specops rollback HOST`: the operator's rollback, under the host's lock, with an audit line.

The automatic rollback runs inside a deploy, which already holds the lock and writes the audit entry; a
manual one must do both itself, so that two operators cannot roll back and deploy the same host at once and
the audit log says who put which release back.
"""

from __future__ import annotations

from specops.commands.conversation import CONVERSATION_TIMEOUT_S, conversation_argv
from specops.config.inventory import HostSpec
from specops.deploy.rollback import ProfileFor, RollbackResult, rollback_host
from specops.events import Event, Reporter
from specops.host.base import Host
from specops.host.conversation import conversation
from specops.ops import audit, lock
from specops.ops.hooks import run_hook


def manual_rollback(
    host: Host,
    spec: HostSpec,
    profile_for: ProfileFor,
    target_id: str | None,
    reporter: Reporter,
    *,
    lock_wait_s: float = 0.0,
    command: str | None = None,
    force: bool = False,
    reap: bool = False,
) -> RollbackResult:
    """Take the lock (or raise LockHeld), roll back and gate, audit the outcome, release the lock.

    `command` is what the lock's holder record shows (default: this process's command line); `force` allows a
    `target_id` marked bad. The release left is marked bad with this rollback as the reason. Its commands are
    requests on one command conversation, as a deploy's (host/conversation.py)."""
    holder = lock.LockHolder.current(command)

    def say(text: str) -> None:
        reporter.event(Event(spec.name, "lock", text))

    talk = conversation(host, conversation_argv(spec.python), lifetime_s=CONVERSATION_TIMEOUT_S)
    with talk as on_host:
        with lock.acquire(on_host, holder, wait_s=lock_wait_s, on_event=say) as held:
            result = _locked(on_host, spec, profile_for, target_id, reporter, holder.who, reap=reap, force=force)
            _audit(on_host, spec, result, force, held.takeover_note)
        _remember_environment(on_host, spec, result)  # after the lock: the next deploy need not wait for it
    return result


def _locked(host: Host, spec: HostSpec, profile_for: ProfileFor, target_id: str | None, reporter: Reporter,
            who: str, *, reap: bool, force: bool) -> RollbackResult:  # fmt: skip
    reason = f"specops rollback by {who}"
    return _bracketed(host, spec, profile_for, target_id, reporter, reason, reap=reap, force=force)


def _audit(host: Host, spec: HostSpec, result: RollbackResult, force: bool, taken_over: str) -> None:
    entry = audit.new_entry(
        "rollback",
        outcome="verified" if result.ok else "failed",
        from_release=result.from_release,
        to_release=result.to_release,
        gates=result.gates.to_json() if result.gates else {},
        message=result.summary,
        forced=force,
    )
    if result.stop is not None:
        entry["drain"] = result.stop.drain.to_json()
    if taken_over:  # a killed deploy's lock, taken over: the log says whose and why
        entry["lock_taken_over"] = taken_over
    audit.record(host, spec, entry)


def _bracketed(
    host: Host, spec: HostSpec, profile_for: ProfileFor, target_id: str | None, reporter: Reporter, reason: str,
    *, reap: bool, force: bool,
) -> RollbackResult:  # fmt: skip
    """The rollback between the host's pre_stop and post_start hooks (specops.ops.hooks), as a deploy runs them."""
    if spec.pre_stop:
        hook = run_hook("pre_stop", spec.pre_stop, host=spec.name, release=target_id, action="rollback")
        reporter.event(Event(spec.name, "pre_stop", hook.summary(), level="info" if hook.ok else "error"))
        if not hook.ok:
            return RollbackResult(False, error=f"{hook.summary()}; nothing on the host was changed")
    result = rollback_host(host, spec, profile_for, target_id, reason, reporter, reap=reap, force=force)
    if spec.post_start and result.ok:
        hook = run_hook("post_start", spec.post_start, host=spec.name, release=result.to_release, action="rollback")
        reporter.event(Event(spec.name, "post_start", hook.summary(), level="info" if hook.ok else "warn"))
    elif spec.post_start:
        reporter.event(Event(spec.name, "post_start", "post_start hook not run: no verified engine serves",
                             level="warn"))  # fmt: skip
    return result


def _remember_environment(host: Host, spec: HostSpec, result: RollbackResult) -> None:
    """What the host is made of right after the rollback, kept locally for `specops diff` and `diagnose`: when
    the release that was put back fails later, this says whether the host changed since. One probe round trip;
    a probe that fails costs the rollback nothing (the rollback's own outcome is already decided and audited)."""
    from specops.diagnose.fingerprint import fingerprint_from_facts
    from specops.diagnose.store import remember
    from specops.errors import SpecopsError
    from specops.probe.run import probe

    try:
        facts = probe(host, spec)
    except SpecopsError:
        return
    remember(spec.name, fingerprint_from_facts(facts, host=spec.name, release=result.to_release))

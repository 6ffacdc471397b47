"""The handlers of the deploy steps whose commands are fixed when planning: each runs its Step's own
HostCommand objects, the ones `--dry-run` prints (specops/deploy/deploy_steps.py defines the steps).

Why a separate part of the deploy: these handlers never build a command line. What they add is only what the
plan cannot know: a file's content (the env file's secrets, the unit's text, the guard's script), a manifest
update's changes (the gates), and the compile cache's key (filled into the plan's cache commands' slot).
tests/test_layering.py keeps them free of argv builders.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from specops.commands.cache import CACHE_ROLE
from specops.deploy import engine_start
from specops.deploy.outcome import HostOutcome, Outcome
from specops.deploy.step_commands import MANIFEST
from specops.deploy.steps import HostSteps, Step, step_applies
from specops.errors import ExitCode
from specops.ops import cache as compile_cache
from specops.ops import guard, lock, unit
from specops.ops.planned import script_reply
from specops.ops.unit import enable_unit, install_boot_unit, install_env_file, install_release_env, install_unit

if TYPE_CHECKING:
    from specops.config.inventory import HostSpec
    from specops.config.profile import Profile
    from specops.deploy.plan import DeployOptions, HostPlan, HostState
    from specops.engine.gates import GateResult
    from specops.host.base import Host

GATE_FAILED = ExitCode.CHECKS_FAILED


class FixedSteps:
    """The handlers of env, unit, guard, disarm, switch, verified, failed, watch and started; mixed into the
    deploy of one host (specops/deploy/execute.py), whose state they read and set."""

    host: Host
    spec: HostSpec
    profile: Profile
    host_plan: HostPlan
    options: DeployOptions
    outcome: HostOutcome
    steps: HostSteps
    state: HostState
    gates: GateResult | None
    cache_key: str
    facts_record: dict[str, object]
    guarded: bool
    stop_asked: bool
    checks_ok: bool

    def _env(self, step: Step) -> None:
        install_env_file(self.host, step.commands, self.host_plan.env_text)

    def _started(self, step: Step) -> None:
        assert self.gates is not None
        engine_start.record_started(self.host, self.spec, step, self.steps.release, self.gates, self.outcome,
                                    Outcome.STARTED)  # fmt: skip
        self.outcome.cause = engine_start.started_note(self.state.engine)

    def _unit(self, step: Step) -> None:
        """Each part of the step runs its planned commands; the compile cache's, planned with a slot for its key,
        with the key the preflight found filled in."""
        text = self.host_plan.unit_text
        install_release_env(self.host, step.part(unit.RELEASE_ENV), self.host_plan.env_text)  # live: at the restart
        compile_cache.prepare(self.host, self.spec, self.cache_key, step.part(CACHE_ROLE))
        boot = install_boot_unit(self.host, self.spec, step.part(unit.BOOT), lock.lock_root(),
                                 lock.DEFAULT_STALE_AFTER_S)  # fmt: skip
        reloaded = False
        if step.part(unit.UNIT):  # planned when the unit's text changed
            reloaded = install_unit(self.host, self.spec, text, step.part(unit.UNIT)).reloaded
        enable_unit(self.host, step.part(unit.ENABLE), boot_written=boot, reloaded=reloaded)
        # the fingerprint rides on this manifest update (no extra round trip): `specops diagnose` compares it later
        (manifest,) = step.part(MANIFEST)
        script_reply(self.host, self.spec, manifest, {"unit": text, "env_file": self.spec.env_file,
                                                      "profile": self.profile.name, "compile_cache": self.cache_key,
                                                      "facts": self.facts_record, "preflight": None})  # fmt: skip

    def _arm(self, step: Step) -> None:
        # Disarmed by its own step, not in a `finally`: on Ctrl-C or an error the guard stays armed, and once
        # the lock is released it puts the last verified release back (the deploy can no longer prove the new one).
        # It puts back the plan's rollback target, the one the dry run names, never one it picks on the host.
        guard.arm(self.host, step.commands, self.steps.release, self.steps.rollback_to or "")
        self.guarded = True
        self.outcome.guard_to = self.steps.rollback_to

    def _disarm(self, step: Step) -> None:
        watch = self.steps.step("watch")
        if watch is not None and step_applies(watch.when, self.checks_ok, self.gates):
            return  # the watch's own command disarms first (its disarm here is planned "if needed": not needed)
        guard.disarm(self.host, step.commands)
        self._disarmed()

    def _disarmed(self) -> None:
        self.guarded = False
        self.outcome.guard_to = None

    def _watch(self, step: Step) -> None:
        # The guard hands over to its watch (one command: the disarm, then the watch), and this deploy returns
        # without waiting for it.
        (start,) = step.commands
        guard.start_watch(self.host, start)
        self._disarmed()
        watch = guard.watch_settings(self.spec, self.profile)  # planned only with a watch
        if watch is not None:
            self.outcome.watch_s = watch.window_s

    def _switch(self, step: Step) -> None:
        self.stop_asked = True  # a restart of what `current` names, from here on
        (switch,) = step.commands
        script_reply(self.host, self.spec, switch)
        self.outcome.release = self.steps.release

    def _verified(self, step: Step) -> None:
        assert self.gates is not None
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        # proven again: a release marked bad (reused with this exact tree) is a rollback target again
        changes = {"verified": True, "verified_at": now, "gates": self.gates.to_json(), "bad": None,
                   "startup_s": round(self.gates.readiness.seconds, 1)}  # fmt: skip
        manifest, prune = step.commands  # the manifest's update, then the prune (it keeps the rollback target)
        script_reply(self.host, self.spec, manifest, changes)
        self.outcome.outcome = Outcome.DEPLOYED
        script_reply(self.host, self.spec, prune)

    def _failed(self, step: Step) -> None:
        assert self.gates is not None
        (manifest,) = step.commands
        script_reply(self.host, self.spec, manifest, {"verified": False, "gates": self.gates.to_json()})
        self.outcome.cause, self.outcome.exit_code = self.gates.cause, GATE_FAILED
        self.outcome.outcome = Outcome.FAILED
        self.outcome.hint = (
            "left running for debugging (--no-rollback)"
            if self.options.no_rollback
            else "no verified release to roll back to on this host"
        )

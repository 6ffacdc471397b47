"""Planning a deploy: everything that can go wrong before any host is touched, then each host's steps.

Config, secrets, the build and its patches are resolved here, locally (`make_plan`). An error at this stage
(a bad patch, a missing secret, a broken profile rule) stops the deploy with nothing changed anywhere.

Then, per host, `plan_steps` decides from what the host said (its releases, its installed unit) and the
options what the deploy will do, step by step with the host commands (specops/deploy/steps.py). It is pure:
`specops deploy` executes its result (specops/deploy/execute.py), `--dry-run` prints it.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specops.build.server_flags import speculative_flags
from specops.build.stage import StagedBuild, stage_build
from specops.commands.config_change import ConfigChange, config_change
from specops.commands.release import Listing, ReleaseInfo, files_to_send, newest_complete, newest_verified
from specops.commands.systemd import flag_spellings, render_env_file, render_unit
from specops.commands.unit import sha256_text
from specops.config.builds import BuildChoice, choose_build
from specops.config.engine_spec import refuse_engine_ranks
from specops.config.inventory import HostSpec
from specops.config.loader import Config, Target
from specops.config.secrets import resolve_secrets
from specops.deploy import engine_commands as ecmds
from specops.deploy import step_commands as cmds
from specops.deploy.deploy_steps import deploy_steps
from specops.deploy.engine_start import EngineState, start_steps
from specops.deploy.steps import Action, Handler, HostSteps, PushPlan, Step
from specops.errors import SpecopsError
from specops.ops.lock import lock_root
from specops.ops.release import identical_release

if TYPE_CHECKING:
    from specops.deploy.engine_run import EngineRun


@dataclass(frozen=True)
class HostPlan:
    """One host's part of a deploy: its target (host + profile) and the files it will get."""

    target: Target
    unit_text: str
    env_text: str = field(repr=False)  # secrets revealed: written to the host, never printed (nor in a repr)
    flag_spellings: Mapping[str, str] = field(default_factory=dict)  # renamed flags, in the build's older names
    release_id: str | None = None  # a multi-node engine's: the same on every rank (engine_plan.py)

    @property
    def name(self) -> str:
        return self.target.host.name

    @property
    def unit_sha256(self) -> str:
        return sha256_text(self.unit_text)

    @property
    def env_shown(self) -> str:
        """The env file with its secrets as ***: what a release id may be derived from."""
        return render_env_file(self.target)


@dataclass(frozen=True)
class DeployPlan:
    staged: StagedBuild
    hosts: list[HostPlan]
    build: BuildChoice | None = None  # what was staged and where it came from (the command line or the config)


def plan_host(config: Config, name: str, profile: str | None, build_flags: Collection[str] | None = None) -> HostPlan:
    """Resolve the host/profile pair and render its unit and env file (secrets read now, not printed).

    `build_flags`: the `--speculative-*` flags the staged build declares; a flag SGLang renamed is rendered
    under the name that build knows (None: the build's parser source was not found, render today's names)."""
    return plan_target(config, config.resolve(name, profile), build_flags)


def plan_target(config: Config, target: Target, build_flags: Collection[str] | None = None) -> HostPlan:
    """plan_host for a resolved target (one rank of an engine carries its Rank: its unit gets --node-rank)."""
    name = target.host.name
    where = f"{config.display}: hosts.{name}.secrets"
    secrets = resolve_secrets(target.host.secrets, os.environ, config.secrets_path, where)
    revealed = {key: value.reveal() for key, value in secrets.items()}
    spellings = flag_spellings(build_flags) if build_flags is not None else {}
    return HostPlan(target=target, unit_text=render_unit(target, spellings),
                    env_text=render_env_file(target, revealed), flag_spellings=spellings)  # fmt: skip


def make_plan(
    config: Config,
    names: list[str],
    profile: str | None,
    build: Path | None,
    patches: list[Path] | None,
    workdir: Path,
) -> DeployPlan:
    """Every host resolved and the build staged once (patches applied) before any host is used (a connection the
    console script opened early from a remembered plan is only taken afterwards: specops/cli/early/deploy.py).

    `build`/`patches`: the command line's (None: not given), else what the config names (config/builds.py)."""
    specs = config.inventory.select(names)
    refuse_engine_ranks(config.inventory.engines, [spec.name for spec in specs], "deploy")
    for spec in specs:
        config.resolve(spec.name, profile)  # configuration mistakes first, before the build is staged
    staged, choice, build_flags = stage_for(config, specs, build, patches, workdir)
    hosts = [plan_host(config, spec.name, profile, build_flags) for spec in specs]
    return DeployPlan(staged=staged, hosts=hosts, build=choice)


def stage_for(config: Config, specs: list[HostSpec], build: Path | None, patches: list[Path] | None,
              workdir: Path) -> tuple[StagedBuild, BuildChoice, Collection[str] | None]:  # fmt: skip
    """The build these hosts get, staged once with its patches, and the speculative flags it declares."""
    choice = choose_build(config, specs, build, patches)
    try:
        staged = stage_build(choice.build, list(choice.patches), workdir)
    except SpecopsError as exc:  # its message says --build/--patch: say which config key named the path
        exc.hint = "; ".join(part for part in (exc.hint, choice.origin()) if part)
        raise
    return staged, choice, speculative_flags(staged.root)


def unit_diff(old: str | None, new: str, unit_name: str) -> list[str]:
    """A unified diff of the installed unit against the new one (empty when identical)."""
    before = (old or "").splitlines(keepends=True)
    return list(
        difflib.unified_diff(
            before, new.splitlines(keepends=True), fromfile=f"installed {unit_name}", tofile=f"new {unit_name}"
        )
    )


@dataclass(frozen=True)
class DeployOptions:
    force: bool = False
    no_rollback: bool = False
    lock_wait_s: float = 0.0
    command: str | None = None
    cancel: threading.Event | None = None  # set on Ctrl-C when hosts run in worker threads
    reap: bool = False  # stop orphans of the old engine that still hold the unit's GPUs
    engine: EngineRun | None = None  # a multi-node engine's meeting points (its ranks deploy side by side)
    skip_checks: tuple[str, ...] = ()  # `--skip-check` ids: waived on every host, besides each host's `waive`


@dataclass(frozen=True)
class HostState:
    """What the host said before anything changed (read under the lock by a deploy, without it by a dry run)."""

    listing: Listing
    unit_text: str | None  # the installed unit (None: none)
    new_release_id: str  # the id a push would create, chosen locally
    base_files: dict[str, Any] | None = None  # the push's delta base's files map (None: everything is sent)
    engine: EngineState = field(
        default_factory=EngineState
    )  # whether the unit runs: a stopped engine is never "unchanged"
    env_text: str | None = None  # the env file the current release runs with (secrets: never printed)
    read: Step | None = None  # the read step whose commands read the host (read_step): the plan holds it


@dataclass(frozen=True)
class Choice:
    """Which release a deploy puts in front of users, from what, and what it can roll back to."""

    action: Action
    reason: str
    release_id: str
    reuse: ReleaseInfo | None  # a complete release with the staged tree, used instead of a push
    base: ReleaseInfo | None  # the push's delta base
    rollback_to: ReleaseInfo | None
    unit_changed: bool
    config: ConfigChange = field(default_factory=ConfigChange)  # vs the current release (blame.py reads it)


def choose(staged: StagedBuild, host_plan: HostPlan, listing: Listing, unit_text: str | None, new_id: str,
           engine: EngineState | None = None, env_text: str | None = None) -> Choice:  # fmt: skip
    """Unchanged when the staged tree serves, verified, with this configuration (unit and env file: `env_text`
    is the current release's), and its engine is active; the same but with the engine not active: start it
    through the gates (nothing pushed, no rollback: it was verified, so a failure is the host's). Otherwise a
    release with the same tree is reused, except the rollback target itself: its recorded configuration is what
    a rollback restores, so a new configuration gets a new release (every file hard-linked from it), unless that
    release already is this build with this configuration (its id is `new_id`). The rollback target is
    `current` when verified, else the newest verified release."""
    same = _same_release(staged, listing.releases, new_id)
    spec = host_plan.target.host
    config = config_change(unit_text, host_plan.unit_text, env_text, host_plan.env_text, spec.secrets)
    unit_changed = config.unit
    current = next((r for r in listing.releases if r.id == listing.current), None)
    engine_same = host_plan.release_id is None or same is None or same.id == host_plan.release_id  # every rank's
    if same is not None and current is same and same.verified and not config.changed and engine_same:
        if engine is not None and not engine.running:
            reason = (f"engine {engine.verdict}: start it through the gates ({host_plan.target.host.unit_name} is "
                      f"{engine.describe()}; release {same.id} with this exact content is current and verified, "
                      "with this unit)")  # fmt: skip
            return Choice(Action.START, reason, same.id, same, None, None, unit_changed)
        reason = f"release {same.id} with this exact content is already serving (verified), with this unit"
        return Choice(Action.UNCHANGED, reason, same.id, same, None, None, unit_changed)
    rollback_to = current if current is not None and current.rollback_target else None
    reuse = same if same is not None and (same is not rollback_to or same.id == new_id) else None
    rollback_to = rollback_to if rollback_to is not reuse else None  # the same build and unit, back in place
    rollback_to = rollback_to or newest_verified(listing.releases, exclude=reuse.id if reuse else None)
    base = None if reuse is not None else same or newest_complete(listing.releases)
    if reuse is not None:
        reason = f"release {reuse.id} on the host has this exact content: no push"
    elif same is not None:
        reason = (
            f"{config.summary() or 'the configuration changed'}: a new release, every file hard-linked from {same.id}"
        )
    else:
        reason = "a new release"
    release_id = reuse.id if reuse is not None else new_id
    return Choice(Action.DEPLOY, reason, release_id, reuse, base, rollback_to, unit_changed, config)


def _same_release(staged: StagedBuild, releases: list[ReleaseInfo], new_id: str) -> ReleaseInfo | None:
    """The release with this build's content: the one named `new_id` first (this build with this very unit: its
    recorded unit is the new one, so even the rollback target may be reused), else any with the same tree."""
    exact = next((r for r in releases if r.id == new_id and r.complete and r.error is None
                  and r.tree_hash == staged.tree_hash), None)  # fmt: skip
    return exact or identical_release(staged, releases)


def lock_steps(spec: HostSpec, token: str, lock_wait_s: float) -> tuple[Step, Step]:
    """The lock and unlock steps: made before the lock is taken, since the deploy starts its conversations and
    takes, keeps and releases the lock with these very commands; its plan then holds the same objects."""
    lock = Step("lock", f"take the lock ({lock_root()}), heartbeat while deploying",
                (*cmds.conversation_commands(spec), *cmds.push_session_commands(spec),
                 *cmds.lock_commands(token, lock_wait_s)), phase="lock")  # fmt: skip
    return lock, Step("unlock", "release the lock", tuple(cmds.unlock_commands(token)))


def read_step(spec: HostSpec, current: str | None) -> Step:
    """What a deploy reads under its lock once the listing names `current` (deploy/host_state.py runs these)."""
    return Step(
        "read",
        "read the host's releases (on the push conversation), installed unit and current env file",
        (*cmds.read_commands(spec, current), *ecmds.engine_read_commands(spec)),
    )


def plan_steps(
    staged: StagedBuild,
    host_plan: HostPlan,
    state: HostState,
    options: DeployOptions,
    token: str,
    locking: tuple[Step, Step] | None = None,
) -> HostSteps:
    """The steps of this host's deploy, both branches (gates pass / fail) included; `token` is the lock's;
    `locking`: the lock and unlock steps the deploy took its lock with (lock_steps)."""
    spec = host_plan.target.host
    choice = choose(
        staged, host_plan, state.listing, state.unit_text, state.new_release_id, state.engine, state.env_text
    )
    lock, unlock = locking or lock_steps(spec, token, options.lock_wait_s)
    read = state.read or read_step(spec, state.listing.current)
    serving = cmds.serving_step(spec)
    record = Step("record", f"append the outcome to {spec.service_dir}/audit.jsonl and the local audit log",
                  tuple(cmds.record_commands(spec)))  # fmt: skip
    push = _push_plan(staged, choice, state)
    guard = choice.rollback_to is not None and not options.no_rollback
    middle = _middle_steps(host_plan, choice, push, guard, options, state.engine)
    diff = "".join(unit_diff(state.unit_text, host_plan.unit_text, spec.unit_name))
    return HostSteps(
        host=spec.name, profile=host_plan.target.profile.name, action=choice.action, reason=choice.reason,
        current=state.listing.current, release=choice.release_id,
        rollback_to=choice.rollback_to.id if choice.rollback_to else None, guard=guard, push=push,
        unit_changed=choice.unit_changed, unit_diff=diff,
        steps=(lock, read, *middle, unlock, serving, record), config=choice.config,
    )  # fmt: skip


def _middle_steps(host_plan: HostPlan, choice: Choice, push: PushPlan | None, guard: bool, options: DeployOptions,
                  engine: EngineState) -> list[Step]:  # fmt: skip
    """Between reading the host and releasing the lock: nothing (unchanged), the start of the stopped engine
    (its env file written as a deploy writes it), or the whole deploy."""
    if choice.action is Action.UNCHANGED:
        return []
    if choice.action is Action.START:
        spec = host_plan.target.host
        env = Step("env", f"write {spec.env_file} (0600); {spec.unit_name} unchanged",
                   tuple(cmds.env_commands(spec, len(host_plan.env_text.splitlines()))), phase="unit",
                   handler=Handler.ENV)  # fmt: skip
        return [env, *start_steps(spec, host_plan.target.profile, choice.release_id, engine, options.reap)]
    return deploy_steps(host_plan, choice, push, guard, options, engine.enabled)


def _push_plan(staged: StagedBuild, choice: Choice, state: HostState) -> PushPlan | None:
    if choice.action is not Action.DEPLOY or choice.reuse is not None:
        return None
    base_files = state.base_files if choice.base is not None else None
    sent = len(files_to_send(staged.files, base_files)) - 1  # the manifest is always sent, not counted
    return PushPlan(sent, len(staged.files), choice.base.id if choice.base and base_files is not None else None)
